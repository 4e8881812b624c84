"""allocate's tree picker that holds a pop's sorted-list removals back for the push of the same queue
(plugins/capacity/repush.py) pops what TreePicker pops and holds, once the held removals are applied,
the lists TreePicker holds: in lock-step through whole cycles over random trees, and in the cycles'
decisions and explanations."""

from __future__ import annotations

from itertools import islice
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_capacity_picker import CONF, trees

from apportion.cluster.model import QueueInfo
from apportion.framework.conf import parse_conf
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
    assert len(fast) == len(ref)
    assert fast._again is None
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
    deferred = 0  # pushes deferred to the next pop (`RepushPicker._again`)

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
        if self._again is not None:
            # deferred: the next pop returns it as the reference's does, and the states meet again there
            # (or at the call that makes the push first)
            assert self._again is queue and len(self) == len(self.ref)
            LockStep.deferred += 1
            return
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
    LockStep.held_pushes = LockStep.deferred = 0
    fast = cycle(objs, CONF)
    assert LockStep.held_pushes + LockStep.deferred >= 2
    monkeypatch.setattr(DrainPicker, "tree", TreePicker)
    assert fast.to_json() == cycle(objs, CONF).to_json()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objs=trees(), data=st.data())
def test_deferred_pushes_pop_as_the_tree_picker_under_any_calls(objs: list[dict], data: Any) -> None:
    """Random calls on a RepushPicker and a TreePicker over the same leaves: pops, pushes back of the
    queue just popped (deferred when the pop descended to it), pushes of other popped queues, a share
    moved between a push and the next pop, len, and drain_order at the end: the same answers, and the
    same state wherever no push is deferred."""
    from k8s import session

    ssn = session(objs, parse_conf(CONF))
    plugin = next(p for _, p in ssn.plugins if p.name == "capacity")
    leaves = sorted((q for q in ssn.queues.values() if q.name in plugin.attrs and not plugin.attrs[q.name].children
                     and q.name != "root"), key=lambda q: q.name)
    queues = data.draw(st.permutations(leaves))
    fast = RepushPicker(plugin, queues, ssn.queue_compare)
    ref = TreePicker(plugin, queues, ssn.queue_compare)
    out: list[QueueInfo] = []
    last: QueueInfo | None = None
    for _ in range(data.draw(st.integers(0, 30))):
        move = data.draw(st.sampled_from(["pop", "pop", "again", "again", "other", "share"]))
        if move == "pop" and len(ref):
            last = fast.pop()
            assert last is ref.pop()
            out.append(last)
            _same(fast, ref)
        elif move == "again" and last is not None:
            fast.push(last)
            ref.push(last)
            out.remove(last)
            last = None
            assert len(fast) == len(ref)
            if fast._again is None:
                _same(fast, ref)
        elif move == "other" and out:
            q = data.draw(st.sampled_from(out))
            out.remove(q)
            if q is last:
                last = None
            fast.push(q)
            ref.push(q)
            assert len(fast) == len(ref)
            if fast._again is None:
                _same(fast, ref)
        elif move == "share" and leaves:
            # a share moves (as an allocate event logs it): the next pop re-keys what moved
            q = data.draw(st.sampled_from(leaves))
            plugin.attrs[q.name].share += data.draw(st.sampled_from([0.0, 0.5, -0.25]))
            plugin.share_log.append(q.name)
    if fast._again is not None:
        assert len(fast) == len(ref)
    got, want = fast.drain_order(lambda n: True), ref.drain_order(lambda n: True)
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        assert [q.name for q in islice(got, 50)] == [q.name for q in islice(want, 50)]
    else:
        _same(fast, ref)


def test_a_queue_that_beats_every_other_is_pushed_back_deferred(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gangs whose tasks fit no node (nothing placed, no share moves) in the queue with the smallest
    share (it beats every other one): each push back is deferred and the next pop returns the queue
    without descending the tree."""
    from k8s import node, pod, podgroup, queue

    objs: list[dict] = [node("n0", cpu=4, memory="8Gi"), queue("root"), queue("p", parent="root"),
                        queue("a", parent="p", deserved={"cpu": "2", "memory": "4Gi"}),
                        queue("b", parent="p", deserved={"cpu": "2", "memory": "4Gi"})]
    objs += [podgroup("run", queue="a", min_member=1, phase="Running"), pod("run-0", "run", cpu=1, memory="1Gi",
                                                                             node_name="n0")]
    for g in ("g1", "g2", "g3"):
        objs += [podgroup(g, queue="b", min_member=2, phase="Inqueue", min_resources={"cpu": "2"})]
        objs += [pod(f"{g}-{i}", g, cpu=5, memory="1Gi") for i in range(2)]
    monkeypatch.setattr(Session, "fast_queue_pickers", True)
    monkeypatch.setattr(DrainPicker, "tree", LockStep)
    LockStep.deferred = 0
    fast = cycle(objs, CONF)
    assert LockStep.deferred >= 2
    monkeypatch.setattr(DrainPicker, "tree", TreePicker)
    assert fast.to_json() == cycle(objs, CONF).to_json()
