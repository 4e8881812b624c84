"""A MODIFIED pod whose parsed inputs did not change keeps its record (and leaves its job as kept);
any change to what the parser reads, however slight, parses it again."""

from __future__ import annotations

import copy
from typing import Any

from apportion.errors import InputError
from apportion.state.cache import SchedulerCache, pod_inputs
from apportion.state.check import check_cache
from apportion.state.events import ADDED, MODIFIED, WatchEvent

import k8s


def _cache() -> tuple[SchedulerCache, dict[str, Any]]:
    cache = SchedulerCache(report=lambda line: None)
    pod = k8s.pod("r1", "g1", cpu=1, node_name="n1")
    pod["status"] = {"phase": "Running"}
    for o in (k8s.node("n1", cpu=4), k8s.queue("q1"), k8s.podgroup("g1", queue="q1", min_member=1), pod):
        cache.apply(WatchEvent(ADDED, o, "t"))
    return cache, pod


def test_a_change_the_parser_ignores_keeps_the_record() -> None:
    cache, pod = _cache()
    held = cache.records.pods["ns/r1"][1]
    stamp = dict(cache._stamp)
    new = copy.deepcopy(pod)
    new["metadata"]["resourceVersion"] = "2"
    new["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    cache.apply(WatchEvent(MODIFIED, new, "t"))
    assert cache.records.pods["ns/r1"][1] is held
    assert cache._stamp == stamp  # the job's kept build stays valid
    assert cache.raw["Pod"]["ns/r1"] is new
    check_cache(cache)


def _variants(pod: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for edit in (
        lambda p: p["metadata"].setdefault("labels", {}).update(a=1),
        lambda p: p["spec"].update(priority=True),
        lambda p: p["status"].update(phase="Succeeded"),
        lambda p: p["status"].update(startTime="2026-01-01T00:00:00Z"),
        lambda p: p["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z"),
        lambda p: p["spec"]["containers"][0]["resources"]["requests"].update(cpu=1.0),
    ):
        p = copy.deepcopy(pod)
        edit(p)
        out.append(p)
    return out


def test_any_change_the_parser_reads_parses_again() -> None:
    _, pod = _cache()
    marks = {pod_inputs(p) for p in _variants(pod)} | {pod_inputs(pod)}
    assert None not in marks and len(marks) == 7
    # 1 and 1.0 (and true) compare equal in Python but parse differently: the marks keep them apart
    a, b = copy.deepcopy(pod), copy.deepcopy(pod)
    a["metadata"]["labels"] = {"x": 1}
    b["metadata"]["labels"] = {"x": 1.0}
    assert a == b and pod_inputs(a) != pod_inputs(b)
    for p in _variants(pod):
        cache, _ = _cache()
        held = cache.records.pods["ns/r1"][1]
        try:
            cache.apply(WatchEvent(MODIFIED, p, "t"))
        except InputError:  # spec.priority: true is refused, as a first parse would refuse it
            assert cache.records.pods["ns/r1"][1] is held
            continue
        assert cache.records.pods["ns/r1"][1] is not held
        check_cache(cache)
