"""The server's cycle-collector schedule: what is alive between ticks is frozen out of collections,
and cyclic garbage frozen meanwhile is still freed, by the full collection that runs once the
frozen objects have grown by the set factor."""

from __future__ import annotations

import gc
import weakref

from apportion.service import collector as collector_module
from apportion.service.collector import Collector


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _garbage_cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_settle_freezes_then_collects_once_the_frozen_objects_grew(monkeypatch):
    monkeypatch.setattr(collector_module, "FLOOR", 1)
    c = Collector()
    try:
        c.start()
        base = c.alive_after_full
        assert base == c.frozen == gc.get_freeze_count() > 0
        gone = _garbage_cycle()
        c.settle()  # not grown enough: the cycle is frozen with everything else, not collected
        assert gone() is not None
        assert c.full_collections == 0
        kept = [[k] for k in range(base + 10)]  # more than doubles what is alive
        c.settle()
        assert c.full_collections == 1
        assert gone() is None
        assert c.alive_after_full == c.frozen == gc.get_freeze_count() > 2 * base
        assert len(kept) == base + 10
    finally:
        c.stop()
    assert gc.get_freeze_count() == 0


def test_a_collector_not_started_changes_nothing():
    c = Collector()
    c.settle()
    c.stop()
    assert gc.get_freeze_count() == 0
