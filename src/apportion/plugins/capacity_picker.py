"""The capacity plugin's queue picker for tree mode: the scan's answer without scanning.

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
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TYPE_CHECKING

from sortedcontainers import SortedList

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import ROOT_QUEUE
from apportion.errors import InternalError
from apportion.framework.queue_picker import pop_best_index

if TYPE_CHECKING:
    from apportion.plugins.capacity import CapacityPlugin, QueueAttr

Key = tuple[float, int]


class TreePicker:
    """QueuePicker for capacity's hierarchical queue order (see the module docstring)."""

    def __init__(self, plugin: CapacityPlugin, queues: Iterable[QueueInfo],
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
        self._push_all(queues)

    def __len__(self) -> int:
        return len(self.order)

    # ------------------------------------------------------------------ the picker
    def pop(self) -> QueueInfo:
        self._sync()
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
            home = {leaf: child for child in group
                    for leaf in ([c[1] for c in self.below[child]] if child in self.kids else [child])}
            queue = self.order[self._scan_group(sorted(home, key=self.seq.__getitem__), home)]
            self._deactivate(queue)
            return queue
        queue = items[pop_best_index(items, self.compare)]
        self._deactivate(queue)
        return queue

    def drain_order(self, pending: Collection[str]) -> Iterator[QueueInfo] | None:
        """The pending leaves in the order enqueue's pops would reach them, when no tie can make it
        depend on the other queues (QueuePicker.drain_order).

        Two leaves compare by the keys of the queues where their paths part and, only where those tie,
        by the leaves' (creation, name). Call a tie *open* when, at some node, children with equal keys
        include one that is not a leaf: under such a group the order may be cyclic. Outside open ties
        every comparison agrees with the lexicographic order L of (keys along the path, creation,
        name), and the leaves under each open tie form an interval of L. Suppose no open tie holds
        more than one pending leaf, and let p be the L-first pending leaf. A scan only moves its best
        to a queue that beats it: down L, or within an interval. Once at p or below it (which p
        reaches as soon as the scan meets it, unless already there) the best never climbs past p's
        interval, which holds no other pending leaf: the scan returns p or a queue without pending
        work. Those are dropped; p is worked on and pushed back with the same key (nothing moves during
        enqueue), and is again the scan's first pending answer until it is done. Hence: the pending
        leaves in L order, each until done. Otherwise None: the pops decide.
        """
        self._sync()
        if self.unordered or self.non_leaves or len(self.priorities) > 1:
            return None
        if any(name not in self.cn for name in pending):
            return None
        below: Counter[str] = Counter(pending)  # pending leaves at or below each queue
        for name in pending:
            below.update(self.attrs[name].ancestors)
        for node, kids in self.kids.items():
            if below[node] < 2:
                continue  # no group under it can hold two
            run: list[str] = []
            last: Key | None = None
            for key, name in kids:
                if key != last:
                    if self._open_tie_holds_two(run, below):
                        return None
                    run, last = [], key
                run.append(name)
            if self._open_tie_holds_two(run, below):
                return None
        key_of, cn = self.key_of, self.cn

        def place(name: str) -> tuple[tuple[Key, ...], tuple[str, str]]:
            return (*[key_of[a] for a in self.attrs[name].ancestors[1:]], key_of[name]), cn[name]

        return self._drained(sorted(pending, key=place))

    def _open_tie_holds_two(self, run: list[str], below: Counter[str]) -> bool:
        return (len(run) > 1 and any(n in self.kids for n in run)
                and sum(below[n] for n in run) > 1)

    def _drained(self, names: list[str]) -> Iterator[QueueInfo]:
        log = self.plugin.share_log
        start = len(log)
        for name in names:
            if len(log) != start:
                raise InternalError("a queue's share moved while enqueue worked through a drained queue order")
            yield self.order[name]

    def _scan_group(self, leaves: list[str], home: dict[str, str]) -> str:
        """pop_best_index over the tied group's leaves (in list order), without the session's compare
        where its answer is known: two leaves under different tied children have their deepest common
        ancestor at the tie, where the two children compare equal, so the session decides by the
        leaves' (creation, name). Leaves under the same child compare as the plugin orders them: by
        the keys of the first queues where their paths part (what hierarchical_queue_order compares,
        current after _sync), then by (creation, name), as the session does."""
        cn, key_of, attrs = self.cn, self.key_of, self.attrs
        best = leaves[0]
        for leaf in leaves[1:]:
            if home[leaf] != home[best]:
                if cn[leaf] < cn[best]:
                    best = leaf
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
            if kx < kb or (kx == kb and cn[leaf] < cn[best]):
                best = leaf
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
        group = self._smallest(node)
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
        attr = self._enter(queue)
        if attr is None:
            return
        cn = self.cn[queue.name]
        for parent in attr.ancestors:
            self.below.setdefault(parent, SortedList()).add(cn)
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
        for queue in queues:
            attr = self._enter(queue)
            if attr is None:
                continue
            cn = self.cn[queue.name]
            for parent in attr.ancestors:
                below.setdefault(parent, []).append(cn)
            child = queue.name
            for parent in reversed(attr.ancestors):
                kids.setdefault(parent, []).append((self._file(child), child))
                if parent in self.key_of:
                    break
                child = parent
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
        a = self.attrs[name]
        # a NaN share compares with nothing; it is filed as +inf and turns the fast path off
        share = a.share if a.share == a.share else float("inf")
        return share, (1 if a.deserved.is_empty() else 0)

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
