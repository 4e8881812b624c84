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
from collections.abc import Callable, Iterable, Iterator
from itertools import compress, groupby
from math import isnan
from operator import attrgetter, is_
from typing import cast

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import ROOT_QUEUE
from apportion.errors import InternalError
from apportion.plugins.capacity.attrs import QueueAttr
from apportion.plugins.capacity.base import CapacityBase
from apportion.plugins.capacity.picker import TreePicker, queue_key
from apportion.plugins.capacity.repush import RepushPicker
from apportion.plugins.capacity.tree import TREE_MEMO
from apportion.state import check

#: a unit of the drain: a leaf with work, or an open group's members (root's tied children)
_Unit = QueueInfo | list[str]
#: the memo's entry: the last survey's shape (`_Shape`)
SHAPE_MEMO = "capacity.drain-shape"
_share = attrgetter("share")

#: tests switch this off: the survey lists every unit at once, each parent's leaves with work put in
#: order then, not when the drain reaches the parent (`DrainPicker._expand`, K55)
lazy_leaves = True
#: tests switch this off: the survey reads the shares and the work by a loop over the queues, not by
#: C maps (`DrainPicker._survey_of`, K59)
lean_survey = True
#: tests switch this off: an open group's steps come from one tree picker over every reachable leaf, not
#: from a picker over the group's own leaves (`DrainPicker._direct_steps`, K55)
unit_pickers = True


class _Shape:
    """What `DrainPicker._survey` reads of the tree and the queues given besides the shares and the work:
    per queue, the child of root it is under (`top`); per such child, its queues in list order and their
    names, and whether it has children. `covered` False: the tree is not one the survey covers (a queue
    without attributes or not a leaf, more than two levels, mixed priorities), whatever the shares.

    It reads the attributes' names, children and ancestors, which the tree kept in the memo fixes while
    the session's tree is that object (tree.py, TREE_MEMO; K37), and the queues' names and priorities,
    which a QueueInfo object keeps (a memo's snapshots replace a QueueInfo that changes). So it is kept in
    the memo with that tree object and the queues given, and taken again while a session's tree is that
    object and its drain is given the same QueueInfo objects in the same order (K43)."""

    __slots__ = ("covered", "has_children", "names", "queues", "tree", "under", "under_names")

    def __init__(self, tree: object, queues: list[QueueInfo], attrs: dict[str, QueueAttr]) -> None:
        self.tree = tree
        self.queues = queues
        self.names: list[str] = [q.name for q in queues]
        self.under: dict[str, list[QueueInfo]] = {}
        self.under_names: dict[str, frozenset[str]] = {}
        self.has_children: dict[str, bool] = {}
        self.covered = False
        alist = list(map(attrs.get, self.names))
        tops: list[str] = []
        for name, a in zip(self.names, alist):
            if a is None or a.children or not a.ancestors:
                return
            ancestors = a.ancestors
            if len(ancestors) == 1:
                tops.append(name)
            elif len(ancestors) == 2:
                tops.append(ancestors[1])
            else:
                return
        if len({q.priority for q in queues}) > 1:
            return
        at = tops.__getitem__
        for top, positions in groupby(sorted(range(len(tops)), key=at), key=at):
            mine = self.under[top] = list(map(queues.__getitem__, positions))
            self.under_names[top] = frozenset(q.name for q in mine)
            self.has_children[top] = bool(attrs[top].children)
        self.covered = True

    def holds(self, tree: object, queues: list[QueueInfo]) -> bool:
        """Whether this shape is the one of these queues over that tree (the same objects, in order)."""
        mine = self.queues
        return tree is self.tree and len(mine) == len(queues) and all(map(is_, mine, queues))


class DrainPicker:
    """QueuePicker for capacity's tree mode that builds its TreePicker over only what a drain reads."""

    #: tests switch this off to compare with the picker over every queue
    subset = True
    #: the drain's units are listed without a tree picker, which is built only for an open group
    #: (module docstring); tests switch this off to compare with the tree picker over the reachable leaves
    direct = True
    #: tests switch this off: the survey works the queues' places in the tree out afresh every session
    #: rather than taking them from the memo (`_Shape`, K43)
    carry_shape = True
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
        #: the shape the survey was taken from (None: the reference survey, or none yet)
        self._shape: _Shape | None = None

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
                        units = list(units)
                        self._check_units(units, has_work)
                    return self._direct_steps(reach, units, has_work)
                self._full = self.tree(self.plugin, reach, self.compare)
        return self._picker().drain_order(has_work)

    def _direct_steps(self, reach: list[QueueInfo], units: Iterable[_Unit],
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
            shape = self._shape
            if unit_pickers and shape is not None and self.tree.flat_groups:
                # The group's steps (`FlatGroup.steps`) read, of the picker, only the group: its members'
                # keys, their leaves (every one reachable: an open run's leaves all are), the leaves'
                # keys, (creation, name) and list positions (by their order alone), which a picker over
                # the group's leaves alone holds alike (K55).
                mine = set().union(*map(shape.under_names.__getitem__, unit))
                group = self.tree(self.plugin, [q for q in reach if q.name in mine], self.compare)
                yield from group._steps([unit], has_work)
                continue
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

    def _survey(self, has_work: Callable[[str], bool]) -> tuple[list[QueueInfo], Iterable[_Unit]] | None:
        """`_reach`'s queues and the drain's units in order (module docstring), from the queues' shape
        (`_Shape`), kept in the memo while the tree and the queues given are the same objects (the units
        as the drain reaches them, `_expand`)."""
        memo = self.plugin.ssn.memo
        if not self.carry_shape or memo is None:
            return self._survey_reference(has_work)
        tree = memo.get(TREE_MEMO)
        shape = memo.get(SHAPE_MEMO)
        if tree is None:
            return self._survey_reference(has_work)
        if not isinstance(shape, _Shape) or not shape.holds(tree, self.queues):
            shape = memo[SHAPE_MEMO] = _Shape(tree, list(self.queues), self.plugin.attrs)
        self._shape = shape
        out = self._survey_of(shape, has_work)
        if check.enabled():
            if out is not None:
                out = out[0], list(out[1])
            ref = self._survey_reference(has_work)
            if (out is None) != (ref is None) or (out is not None and ref is not None and (
                    not _same_queues(out[0], ref[0]) or _unit_names(out[1]) != _unit_names(ref[1]))):
                raise check.StateCheckError(f"{check.ENV}: capacity's drain survey from the queues' kept shape "
                                            "differs from the one worked out afresh")
        return out

    def _survey_of(self, shape: _Shape, has_work: Callable[[str], bool]
                   ) -> tuple[list[QueueInfo], Iterable[_Unit]] | None:
        """`_survey_reference`'s answer from the queues' shape: the shares (a NaN one turns the survey
        off) and the work are read afresh, each queue's place in the tree is the shape's. With
        `lazy_leaves`, the units come as the drain reaches them (`_expand`)."""
        if not shape.covered:
            return None
        attrs = self.plugin.attrs
        names = shape.names
        working: set[str]
        if lean_survey:
            # the same reads by C loops: a NaN share among them turns the survey off (the work is read
            # for nothing then: `has_work` has no side effect)
            if any(map(isnan, map(_share, map(attrs.__getitem__, names)))):
                return None
            working = set(filter(has_work, names))
        else:
            working = set()
            for name in names:
                share = attrs[name].share
                if share != share:
                    return None
                if has_work(name):
                    working.add(name)
        under = shape.under
        under_names = shape.under_names
        keyed = []
        for top in under:
            a = attrs[top]
            if a.share != a.share:
                return None
            keyed.append((queue_key(a), top))
        keyed.sort()
        reach = set(working)
        units: list[_Unit | str] = []
        deferred: list[int] = []  # where `units` holds a parent's name (`lazy_leaves`)
        i = 0
        while i < len(keyed):
            j = i
            while j < len(keyed) and keyed[j][0] == keyed[i][0]:
                j += 1
            run = [top for _, top in keyed[i:j]]
            i = j
            with_work = [top for top in run if not working.isdisjoint(under_names[top])]
            if (len(run) > 1 and any(shape.has_children[top] for top in run)
                    and sum(len(working & under_names[top]) for top in with_work) > 1):
                units.append(run)
                for top in run:
                    reach.update(under_names[top])
                continue
            if len(with_work) > 1:  # leaves only (else the run is open): by (creation, name)
                with_work.sort(key=lambda top: (under[top][0].creation, top))
            for top in with_work:
                if not shape.has_children[top]:
                    units.append(under[top][0])
                elif lazy_leaves:
                    deferred.append(len(units))
                    units.append(top)  # a parent's leaves with work, put in order when reached
                else:
                    units += self._leaves_in_order(under[top], working)
        assert len(names) == len(self.queues)  # compress would stop at the shorter
        reached = list(compress(self.queues, map(reach.__contains__, names)))
        if not deferred:
            return reached, cast(list[_Unit], units)  # no parent's name in it
        return reached, self._expand(units, deferred, under, working, len(self.plugin.share_log))

    def _leaves_in_order(self, leaves: list[QueueInfo], working: set[str]) -> list[QueueInfo]:
        """A parent's leaves with work, ordered as the picker orders a parent's leaves (key, creation, name)."""
        attrs = self.plugin.attrs
        mine = [q for q in leaves if q.name in working]
        mine.sort(key=lambda q: (queue_key(attrs[q.name]), q.creation, q.name))
        return mine

    def _expand(self, units: list[_Unit | str], deferred: list[int], under: dict[str, list[QueueInfo]],
                working: set[str], start: int) -> Iterator[_Unit]:
        """The units in order, each parent's leaves put in order only when the drain reaches it (enqueue
        stops once no job left can be admitted, most often within the first few units). The order reads
        the leaves' shares, which nothing the drain does moves (an allocation's event would: checked,
        as `_direct_steps` checks), and the work as the survey found it, so it is the order the survey
        would have listed (K55). `start`: the share log's length when the survey read the shares."""
        log = self.plugin.share_log
        at = 0
        for i in deferred:
            yield from cast(list[_Unit], units[at:i])  # no parent's name before `i`
            if len(log) != start:
                raise InternalError("a queue's share moved while enqueue worked through a drained queue order")
            yield from self._leaves_in_order(under[cast(str, units[i])], working)
            at = i + 1
        yield from cast(list[_Unit], units[at:])

    def _survey_reference(self, has_work: Callable[[str], bool]) -> tuple[list[QueueInfo], list[_Unit]] | None:
        """`_survey` by one pass over the queues given (the reference)."""
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


def _same_queues(a: list[QueueInfo], b: list[QueueInfo]) -> bool:
    return len(a) == len(b) and all(map(is_, a, b))


def _unit_names(units: Iterable[_Unit]) -> list[str | list[str]]:
    return [unit.name if isinstance(unit, QueueInfo) else unit for unit in units]
