"""The tree picker built over the queues enqueue's drain can reach, not over every queue with a job.

No upstream file. enqueue hands the picker every queue with a job, because a queue without pending
jobs still takes part in the scans of an open tie (docs/semantics.md E6), and the picker's set-up
files all of them: about 7 % of the full simulation benchmark, in every session that admits. In a tree
of two levels (leaves under root, and parents of leaves under root) the drain (`TreePicker.drain_order`)
reads only:

* root's active children and their keys, to find its open groups: a run of tied children, one of
  them a parent, with more than one leaf with work below;
* every leaf of such a group, with or without work (the group's scan passes over them all);
* the leaves with work under every other child: a parent of leaves outside an open group orders its
  leaves by (key, creation, name) and yields those with work, so a leaf without work there is passed
  over whether it is filed or not.

So `DrainPicker.drain_order` works out root's open groups from every queue's attributes in one pass and
builds the tree picker over those leaves only, in the callers' list order. Trees of more levels,
queues that are not leaves, mixed priorities and NaN shares get the picker over every queue, as before.
A picker that is popped or pushed builds the whole tree picker on first use. Property-tested against
the picker over every queue in tests/plugins/capacity/test_capacity_picker.py.

When root has no open group (most sessions of a forecast), the drain needs no tree picker at all
(`DrainPicker.direct`): every unit `TreePicker._units` yields is a leaf with work, worked on until
done, and the units come in the order of (the key of root's child above the leaf, and for a leaf
under a parent, the leaf's key), ties broken by the leaves' (creation, name). At root a tie of
several children with work is one of leaves only (a tie with a parent in it and more than one leaf
with work below is open); under a parent every child is a leaf, so no tie there is open. So the
steps are those leaves sorted by that key, each repeated while it has work, and the set-up is one
sort of the leaves with work instead of the tree picker's sorted lists over the reachable leaves.
Under `APPORTION_CHECK_STATE=1` the order is compared with the units of the tree picker over every
queue given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from operator import itemgetter

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import ROOT_QUEUE
from apportion.errors import InternalError
from apportion.plugins.capacity.base import CapacityBase
from apportion.plugins.capacity.picker import Key, TreePicker, queue_key
from apportion.plugins.capacity.repush import RepushPicker
from apportion.state import check

#: where a leaf with work stands in a drain without open groups: the key of root's child above it,
#: then, for a leaf under a parent, its own key (the parent's (creation, name) stands before it: it
#: is never compared, no other child of root tied with the parent has work), and its (creation, name)
_Place = tuple[Key, tuple[str, str], Key, tuple[str, str]]
_NO_KEY: Key = (0.0, 0)
_PLACE = itemgetter(0)


class DrainPicker:
    """QueuePicker for capacity's tree mode that builds its TreePicker over only what a drain reads."""

    #: tests switch this off to compare with the picker over every queue
    subset = True
    #: a drain without open groups at root is worked out without a tree picker (module docstring);
    #: tests switch this off to compare with the tree picker over the reachable leaves
    direct = True
    #: the tree picker built: RepushPicker (allocate's pop and push back of one queue without sorted-list
    #: edits); tests set TreePicker, the reference
    tree: type[TreePicker] = RepushPicker
    #: `drain_order` gives a queue's steps one after the other, until it has no work, before any other
    #: queue's: a leaf unit is worked on until done, and a group's scan returns the leaf it chose again
    #: while it has work (`TreePicker._steps`, `FlatGroup.steps`). enqueue may then refuse a whole queue
    #: at its first step (actions/enqueue.py, `_Votes.cast`)
    drains_whole_queues = True

    def __init__(self, plugin: CapacityBase, queues: list[QueueInfo],
                 compare: Callable[[QueueInfo, QueueInfo], int]) -> None:
        self.plugin = plugin
        self.queues = queues
        self.compare = compare
        self._full: TreePicker | None = None

    def _picker(self) -> TreePicker:
        if self._full is None:
            self._full = self.tree(self.plugin, self.queues, self.compare)
        return self._full

    def pop(self) -> QueueInfo:
        """TreePicker.pop over every queue given."""
        return self._picker().pop()

    def push(self, queue: QueueInfo) -> None:
        """TreePicker.push."""
        self._picker().push(queue)

    def __len__(self) -> int:
        return len(self._full) if self._full is not None else len(self.queues)

    def drain_order(self, has_work: Callable[[str], bool]) -> Iterator[QueueInfo] | None:
        """TreePicker.drain_order, over the leaves it can reach when the tree allows, and without a
        tree picker when root has no open group (module docstring)."""
        if self._full is None and self.subset:
            survey = self._survey(has_work)
            if survey is not None:
                reach, places = survey
                if places is not None and self.direct:
                    return self._direct(places, has_work)
                self._full = self.tree(self.plugin, reach, self.compare)
        return self._picker().drain_order(has_work)

    def _direct(self, places: list[tuple[_Place, QueueInfo]], has_work: Callable[[str], bool]) -> Iterator[QueueInfo]:
        """The steps of a drain without open groups: the leaves with work in order of their places,
        each while it has work."""
        places.sort(key=_PLACE)
        order = [queue for _, queue in places]
        if check.enabled():
            self._check_direct([queue.name for queue in order], has_work)
        return self._direct_steps(order, has_work)

    def _direct_steps(self, order: list[QueueInfo], has_work: Callable[[str], bool]) -> Iterator[QueueInfo]:
        log = self.plugin.share_log
        start = len(log)
        for queue in order:
            name = queue.name
            while has_work(name):
                if len(log) != start:
                    raise InternalError("a queue's share moved while enqueue worked through a drained queue order")
                yield queue

    def _check_direct(self, order: list[str], has_work: Callable[[str], bool]) -> None:
        """The order against the units of the tree picker over every queue given."""
        full = TreePicker(self.plugin, self.queues, self.compare)
        pending = [name for name in full.order if has_work(name)]
        below: Counter[str] = Counter(pending)
        for name in pending:
            below.update(full.attrs[name].ancestors)
        units = list(full._units(ROOT_QUEUE, below))
        if units != order:
            raise check.StateCheckError(f"{check.ENV}: capacity's drain without a tree picker ({order}) differs "
                                        f"from the tree picker's units ({units})")

    def _reach(self, has_work: Callable[[str], bool]) -> list[QueueInfo] | None:
        """The queues, in list order, whose leaves a drain reads; None when the tree is not one this
        reasoning covers (more than two levels, a non-leaf queued, mixed priorities, a NaN share)."""
        survey = self._survey(has_work)
        return None if survey is None else survey[0]

    def _survey(self, has_work: Callable[[str], bool]
                ) -> tuple[list[QueueInfo], list[tuple[_Place, QueueInfo]] | None] | None:
        """`_reach`'s queues and, when root has no open group, each leaf with work's place (`_Place`)."""
        attrs = self.plugin.attrs
        get = attrs.get
        priority = None
        # per child of root: its leaves with a job
        under: dict[str, list[str]] = {}
        # the leaves with work, each with the child of root above it (itself when under root)
        working: dict[str, tuple[QueueInfo, str]] = {}
        for queue in self.queues:
            name = queue.name
            a = get(name)
            if a is None or a.children or not a.ancestors:
                return None
            if priority is None:
                priority = queue.priority
            elif queue.priority != priority:
                return None
            ancestors = a.ancestors
            if len(ancestors) == 1:
                top = name
            elif len(ancestors) == 2:
                top = ancestors[1]
            else:
                return None
            if a.share != a.share:
                return None
            got = under.get(top)
            if got is None:
                got = under[top] = []
            got.append(name)
            if has_work(name):
                working[name] = queue, top
        keyed = []
        for top in under:
            a = attrs[top]
            if a.share != a.share:
                return None
            keyed.append((queue_key(a), top))
        keyed.sort()
        # root's open groups: every leaf of them is read; elsewhere only the leaves with work
        whole: set[str] = set()
        i = 0
        while i < len(keyed):
            j = i
            while j < len(keyed) and keyed[j][0] == keyed[i][0]:
                j += 1
            run = [top for _, top in keyed[i:j]]
            i = j
            if len(run) < 2 or not any(attrs[top].children for top in run):
                continue
            if sum(sum(1 for leaf in under[top] if leaf in working) for top in run) > 1:
                whole.update(run)
        reach = set(working)
        for top in whole:
            reach.update(under[top])
        queues = [q for q in self.queues if q.name in reach]
        if whole:
            return queues, None
        top_key = {top: key for key, top in keyed}
        places: list[tuple[_Place, QueueInfo]] = []
        for name, (queue, top) in working.items():
            cn = (queue.creation, name)
            if top == name:
                places.append(((top_key[top], cn, _NO_KEY, cn), queue))
            else:
                places.append(((top_key[top], ("", top), queue_key(attrs[name]), cn), queue))
        return queues, places
