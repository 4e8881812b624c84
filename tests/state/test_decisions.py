"""Binder, Evictor and StatusUpdater: decisions go back into the cache as events."""

from __future__ import annotations

from apportion.cluster.model import PodGroupPhase, TaskStatus
from apportion.engine import dispatch, run_cache_session
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, WatchEvent
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater

import k8s

GANG = [k8s.node("n1", cpu=4), k8s.node("n2", cpu=4), k8s.queue("q1"),
        k8s.podgroup("g1", queue="q1", min_member=2, phase="Pending"),
        k8s.pod("p1", "g1", cpu=2), k8s.pod("p2", "g1", cpu=2)]


def loaded(objs: list[dict]) -> SchedulerCache:
    cache = SchedulerCache(report=lambda line: None)
    for i, o in enumerate(objs):
        cache.apply(WatchEvent(ADDED, o, f"test: {i}"))
    return cache


def outs(cache: SchedulerCache, **binder_kw):
    return (CacheBinder(cache, **binder_kw), CacheEvictor(cache), CacheStatusUpdater(cache))


def test_binds_come_back_as_events_and_the_next_session_sees_them() -> None:
    cache = loaded(GANG)
    result = run_cache_session(cache)
    assert sorted(result.binds) == ["ns/p1", "ns/p2"]
    done = dispatch(result, *outs(cache))
    assert done.bind_errors == {}
    snap = cache.snapshot()
    assert {t.status for t in snap.jobs["ns/g1"].tasks.values()} == {TaskStatus.BOUND}
    assert snap.jobs["ns/g1"].phase is PodGroupPhase.INQUEUE  # the phase came back too
    again = run_cache_session(cache)
    assert again.binds == {}
    dispatch(again, *outs(cache))
    pg = cache.get("PodGroup", "ns/g1")
    assert pg is not None and pg["status"]["phase"] == "Running"


def test_a_failed_bind_leaves_the_pod_pending_with_its_error() -> None:
    cache = loaded(GANG)
    result = run_cache_session(cache)
    nodes = set(result.binds.values())
    done = dispatch(result, *outs(cache, fail_nodes=frozenset(nodes)))
    assert set(done.bind_errors) == {"ns/p1", "ns/p2"}
    assert result.bind_errors == done.bind_errors and result.binds == {}
    assert cache.bind_errors["ns/p1"].startswith("binding rejected by node")
    assert cache.snapshot().jobs["ns/g1"].tasks["ns/p1"].status is TaskStatus.PENDING
    # the next session tries again; a change to the pod clears the kept error
    retry = run_cache_session(cache)
    dispatch(retry, *outs(cache))
    assert cache.bind_errors == {}


def test_a_bind_to_a_vanished_node_fails() -> None:
    cache = loaded(GANG)
    result = run_cache_session(cache)
    node = result.binds["ns/p1"]
    cache.apply(WatchEvent("DELETED", k8s.node(node), "test"))
    done = dispatch(result, *outs(cache))
    assert done.bind_errors["ns/p1"] == f"node {node} no longer exists"


def test_evictions_carry_their_reason_and_release_the_task() -> None:
    conf = k8s.conf("preempt", ["priority", "gang"], ["priority", "conformance"])
    objs = [k8s.priority_class("high", 100), k8s.priority_class("low", 1), k8s.node("n1", cpu=2), k8s.queue("q"),
            k8s.podgroup("lo", "q", phase="Running", priority_class="low"),
            k8s.pod("v", "lo", cpu=2, node_name="n1"),
            k8s.podgroup("hi", "q", priority_class="high"), k8s.pod("h", "hi", cpu=2)]
    cache = loaded(objs)
    result = run_cache_session(cache, conf)
    assert result.evictions == ["ns/v"]
    binder, evictor, updater = outs(cache)
    dispatch(result, binder, evictor, updater)
    assert evictor.log == [("ns/v", result.evict_reasons["ns/v"])]
    pod = cache.get("Pod", "ns/v")
    assert pod is not None and pod["metadata"]["deletionTimestamp"]
    assert pod["status"]["conditions"][-1]["message"] == result.evict_reasons["ns/v"]
    assert cache.snapshot().jobs["ns/lo"].tasks["ns/v"].status is TaskStatus.RELEASING
    assert cache.get("Pod", "ns/h")["status"].get("nominatedNodeName") == "n1"


def test_outcomes_never_edit_the_objects_they_were_given() -> None:
    objs = [dict(o) for o in GANG]
    before = repr(objs)
    cache = loaded(objs)
    dispatch(run_cache_session(cache), *outs(cache))
    assert repr(objs) == before


class _Recorder:
    """A Binder, Evictor and StatusUpdater that records what it is sent."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def bind(self, binds):
        self.sent.append(("bind", tuple(binds)))
        return {}

    def evict(self, pod, reason):
        self.sent.append(("evict", pod, reason))

    def nominate(self, pod, node):
        self.sent.append(("nominate", pod, node))

    def update_pod_group(self, key, phase, conditions):
        self.sent.append(("podgroup", key, phase, len(conditions)))

    def update_queue(self, name, status):
        self.sent.append(("queue", name))


def test_dispatch_without_conditions_sends_the_same_phases_with_none() -> None:
    # g2 cannot start (too big): its close writes conditions, which conditions=False does not send
    cache = loaded(GANG + [k8s.podgroup("g2", queue="q1", min_member=2, phase="Pending"),
                           k8s.pod("p3", "g2", cpu=8), k8s.pod("p4", "g2", cpu=8)])
    result = run_cache_session(cache)
    assert any(result.conditions.get(uid) for uid in result.podgroups)
    full, bare = _Recorder(), _Recorder()
    dispatch(result, full, full, full)
    dispatch(result, bare, bare, bare, conditions=False)
    assert [s for s in full.sent if s[0] == "podgroup" and s[3]]  # some were sent with conditions
    assert [s[:3] if s[0] == "podgroup" else s for s in full.sent] == [
        s[:3] if s[0] == "podgroup" else s for s in bare.sent]
    assert all(s[3] == 0 for s in bare.sent if s[0] == "podgroup")
