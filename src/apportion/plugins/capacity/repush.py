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
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def pop(self) -> QueueInfo:
        """TreePicker.pop, its sorted-list removals held back (module docstring)."""
        self._settle()
        self._popping = True
        try:
            return super().pop()
        finally:
            self._popping = False

    def push(self, queue: QueueInfo) -> None:
        """TreePicker.push; the held-back removals cancelled when they are this queue's and its keys
        along the path have not moved."""
        held = self._held
        if held is not None and held[0] == queue.name and self._refile(queue, held):
            return
        self._settle()
        super().push(queue)

    def drain_order(self, has_work: Callable[[str], bool]) -> Iterator[QueueInfo] | None:
        """TreePicker.drain_order over the lists as TreePicker holds them."""
        self._settle()
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

    def _settle(self) -> None:
        """Apply the held-back removals, as TreePicker._deactivate makes them."""
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
        _, cn, levels = held
        fresh = [self._key(child) for _, child, _ in levels]
        for (_, _, old), new in zip(levels, fresh, strict=True):
            if new != old or math.copysign(1.0, new[0]) != math.copysign(1.0, old[0]):
                return False
        if (queue.creation, queue.name) != cn:
            return False
        # TreePicker.push files upwards until a parent already filed: the levels the pop emptied, up to
        # one still filed (or root, which is never filed)
        top = levels[-1][0]
        if top not in self.key_of and top != self.attrs[queue.name].ancestors[0]:
            return False
        self._held = None
        self._enter(queue)
        for parent, child, _ in levels:
            self._touch(parent)
            self._file(child)
        return True
