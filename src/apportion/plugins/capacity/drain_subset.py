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
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from apportion.cluster.model import QueueInfo
from apportion.plugins.capacity.base import CapacityBase
from apportion.plugins.capacity.picker import TreePicker, queue_key
from apportion.plugins.capacity.repush import RepushPicker


class DrainPicker:
    """QueuePicker for capacity's tree mode that builds its TreePicker over only what a drain reads."""

    #: tests switch this off to compare with the picker over every queue
    subset = True
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
        """TreePicker.drain_order, over the leaves it can reach when the tree allows (module docstring)."""
        if self._full is None and self.subset:
            reach = self._reach(has_work)
            if reach is not None:
                self._full = self.tree(self.plugin, reach, self.compare)
        return self._picker().drain_order(has_work)

    def _reach(self, has_work: Callable[[str], bool]) -> list[QueueInfo] | None:
        """The queues, in list order, whose leaves a drain reads; None when the tree is not one this
        reasoning covers (more than two levels, a non-leaf queued, mixed priorities, a NaN share)."""
        attrs = self.plugin.attrs
        get = attrs.get
        priority = None
        # per child of root: (its leaves with a job, whether one has work)
        under: dict[str, tuple[list[str], list[bool]]] = {}
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
                got = under[top] = ([], [False])
            got[0].append(name)
            if not got[1][0] and has_work(name):
                got[1][0] = True
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
            if sum(sum(1 for leaf in under[top][0] if has_work(leaf)) for top in run) > 1:
                whole.update(run)
        reach = set()
        for top, (leaves, work) in under.items():
            if top in whole:
                reach.update(leaves)
            elif work[0]:
                reach.update(leaf for leaf in leaves if has_work(leaf))
        return [q for q in self.queues if q.name in reach]
