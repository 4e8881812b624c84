"""allocate's tree picker that holds a pop's sorted-list removals back for the push of the same queue
(plugins/capacity/repush.py) pops what TreePicker pops and holds, once the held removals are applied,
the lists TreePicker holds: in lock-step through whole cycles over random trees, and in the cycles'
decisions and explanations."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from test_capacity_picker import CONF, trees

from apportion.cluster.model import QueueInfo
from apportion.framework.session import Session
from apportion.plugins.capacity.drain_subset import DrainPicker
from apportion.plugins.capacity.picker import TreePicker
from apportion.plugins.capacity.repush import RepushPicker

from k8s import cycle


def _lists(p: TreePicker, held: Any = None) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """The picker's child and leaf lists, with `held` removals applied (RepushPicker._settle on copies)."""
    kids = {k: list(v) for k, v in p.kids.items()}
    below = {k: list(v) for k, v in p.below.items()}
    if held is not None:
        name, cn, levels = held
        for parent in p.attrs[name].ancestors:
            below[parent].remove(cn)
            if not below[parent]:
                del below[parent]
        for parent, child, key in levels:
            kids[parent].remove((key, child))
            if not kids[parent]:
                del kids[parent]
    return kids, below


def _same(fast: RepushPicker, ref: TreePicker) -> None:
    assert list(fast.order) == list(ref.order)
    assert fast.seq == ref.seq and fast.pushes == ref.pushes
    assert fast.key_of == ref.key_of and list(fast.key_of) == list(ref.key_of)
    assert fast.cn == ref.cn and fast.priorities == ref.priorities
    assert fast.nan_filed == ref.nan_filed and fast.unordered == ref.unordered
    assert fast.non_leaves == ref.non_leaves
    assert _lists(fast, fast._held) == _lists(ref)
    assert fast._tie == ref._tie


class LockStep(RepushPicker):
    """A RepushPicker with a TreePicker over the same queues, driven alike and compared after each call."""

    held_pushes = 0  # pushes that cancelled held removals, over every instance (the test checks some did)

    def __init__(self, plugin: Any, queues: Any, compare: Any) -> None:
        queues = list(queues)
        super().__init__(plugin, queues, compare)
        self.ref = TreePicker(plugin, queues, compare)
        _same(self, self.ref)

    def pop(self) -> QueueInfo:
        got = super().pop()
        assert got is self.ref.pop()
        _same(self, self.ref)
        return got

    def push(self, queue: QueueInfo) -> None:
        super().push(queue)
        self.ref.push(queue)
        _same(self, self.ref)

    def _refile(self, queue: QueueInfo, held: Any) -> bool:
        done = super()._refile(queue, held)
        LockStep.held_pushes += done
        return done

    def drain_order(self, has_work: Any) -> Any:
        got = super().drain_order(has_work)
        if got is None:
            assert self.ref.drain_order(has_work) is None
            return None
        return self._lockstep_drain(got, self.ref.drain_order(has_work))

    def _lockstep_drain(self, got: Any, ref: Any) -> Any:
        assert ref is not None
        for q in got:
            assert q is next(ref)
            yield q
        assert next(ref, None) is None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=trees())
def test_repush_picker_pops_and_holds_as_the_tree_picker(objs: list[dict], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Session, "fast_queue_pickers", True)
    monkeypatch.setattr(DrainPicker, "tree", LockStep)
    fast = cycle(objs, CONF).to_json()
    monkeypatch.setattr(DrainPicker, "tree", TreePicker)
    assert fast == cycle(objs, CONF).to_json()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=trees(three_levels=True))
def test_repush_picker_decides_and_explains_as_the_tree_picker(objs: list[dict],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Session, "fast_queue_pickers", True)
    fast = cycle(objs, CONF)
    monkeypatch.setattr(DrainPicker, "tree", TreePicker)
    ref = cycle(objs, CONF)
    assert fast.to_json() == ref.to_json()
    assert fast.session is not None and ref.session is not None
    assert fast.session.explanations == ref.session.explanations


def test_a_discarded_gang_pushes_its_queue_back_without_list_edits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gangs that cannot be placed: their queues go back under unchanged keys, and the held removals
    are cancelled rather than applied."""
    from k8s import node, pod, podgroup, queue

    objs: list[dict] = [node("n0", cpu=4, memory="8Gi"), queue("root"), queue("p", parent="root"),
                        queue("a", parent="p"), queue("b", parent="p")]
    for g, q in (("ga", "a"), ("gb", "b"), ("gc", "a")):
        objs += [podgroup(g, queue=q, min_member=2, phase="Inqueue", min_resources={"cpu": "2"})]
        objs += [pod(f"{g}-{i}", g, cpu=3, memory="1Gi") for i in range(2)]
    monkeypatch.setattr(Session, "fast_queue_pickers", True)
    monkeypatch.setattr(DrainPicker, "tree", LockStep)
    LockStep.held_pushes = 0
    fast = cycle(objs, CONF)
    assert LockStep.held_pushes >= 2
    monkeypatch.setattr(DrainPicker, "tree", TreePicker)
    assert fast.to_json() == cycle(objs, CONF).to_json()
