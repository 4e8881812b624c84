"""Regressions found by the indexed-snapshot property test (tests/state/test_cache_properties.py) run
long: a job handed out again must equal a fresh build when a pod of its group was left out of it, or
when a pod that arrived earlier takes one of its task uids."""

from __future__ import annotations

from apportion.engine import run_cache_session
from apportion.state.cache import SchedulerCache
from apportion.state.check import check_snapshot
from apportion.state.events import ADDED, DELETED, WatchEvent

import k8s

CONF = k8s.conf("enqueue, allocate, preempt, reclaim", ["priority", "gang", "conformance"],
                ["drf", "predicates", "proportion", "nodeorder"])
NODES = ["n0", "n1", "n2"]
GROUPS = ["g0", "g1", "g2"]


def _cache() -> SchedulerCache:
    cache = SchedulerCache(report=lambda line: None)
    for o in [*(k8s.node(n, cpu=4) for n in NODES), k8s.queue("q0"), *(k8s.podgroup(g, queue="q0") for g in GROUPS)]:
        cache.apply(WatchEvent(ADDED, o))
    return cache


def _after_each(cache: SchedulerCache, events: list[tuple[str, dict]]) -> None:
    for i, (typ, obj) in enumerate(events):
        cache.apply(WatchEvent(typ, obj, f"event {i}"))
        check_snapshot(cache, cache.snapshot(keep=True))
    run_cache_session(cache, CONF)
    check_snapshot(cache, cache.snapshot(keep=True))


def test_a_job_that_left_a_pod_out_takes_it_in_when_its_node_returns() -> None:
    """p0 runs on a node the cache lost, so its job holds only the finished p1; the node returns."""
    _after_each(_cache(), [
        (DELETED, k8s.node("n0", cpu=4)),
        (ADDED, k8s.pod("p0", "g0", node_name="n0")),
        (ADDED, k8s.pod("p1", "g0", node_name="n0", phase="Succeeded")),
        (ADDED, k8s.node("n0", cpu=2)),
    ])


def test_a_job_whose_task_uid_an_earlier_pod_takes_is_built_again() -> None:
    """p2 (arrived first) is restated with p0's uid: a full assembly keeps p2 and leaves p0 out with a
    warning, so p0's job cannot be handed out again."""
    shared = k8s.pod("p2", "g0")
    shared["metadata"]["uid"] = "u0"
    first = k8s.pod("p0", "g1")
    first["metadata"]["uid"] = "u0"
    _after_each(_cache(), [
        (ADDED, k8s.pod("p2", "g0", node_name="n0")),
        (ADDED, first),
        (ADDED, shared),
    ])
