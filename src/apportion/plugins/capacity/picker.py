"""The capacity plugin's queue picker for tree mode: the scan's answer without scanning.

No upstream file: Volcano pops a heap (`util.PriorityQueue`); apportion's reference is the scan of
`framework/queue_picker.py` (semantics guide §4.4, docs/semantics.md E6), and this picker returns what
that scan returns under capacity's hierarchical order (`hierarchicalQueueOrderFn` of
`plugins/capacity/capacity.go`), property-tested against it in tests/plugins/capacity/test_capacity_picker.py.

In tree mode two leaves compare by the queues just below their deepest common ancestor: lower share
first, at equal share the one with a deserved first; if those tie too, hierarchical_queue_order
returns 0 and the session compares the *leaves'* creation time and name. That fallback can make the
order intransitive, so no sort reproduces the scan in general. The scan does, however, return any
queue that beats every other (the order is antisymmetric), and such a winner can be found by
descending the tree, while every queue to visit is a leaf and all have the same priority:

* at a node, take its active children with the smallest (share, has-deserved) key;
* one such child: its own winner is the winner here (it beats the other children's leaves strictly);
* several tied children: leaves under two different tied children compare by (creation, name), so the
  winner is the tied children's winner with the smallest (creation, name), provided it is smaller than
  that of *every* active leaf under the other tied children (each node keeps those sorted). Ties among
  leaves always resolve this way.

When the tied group has no winner, the picker scans, in list order, only the leaves under that group
(the rest are beaten by all of them, so the scan cannot end elsewhere). When a share is NaN, a
priority differs or a non-leaf is queued, it scans the whole list.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING

from sortedcontainers import SortedList

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import ROOT_QUEUE
from apportion.errors import InternalError
from apportion.framework.queue_picker import pop_best_index
from apportion.plugins.capacity.drain_group import FlatGroup

if TYPE_CHECKING:
    from apportion.plugins.capacity.attrs import QueueAttr
    from apportion.plugins.capacity.base import CapacityBase

Key = tuple[float, int]
#: what a pop that scanned a tie leaves for the next one: (the node of the tie, its tied children, their
#: active leaves in list order, each leaf's tied child, `pushes` and the list's length after the pop)
Tie = tuple[str, set[str], list[str], dict[str, str], int, int]


def queue_key(a: QueueAttr) -> Key:
    """A queue's place among its siblings before the session's compare: (share, deserved empty)."""
    # a NaN share compares with nothing; it is filed as +inf and turns the fast path off
    share = a.share if a.share == a.share else float("inf")
    return share, (1 if a.deserved.is_empty() else 0)


class TreePicker:
    """QueuePicker for capacity's hierarchical queue order (see the module docstring)."""

    #: pop keeps a scanned tie's leaves for the next pop (tests switch it off to compare with the reference)
    reuse_ties = True
    #: drain_order works through an open group of leaves and parents of leaves on the group's own
    #: lists (drain_group.py); tests switch it off to compare with the loop below
    flat_groups = True

    def __init__(self, plugin: CapacityBase, queues: Iterable[QueueInfo],
                 compare: Callable[[QueueInfo, QueueInfo], int]) -> None:
        self.plugin = plugin
        self.attrs = plugin.attrs
        self.compare = compare
        #: the reference scan's list, kept in its order (a pushed queue goes to the end)
        self.order: dict[str, QueueInfo] = {}
        self.kids: dict[str, SortedList] = {}
        self.key_of: dict[str, Key] = {}
        #: per internal node, (creation, name) of every active leaf below it
        self.below: dict[str, SortedList] = {}
        self.unordered = 0  # active queues with a NaN share (not comparable)
        self.nan_filed: set[str] = set()
        self.non_leaves = 0  # queues to visit that are not leaves of the tree
        self.cn: dict[str, tuple[str, str]] = {}  # (creation, name) of the active leaves
        #: position in the scan's list: a pushed queue goes to the end
        self.seq: dict[str, int] = {}
        self.pushes = 0
        #: per node, its winner (or None), valid until a child list at or below it changes
        self.winners: dict[str, str | None] = {}
        self.priorities: Counter[int] = Counter()
        self.log_pos = len(plugin.share_log)
        self._tie: Tie | None = None
        self._push_all(queues)

    def __len__(self) -> int:
        return len(self.order)

    # ------------------------------------------------------------------ the picker
    def pop(self) -> QueueInfo:
        """Remove and return the queue the reference scan would pick."""
        self._sync()
        tie, self._tie = self._tie, None
        if self.unordered or self.non_leaves or len(self.priorities) > 1:
            items = list(self.order.values())
        else:
            name, node, group = self._descend()
            if name is not None:
                queue = self.order[name]
                self._deactivate(queue)
                return queue
            # Every leaf outside the tied group is beaten by every leaf inside it, so the scan's running
            # best, once inside the group, never leaves it: scanning the group's leaves (in list order) is
            # scanning the list.
            listed, home = self._tie_leaves(node, group, tie)
            found = self._scan_group(listed, home)
            queue = self.order[found]
            self._deactivate(queue)
            listed.remove(found)
            self._tie = (node, group, listed, home, self.pushes, len(self.order))
            return queue
        queue = items[pop_best_index(items, self.compare)]
        self._deactivate(queue)
        return queue

    def _homes(self, group: set[str]) -> dict[str, str]:
        """Each active leaf under the tied `group`, with the member of the group it lies under."""
        return {leaf: child for child in group
                for leaf in ([c[1] for c in self.below[child]] if child in self.kids else [child])}

    def _tie_leaves(self, node: str, group: set[str], tie: Tie | None) -> tuple[list[str], dict[str, str]]:
        """The tied group's active leaves in list order, and the member each lies under: `_homes` sorted
        by position (the reference, property-tested against this), or, when the last pop scanned a tie
        at the same node whose group held this one and the list has only had queues pushed since
        (allocate pushes back the queue it popped), that pop's leaves kept: those still under the
        group, then the pushed ones under it (a push goes to the end of the list)."""
        if tie is not None and self.reuse_ties:
            at, held, listed, home, pushes, size = tie
            pushed = self.pushes - pushes
            if at == node and group <= held and len(self.order) == size + pushed:
                if group != held:
                    listed = [leaf for leaf in listed if home[leaf] in group]
                if pushed:
                    attrs = self.attrs
                    depth = len(attrs[node].ancestors) + 1  # where `node`'s child sits on a leaf's path
                    for leaf in list(islice(reversed(self.order), pushed))[::-1]:
                        path = attrs[leaf].ancestors
                        member = path[depth] if len(path) > depth else leaf
                        if member in group:
                            home[leaf] = member
                            listed.append(leaf)
                return listed, home
        home = self._homes(group)
        return sorted(home, key=self.seq.__getitem__), home

    def drain_order(self, has_work: Callable[[str], bool]) -> Iterator[QueueInfo] | None:
        """enqueue's pops without popping the queues that have no work (QueuePicker.drain_order).

        Two leaves compare by the keys of the queues where their paths part and, only where those tie,
        by the leaves' (creation, name). Call a group of equal keys among a node's children *open* when
        one of them is not a leaf: under it the order may be cyclic. Elsewhere every comparison agrees
        with the lexicographic order L of (keys along the path, creation, name), and the leaves under
        an open group form an interval of L. A scan only moves its best to a queue that beats it: down
        L, or within an interval. Take the L-first unit with work: a leaf outside open groups with
        pending jobs, or an open group whose leaves have pending jobs. While queues below it remain the
        scan returns one of them (each without work now: dropped); then, since the unit beats
        everything above it, the scan's answer is the scan over the unit alone: the leaf itself, or
        the group's leaves in list order. So: units in L order; a leaf worked on until done (it is
        pushed back with the same key, as nothing moves during enqueue); a group scanned on its own,
        with pushes going to the end, until none of its leaves has work. Keys only move with allocate
        and deallocate events, which enqueue does not fire; the steps check that they did not.
        """
        self._sync()
        if self.unordered or self.non_leaves or len(self.priorities) > 1:
            return None
        pending = [name for name in self.order if has_work(name)]
        if any(name not in self.cn for name in pending):
            return None
        below: Counter[str] = Counter(pending)  # leaves with work at or below each queue
        for name in pending:
            below.update(self.attrs[name].ancestors)
        # listed before the first step: working on a group edits the child lists _units walks
        return self._steps(list(self._units(ROOT_QUEUE, below)), has_work)

    def _units(self, node: str, below: Counter[str]) -> Iterator[str | list[str]]:
        """The units with work below `node` in L order: a leaf's name, or an open group's members."""
        kids = self.kids.get(node, ())
        i = 0
        while i < len(kids):
            key = kids[i][0]
            run = []
            while i < len(kids) and kids[i][0] == key:
                run.append(kids[i][1])
                i += 1
            with_work = [m for m in run if below[m]]
            if not with_work:
                continue
            if len(run) > 1 and any(m in self.kids for m in run) and sum(below[m] for m in with_work) > 1:
                yield run  # an open group with more than one leaf with work: scanned on its own
                continue
            # not open, or one leaf with work under an open group (a cycle there cannot reach past it);
            # several with work here are leaves of a tie, ordered by (creation, name)
            if len(with_work) > 1:
                with_work.sort(key=self.cn.__getitem__)
            for m in with_work:
                if m in self.kids:
                    yield from self._units(m, below)
                else:
                    yield m

    def _steps(self, units: list[str | list[str]], has_work: Callable[[str], bool]) -> Iterator[QueueInfo]:
        log = self.plugin.share_log
        start = len(log)
        for unit in units:
            if isinstance(unit, str):
                while has_work(unit):
                    self._check(log, start)
                    yield self.order[unit]
                continue
            # What the pops do once the scan is down to the group: a winner by descent, else the scan
            # over the group's leaves in list order; a leaf worked on is pushed back to the end. The
            # comparison is total and antisymmetric (leaf names break every tie) and no key moves here,
            # so a leaf the scan returns, pushed back, is returned again while the group's set of
            # queues is unchanged: the last leaves it beats are the ones it beat (if x does not beat
            # it, it beats x). So it is worked on until its work runs out, then popped once more and
            # dropped; the next scan resumes where it stood (the leaves before it scan as before).
            flat = FlatGroup.of(self, unit) if self.flat_groups else None
            if flat is not None:
                yield from flat.steps(has_work, lambda: self._check(log, start))
                continue
            home = {leaf: m for m in unit for leaf in self._leaves_of(m)}
            listed = sorted(home, key=self.seq.__getitem__)  # the group's leaves in list order
            waiting = sum(1 for leaf in listed if has_work(leaf))
            bests: list[str] = []  # the scan's best after each leaf of `listed`, as far as scanned
            while waiting:
                best = self._group_winner([m for m in unit if m in self.key_of])
                if best is None:
                    best = self._scan_group(listed, home, bests)
                at = listed.index(best)
                del listed[at]
                del bests[at:]
                queue = self.order[best]
                if has_work(best):
                    while has_work(best):
                        self._check(log, start)
                        yield queue
                    waiting -= 1
                self._deactivate(queue)
                del home[best]

    def _leaves_of(self, name: str) -> list[str]:
        """The active leaves at or below an active queue."""
        return [c[1] for c in self.below[name]] if name in self.kids else [name]

    @staticmethod
    def _check(log: list[str], start: int) -> None:
        if len(log) != start:
            raise InternalError("a queue's share moved while enqueue worked through a drained queue order")

    def _scan_group(self, leaves: list[str], home: dict[str, str], bests: list[str] | None = None) -> str:
        """pop_best_index over the tied group's leaves (in list order), without the session's compare
        where its answer is known: two leaves under different tied children have their deepest common
        ancestor at the tie, where the two children compare equal, so the session decides by the
        leaves' (creation, name). Leaves under the same child compare as the plugin orders them: by
        the keys of the first queues where their paths part (what hierarchical_queue_order compares,
        current after _sync), then by (creation, name), as the session does.

        `bests`, when given, holds the scan's best after each of the first len(bests) leaves (from an
        earlier scan of the same leading leaves); the scan goes on from there and extends it."""
        cn, key_of, attrs = self.cn, self.key_of, self.attrs
        if bests is None:
            bests = []
        if not bests:
            bests.append(leaves[0])
        best = bests[-1]
        best_home, best_cn = home[best], cn[best]
        append = bests.append
        for leaf in leaves[len(bests):]:
            leaf_home = home[leaf]
            if leaf_home != best_home:
                leaf_cn = cn[leaf]
                if leaf_cn < best_cn:
                    best, best_home, best_cn = leaf, leaf_home, leaf_cn
                append(best)
                continue
            ax, ab = attrs[leaf].ancestors, attrs[best].ancestors
            if ax == ab:
                kx, kb = key_of[leaf], key_of[best]
            else:
                i, n = 0, min(len(ax), len(ab))
                while i < n and ax[i] == ab[i]:
                    i += 1
                kx = key_of[ax[i] if i < len(ax) else leaf]
                kb = key_of[ab[i] if i < len(ab) else best]
            if kx < kb or (kx == kb and cn[leaf] < best_cn):
                best, best_cn = leaf, cn[leaf]
            append(best)
        return best

    def _descend(self) -> tuple[str | None, str, set[str]]:
        """Down the smallest child while it is alone; at the first tie, the tied group's winner if any.
        Returns (winner, the node of the tie, the tied children)."""
        node = ROOT_QUEUE
        while True:
            group = self._smallest(node)
            if len(group) > 1:
                return self._winner(node), node, set(group)
            only = group[0]
            if only not in self.kids:
                return only, node, set(group)
            node = only

    def _smallest(self, node: str) -> list[str]:
        """The active children of `node` that share the smallest key."""
        kids = self.kids[node]
        first = kids[0][0]
        group = []
        for key, name in kids:
            if key != first:
                break
            group.append(name)
        return group

    def _winner(self, node: str) -> str | None:
        """The active leaf below `node` that beats every other one there, if the tree shows one."""
        if node in self.winners:
            return self.winners[node]
        w = self._find_winner(node)
        self.winners[node] = w
        return w

    def _find_winner(self, node: str) -> str | None:
        return self._group_winner(self._smallest(node))

    def _group_winner(self, group: list[str]) -> str | None:
        """The active leaf under the tied `group` that beats every other one there, if the tree shows one."""
        if len(group) == 1:
            only = group[0]
            return self._winner(only) if only in self.kids else only
        winners = []
        for child in group:
            w = self._winner(child) if child in self.kids else child
            if w is None:
                return None
            winners.append((self.cn[w], w, child))
        cn, w, home = min(winners)
        for child in group:
            if child != home and not cn < (self.below[child][0] if child in self.kids else self.cn[child]):
                return None
        return w

    def push(self, queue: QueueInfo) -> None:
        """Put a queue back (at the end of the scan's list)."""
        attr = self._enter(queue)
        if attr is None:
            return
        cn = self.cn[queue.name]
        below = self.below
        for parent in attr.ancestors:
            got = below.get(parent)
            if got is None:  # not setdefault: that would build a SortedList at every push
                got = below[parent] = SortedList()
            got.add(cn)
        child = queue.name
        for parent in reversed(attr.ancestors):
            self._insert(parent, child)
            if parent in self.key_of:
                break
            child = parent

    def _push_all(self, queues: Iterable[QueueInfo]) -> None:
        """`push` of each queue in turn into the empty picker, with each sorted list built once at
        the end (the same contents: a SortedList holds its items in order however they arrived)."""
        below: dict[str, list[tuple[str, str]]] = {}
        kids: dict[str, list[tuple[Key, str]]] = {}
        # `_enter` and `_file` inlined (every queue with a job, every session): the same entries in
        # the same order
        order, seq, cn_of, key_of, get_attr = self.order, self.seq, self.cn, self.key_of, self.attrs.get
        priorities: dict[int, int] = {}
        pushes = self.pushes
        non_leaves = 0
        for queue in queues:
            name = queue.name
            order[name] = queue
            seq[name] = pushes
            pushes += 1
            attr = get_attr(name)
            if attr is None or attr.children or not attr.ancestors:
                non_leaves += 1
                continue
            priorities[queue.priority] = priorities.get(queue.priority, 0) + 1
            cn = cn_of[name] = (queue.creation, name)
            ancestors = attr.ancestors
            for parent in ancestors:
                got = below.get(parent)
                if got is None:
                    below[parent] = [cn]
                else:
                    got.append(cn)
            child = name
            for parent in reversed(ancestors):
                kids.setdefault(parent, []).append((self._file(child), child))
                if parent in key_of:
                    break
                child = parent
        self.pushes = pushes
        self.non_leaves += non_leaves
        self.priorities.update(priorities)
        for parent, leaves in below.items():
            self.below[parent] = SortedList(leaves)
        for parent, keyed in kids.items():
            self.kids[parent] = SortedList(keyed)

    # ------------------------------------------------------------------ bookkeeping
    def _enter(self, queue: QueueInfo) -> QueueAttr | None:
        """A push's place in the scan's list; for a leaf, its priority and (creation, name) too.
        Returns the leaf's attributes, or None for a queue that is not a leaf of the tree."""
        self.order[queue.name] = queue
        self.seq[queue.name] = self.pushes
        self.pushes += 1
        attr = self.attrs.get(queue.name)
        if attr is None or attr.children or not attr.ancestors:
            self.non_leaves += 1
            return None
        self.priorities[queue.priority] += 1
        self.cn[queue.name] = (queue.creation, queue.name)
        return attr

    def _file(self, name: str) -> Key:
        """The key an active queue is filed under in its parent's child list (recorded in key_of)."""
        key = self.key_of[name] = self._key(name)
        if self.attrs[name].share != self.attrs[name].share:
            self.nan_filed.add(name)
            self.unordered += 1
        return key

    def _deactivate(self, queue: QueueInfo) -> None:
        del self.order[queue.name]
        del self.seq[queue.name]
        attr = self.attrs.get(queue.name)
        if attr is None or attr.children or not attr.ancestors:
            self.non_leaves -= 1
            return
        self.priorities[queue.priority] -= 1
        if not self.priorities[queue.priority]:
            del self.priorities[queue.priority]
        cn = self.cn.pop(queue.name)
        for parent in attr.ancestors:
            below = self.below[parent]
            below.remove(cn)
            if not below:
                del self.below[parent]
        child = queue.name
        for parent in reversed(attr.ancestors):
            self._remove(parent, child)
            if parent in self.kids:
                break
            child = parent

    def _key(self, name: str) -> Key:
        return queue_key(self.attrs[name])

    def _touch(self, parent: str) -> None:
        """A child list changed at `parent`: the winners of it and of its ancestors may differ."""
        self.winners.pop(parent, None)
        for a in self.attrs[parent].ancestors:
            self.winners.pop(a, None)

    def _insert(self, parent: str, name: str) -> None:
        self._touch(parent)
        key = self._file(name)
        kids = self.kids.get(parent)
        if kids is None:
            kids = self.kids[parent] = SortedList()
        kids.add((key, name))

    def _remove(self, parent: str, name: str) -> None:
        self._touch(parent)
        key = self.key_of.pop(name)
        if name in self.nan_filed:
            self.nan_filed.discard(name)
            self.unordered -= 1
        kids = self.kids[parent]
        kids.remove((key, name))
        if not kids:
            del self.kids[parent]

    def _sync(self) -> None:
        """Re-key the active queues whose share moved since the last pop."""
        log = self.plugin.share_log
        if self.log_pos == len(log):
            return
        for name in set(log[self.log_pos:]):
            old = self.key_of.get(name)
            if old is None or self._key(name) == old:
                continue
            parent = self.attrs[name].ancestors[-1]
            self._remove(parent, name)
            self._insert(parent, name)
        self.log_pos = len(log)
