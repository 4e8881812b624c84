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

The drain's units themselves (`TreePicker._units`) need no tree picker either (`DrainPicker.direct`):
root's children in (key, name) order, grouped into runs of equal keys; an open run is one unit (the
group), scanned by the tree picker; of any other run, the children with work, ordered by (creation,
name) when there are several (they are leaves then: a run with a parent in it and more than one leaf
with work below is open); a leaf is a unit, a parent gives its leaves with work in (key, creation,
name) order (under a parent every child is a leaf, so no tie there is open). A leaf unit is worked on
until done. So the units are listed from the one pass over the queues, and the tree picker over the
reachable leaves is built only when the drain reaches an open group, which it seldom does: enqueue
stops once no job left can be admitted. Under `APPORTION_CHECK_STATE=1` the units are compared with
those of the tree picker over every queue given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import ROOT_QUEUE
from apportion.errors import InternalError
from apportion.plugins.capacity.base import CapacityBase
from apportion.plugins.capacity.picker import TreePicker, queue_key
from apportion.plugins.capacity.repush import RepushPicker
from apportion.state import check

#: a unit of the drain: a leaf with work, or an open group's members (root's tied children)
_Unit = QueueInfo | list[str]


class DrainPicker:
    """QueuePicker for capacity's tree mode that builds its TreePicker over only what a drain reads."""

    #: tests switch this off to compare with the picker over every queue
    subset = True
    #: the drain's units are listed without a tree picker, which is built only for an open group
    #: (module docstring); tests switch this off to compare with the tree picker over the reachable leaves
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
        """TreePicker.drain_order, over the leaves it can reach when the tree allows, with a tree picker
        only for an open group (module docstring)."""
        if self._full is None and self.subset:
            survey = self._survey(has_work)
            if survey is not None:
                reach, units = survey
                if self.direct:
                    if check.enabled():
                        self._check_units(units, has_work)
                    return self._direct_steps(reach, units, has_work)
                self._full = self.tree(self.plugin, reach, self.compare)
        return self._picker().drain_order(has_work)

    def _direct_steps(self, reach: list[QueueInfo], units: list[_Unit],
                      has_work: Callable[[str], bool]) -> Iterator[QueueInfo]:
        """The steps of the units: a leaf while it has work; an open group by the tree picker over the
        reachable leaves (`TreePicker._steps`), built when the drain first reaches one."""
        log = self.plugin.share_log
        start = len(log)
        for unit in units:
            if isinstance(unit, QueueInfo):
                name = unit.name
                while has_work(name):
                    if len(log) != start:
                        raise InternalError("a queue's share moved while enqueue worked through a drained "
                                            "queue order")
                    yield unit
                continue
            if len(log) != start:
                raise InternalError("a queue's share moved while enqueue worked through a drained queue order")
            if self._full is None:
                self._full = self.tree(self.plugin, reach, self.compare)
            yield from self._full._steps([unit], has_work)

    def _check_units(self, units: list[_Unit], has_work: Callable[[str], bool]) -> None:
        """The units against those of the tree picker over every queue given."""
        full = TreePicker(self.plugin, self.queues, self.compare)
        pending = [name for name in full.order if has_work(name)]
        below: Counter[str] = Counter(pending)
        for name in pending:
            below.update(full.attrs[name].ancestors)
        want = list(full._units(ROOT_QUEUE, below))
        got = [unit.name if isinstance(unit, QueueInfo) else unit for unit in units]
        if got != want:
            raise check.StateCheckError(f"{check.ENV}: capacity's drain units listed without a tree picker "
                                        f"({got}) differ from the tree picker's ({want})")

    def _reach(self, has_work: Callable[[str], bool]) -> list[QueueInfo] | None:
        """The queues, in list order, whose leaves a drain reads; None when the tree is not one this
        reasoning covers (more than two levels, a non-leaf queued, mixed priorities, a NaN share)."""
        survey = self._survey(has_work)
        return None if survey is None else survey[0]

    def _survey(self, has_work: Callable[[str], bool]) -> tuple[list[QueueInfo], list[_Unit]] | None:
        """`_reach`'s queues and the drain's units in order (module docstring)."""
        attrs = self.plugin.attrs
        get = attrs.get
        priority = None
        # per child of root: its leaves with a job
        under: dict[str, list[QueueInfo]] = {}
        working: set[str] = set()  # the leaves with work
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
            got.append(queue)
            if has_work(name):
                working.add(name)
        keyed = []
        for top in under:
            a = attrs[top]
            if a.share != a.share:
                return None
            keyed.append((queue_key(a), top))
        keyed.sort()
        # root's runs of equal keys, in order: an open one is a unit and every leaf of it is read;
        # elsewhere only the leaves with work, each a unit
        reach = set(working)
        units: list[_Unit] = []
        i = 0
        while i < len(keyed):
            j = i
            while j < len(keyed) and keyed[j][0] == keyed[i][0]:
                j += 1
            run = [top for _, top in keyed[i:j]]
            i = j
            with_work = [top for top in run if any(q.name in working for q in under[top])]
            if (len(run) > 1 and any(attrs[top].children for top in run)
                    and sum(sum(1 for q in under[top] if q.name in working) for top in with_work) > 1):
                units.append(run)
                for top in run:
                    reach.update(q.name for q in under[top])
                continue
            if len(with_work) > 1:  # leaves only (else the run is open): by (creation, name)
                with_work.sort(key=lambda top: (under[top][0].creation, top))
            for top in with_work:
                if not attrs[top].children:
                    units.append(under[top][0])
                    continue
                leaves = [q for q in under[top] if q.name in working]
                leaves.sort(key=lambda q: (queue_key(attrs[q.name]), q.creation, q.name))
                units += leaves
        return [q for q in self.queues if q.name in reach], units
