"""The tree picker for allocate's loop, which pushes back the queue it just popped.

No upstream file. allocate pops a queue, works on one of its jobs and pushes the queue back; when the
job's step is discarded (a gang that cannot be placed, in most sessions of a forecast) nothing moved
and the queue goes back under the keys it left with. `TreePicker` takes the leaf out of its parents'
sorted lists at the pop (`_deactivate`) and files it again at the push: two sorted-list edits per
level, undone by the next. `RepushPicker` holds a pop's sorted-list removals back until the next
call: a push of the same queue whose keys along the path are unchanged leaves the lists as they are
(the removals and the insertions would have given the same contents); any other call applies them
first, so every reader sees the lists `TreePicker` would hold. Everything else a pop and a push do
(the scan's list and positions, priorities, keys, the winners' invalidation) is done as in
`TreePicker`. Property-tested against it in tests/plugins/capacity/test_repush_picker.py.

A forecast's run session passes over most jobs it pops (semantics F4), so a queue is popped, pushed back
unchanged and popped again, once per job of it. When the pop found the queue by descending the tree
(not by a scan), that queue beats every other one; pushed back under the same keys with nothing
moved since, it still does, and the next pop returns it again. Such a push is deferred (`_again`): the
next pop, if still nothing moved, returns the queue as the pop before left everything (the held
removals stay held, only the push's count of pushes is kept); any other call first makes the push as
`_refile` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from apportion.cluster.model import QueueInfo
from apportion.plugins.capacity.picker import Key, TreePicker

#: a pop's held-back removals: the leaf, its (creation, name), and per level of its path that the
#: removal empties and the first it does not, (parent, child, the child's key as filed)
Held = tuple[str, tuple[str, str], list[tuple[str, str, Key]]]


class RepushPicker(TreePicker):
    """TreePicker whose pop holds back its sorted-list removals for a push of the same queue."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self._held: Held | None = None
        self._popping = False
        #: the queue the last pop found by descending the tree (it beat every other), while nothing
        #: else has happened since
        self._won: str | None = None
        #: a deferred push of `_won` (module docstring)
        self._again: QueueInfo | None = None
        #: per level of the deferred push, whether `_file` would have found a NaN share at the push
        self._again_nan: list[bool] = []
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self.order) + (self._again is not None)

    def pop(self) -> QueueInfo:
        """TreePicker.pop, its sorted-list removals held back (module docstring)."""
        again = self._again
        if again is not None and len(self.plugin.share_log) == self.log_pos:
            # pushed back unchanged with nothing moved: it beats every other queue still, and the
            # state after popping it is the one its last pop left (module docstring)
            self._again = None
            return again
        self._settle()
        self._sync()
        # TreePicker.pop scans when the tree cannot order the queues; otherwise it descends, and only a
        # tie without a winner leaves `_tie` set
        scans = bool(self.unordered or self.non_leaves or len(self.priorities) > 1)
        self._popping = True
        try:
            queue = super().pop()
        finally:
            self._popping = False
        held = self._held
        self._won = queue.name if (not scans and self._tie is None and held is not None
                                   and held[0] == queue.name) else None
        return queue

    def push(self, queue: QueueInfo) -> None:
        """TreePicker.push; the held-back removals cancelled when they are this queue's and its keys
        along the path have not moved (and the push deferred when the last pop descended to it)."""
        if self._again is not None:
            self._restore()
        held = self._held
        if held is not None and held[0] == queue.name:
            if (self._won == queue.name and len(self.plugin.share_log) == self.log_pos
                    and self._refiles(queue, held)):
                self._again = queue
                # what `_file` would record now: a share that moves before the push is made is re-keyed
                # from the log at the next pop, as after TreePicker's push
                attrs = self.attrs
                self._again_nan = [attrs[child].share != attrs[child].share for _, child, _ in held[2]]
                self.pushes += 1  # the place in the scan's list it takes (`_enter`), as TreePicker counts
                return
            self._won = None
            if self._refile(queue, held):
                return
        self._won = None
        self._settle()
        super().push(queue)

    def drain_order(self, has_work: Callable[[str], bool]) -> Iterator[QueueInfo] | None:
        """TreePicker.drain_order over the lists as TreePicker holds them."""
        self._settle()
        self._won = None
        return super().drain_order(has_work)

    def _deactivate(self, queue: QueueInfo) -> None:
        if not self._popping:
            super()._deactivate(queue)
            return
        name = queue.name
        attr = self.attrs.get(name)
        if attr is None or attr.children or not attr.ancestors:
            super()._deactivate(queue)
            return
        del self.order[name]
        del self.seq[name]
        self.priorities[queue.priority] -= 1
        if not self.priorities[queue.priority]:
            del self.priorities[queue.priority]
        cn = self.cn.pop(name)
        # the levels TreePicker._deactivate walks: up while the removal empties the parent's list
        levels: list[tuple[str, str, Key]] = []
        child = name
        for parent in reversed(attr.ancestors):
            self._touch(parent)
            key = self.key_of.pop(child)
            if child in self.nan_filed:
                self.nan_filed.discard(child)
                self.unordered -= 1
            levels.append((parent, child, key))
            if len(self.kids[parent]) > 1:
                break
            child = parent
        self._held = (name, cn, levels)

    def _restore(self) -> None:
        """Make the deferred push (`_again`) as `_refile` makes it."""
        queue, self._again = self._again, None
        held = self._held
        assert queue is not None and held is not None
        self._won = None
        self._held = None
        self.pushes -= 1  # counted at the push: `_enter` counts it again
        self._enter(queue)
        # `_refiled` with what `_file` found at the push: the keys held (the push checked them) and the
        # NaN shares then
        for (parent, child, key), nan in zip(held[2], self._again_nan, strict=True):
            self._touch(parent)
            self.key_of[child] = key
            if nan:
                self.nan_filed.add(child)
                self.unordered += 1

    def _settle(self) -> None:
        """Apply the held-back removals, as TreePicker._deactivate makes them (after a deferred push)."""
        if self._again is not None:
            self._restore()
        held = self._held
        if held is None:
            return
        self._held = None
        name, cn, levels = held
        below = self.below
        for parent in self.attrs[name].ancestors:
            got = below[parent]
            got.remove(cn)
            if not got:
                del below[parent]
        kids = self.kids
        for parent, child, key in levels:
            got = kids[parent]
            got.remove((key, child))
            if not got:
                del kids[parent]

    def _refile(self, queue: QueueInfo, held: Held) -> bool:
        """The push of the held queue without sorted-list edits, when every level would be filed under
        the key it was removed with (bit for bit); False, with nothing changed, otherwise."""
        if not self._refiles(queue, held):
            return False
        self._refiled(queue, held)
        return True

    def _refiles(self, queue: QueueInfo, held: Held) -> bool:
        """Whether `_refile` would push the held queue without sorted-list edits (it changes nothing)."""
        _, cn, levels = held
        for _, child, old in levels:
            new = self._key(child)
            if new != old or math.copysign(1.0, new[0]) != math.copysign(1.0, old[0]):
                return False
        if (queue.creation, queue.name) != cn:
            return False
        # TreePicker.push files upwards until a parent already filed: the levels the pop emptied, up to
        # one still filed (or root, which is never filed)
        top = levels[-1][0]
        return top in self.key_of or top == self.attrs[queue.name].ancestors[0]

    def _refiled(self, queue: QueueInfo, held: Held) -> None:
        """`_refile`'s push, once `_refiles` said it may."""
        self._held = None
        self._enter(queue)
        for parent, child, _ in held[2]:
            self._touch(parent)
            self._file(child)
