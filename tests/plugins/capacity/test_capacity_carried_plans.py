"""capacity's backlog test with the buckets' plans carried from session to session over one tree
(`Admission.carry_plans`, `_KeptPlans`): over random events and sessions on one cache (jobs of several
minResources submitted to leaves under parents with limits, jobs finished and deleted, a parent's
capability changed, a leaf closed and opened, a leaf added), every session decides and explains as the
same sessions working every plan out afresh, and the self-check (which compares every bucket's answer
with the vote's reference) passes throughout; plans are carried where they should be."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from apportion.engine import dispatch, open_session, run_session
from apportion.framework.conf import parse_conf
from apportion.plugins.capacity.admission import PLANS_MEMO, Admission
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater
from session_steps import decided, play

import k8s

CONFS = [parse_conf(f"""
actions: "{actions}"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
- plugins: [{{name: drf}}, {{name: predicates}}, {{name: capacity, enableHierarchy: true}}, {{name: nodeorder}}]
""") for actions in ("enqueue, allocate, backfill", "enqueue, allocate, enqueue, allocate")]
LEAVES = ["pa-1", "pa-2", "pb-1", "pb-2", "solo", "pa-3"]
GROUPS = [f"g{i}" for i in range(16)]
SHAPES = [{"cpu": "1"}, {"cpu": "2"}, {"cpu": "3"}, {"cpu": "4"}, {"cpu": "2", "memory": "20Gi"}]


def _parent(name: str, cpu: str) -> dict:
    return k8s.queue(name, parent="root", deserved={"cpu": "4"}, capability={"cpu": cpu})


def _leaf(name: str, state: str = "Open") -> dict:
    return k8s.queue(name, parent=name[:2], deserved={"cpu": "3"}, capability={"cpu": "4"}, state=state)


def _base(cache: SchedulerCache) -> None:
    objs = [k8s.node("n0", cpu=8, memory="32Gi"), k8s.node("n1", cpu=4, memory="16Gi"), k8s.queue("root"),
            _parent("pa", "4"), _parent("pb", "3"),
            k8s.queue("solo", parent="root", deserved={"cpu": "2"}, capability={"cpu": "4"})]
    objs += [_leaf(leaf) for leaf in LEAVES[:4]]
    for o in objs:
        cache.apply(WatchEvent(ADDED, o))


@st.composite
def a_step(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict]]]:
    """A session, or the events of one change."""
    kind = draw(st.sampled_from(["SESSION", "SESSION", "SESSION", "submit", "submit", "finish", "delete",
                                 "limit", "state", "state", "leaf"]))
    if kind == "SESSION":
        return kind, []
    if kind == "submit":
        events: list[tuple[str, dict]] = []
        for group in draw(st.lists(st.sampled_from(GROUPS), min_size=1, max_size=4, unique=True)):
            events += [(ADDED, k8s.podgroup(group, queue=draw(st.sampled_from(LEAVES)), phase="Pending",
                                            min_resources=draw(st.sampled_from(SHAPES)))),
                       (ADDED, k8s.pod(f"{group}-0", group, cpu=draw(st.integers(1, 2))))]
        return kind, events
    if kind == "limit":
        name = draw(st.sampled_from(["pa", "pb"]))
        return kind, [(MODIFIED, _parent(name, draw(st.sampled_from(["2", "3", "4", "6"]))))]
    if kind == "leaf":  # a leaf added (a new tree); jobs sent to it before were in no known queue
        return kind, [(ADDED, _leaf("pa-3"))]
    if kind == "state":
        leaf = draw(st.sampled_from(LEAVES[:4]))
        return kind, [(MODIFIED, _leaf(leaf, draw(st.sampled_from(["Open", "Closed"]))))]
    group = draw(st.sampled_from(GROUPS))
    if kind == "finish":
        return kind, [(MODIFIED, k8s.pod(f"{group}-0", group, cpu=1, node_name="n0", phase="Succeeded"))]
    return kind, [(DELETED, k8s.podgroup(group))]


def _sessions(steps: list, carried: bool, conf: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setattr(Admission, "carry_plans", carried)
    return play(steps, _base, conf, decided)


def _waiting(leaf: str) -> tuple[str, list[tuple[str, dict]]]:
    """Two jobs of 3 cpu in the leaf: its parent (4 cpu) admits one, the other waits."""
    return "submit", [(ADDED, k8s.podgroup(f"g{g}", queue=leaf, phase="Pending", min_resources={"cpu": "3"}))
                      for g in range(2)] + [(ADDED, k8s.pod(f"g{g}-0", f"g{g}", cpu=1)) for g in range(2)]


# a waiting job's queue closed, and opened again: its bucket's plan must follow its QueueInfo
CLOSED = [_waiting("pa-1"), ("SESSION", []), ("state", [(MODIFIED, _leaf("pa-1", "Closed"))]), ("SESSION", []),
          ("state", [(MODIFIED, _leaf("pa-1"))]), ("delete", [(DELETED, k8s.podgroup("g0"))]), ("SESSION", [])]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(a_step(), min_size=1, max_size=50), st.sampled_from(CONFS))
@example(CLOSED, CONFS[0])
def test_carried_plans_decide_as_plans_worked_out_afresh(monkeypatch: pytest.MonkeyPatch, steps: list,
                                                       conf: Any) -> None:
    monkeypatch.setenv(check.ENV, "1")
    assert _sessions(steps, True, conf, monkeypatch) == _sessions(steps, False, conf, monkeypatch)


def test_plans_are_carried_while_the_tree_and_the_queue_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions over one tree work a bucket's plan out once; a queue replaced (closed) has its buckets'
    plans worked out again, and a new tree (a parent's capability changed) every plan."""
    cache = SchedulerCache(report=lambda line: None)
    _base(cache)
    for g, leaf in enumerate(["pa-1", "pa-2", "pb-1"]):
        cache.apply(WatchEvent(ADDED, k8s.podgroup(f"w{g}", queue=leaf, phase="Pending",
                                                   min_resources={"cpu": "5"})))
        cache.apply(WatchEvent(ADDED, k8s.pod(f"w{g}-0", f"w{g}", cpu=1)))
    planned: list[str] = []
    real = Admission._plan

    def plan(self: Admission, queue: str, *args: Any) -> Any:
        planned.append(queue)
        return real(self, queue, *args)

    monkeypatch.setattr(Admission, "_plan", plan)
    monkeypatch.delenv(check.ENV, raising=False)  # the self-check works every plan out again

    def session(i: int) -> list[str]:
        planned.clear()
        snap = cache.snapshot(keep=True)
        snap.memo = cache.memo
        run_session(open_session(snap, CONFS[0], session_id=f"s{i}"))
        return sorted(planned)

    assert session(0) == ["pa-1", "pa-2", "pb-1"]
    assert session(1) == []
    cache.apply(WatchEvent(MODIFIED, _leaf("pa-2", "Closed")))
    assert session(2) == ["pa-2"]
    cache.apply(WatchEvent(MODIFIED, _parent("pb", "2")))
    assert session(3) == ["pa-1", "pa-2", "pb-1"]
    assert session(4) == []
    assert PLANS_MEMO in cache.memo


def test_plans_are_dropped_when_the_buckets_are_renumbered_in_a_session_that_carries_none() -> None:
    """A session whose every decision is refused (a job running in a parent queue) carries no plan; if
    the buckets' numbers are dropped then (`Buckets.forget_gone`), the kept plans go too: a later
    session over the same tree would otherwise find them under numbers that name other buckets."""
    conf = CONFS[0]
    cache = SchedulerCache(report=lambda line: None)
    for o in [k8s.node("n0", cpu=8, memory="32Gi"), k8s.queue("root"),
              k8s.queue("pa", parent="root", deserved={"cpu": "4"}, capability={"cpu": "4"}),
              k8s.queue("pa-1", parent="pa", deserved={"cpu": "3"}, capability={"cpu": "4"}),
              k8s.queue("pb-1", parent="root", deserved={"cpu": "3"}, capability={"cpu": "4"})]:
        cache.apply(WatchEvent(ADDED, o))

    def session(i: int) -> None:
        snap = cache.snapshot(keep=True)
        snap.memo = cache.memo
        ssn = open_session(snap, conf, session_id=f"s{i}")
        dispatch(run_session(ssn), CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))

    many = 1100  # more buckets than forget_gone keeps for the next session's few jobs
    for i in range(many):
        g = f"z{i:05d}"
        cache.apply(WatchEvent(ADDED, k8s.podgroup(g, queue="pb-1", phase="Pending", created="2026-01-02T00:00:00Z",
                                                   min_resources={"cpu": "100", "memory": f"{i + 1}Mi"})))
        cache.apply(WatchEvent(ADDED, k8s.pod(f"{g}-0", g, cpu=1)))
    session(0)
    assert cache.memo is not None and cache.memo[PLANS_MEMO].plans  # carried plans exist
    for i in range(many):
        cache.apply(WatchEvent(DELETED, k8s.podgroup(f"z{i:05d}")))
        cache.apply(WatchEvent(DELETED, k8s.pod(f"z{i:05d}-0", f"z{i:05d}")))
    cache.apply(WatchEvent(ADDED, k8s.podgroup("b-nl", queue="pa", phase="Inqueue")))
    cache.apply(WatchEvent(ADDED, k8s.podgroup("b-y", queue="pa-1", phase="Pending", min_resources={"cpu": "100"})))
    cache.apply(WatchEvent(ADDED, k8s.pod("b-y-0", "b-y", cpu=1)))
    session(1)
    assert not cache.memo[PLANS_MEMO].plans
