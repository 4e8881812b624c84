"""SchedulerCache: events in, snapshots out; bad events handled, counted and reported."""

from __future__ import annotations

import json

import pytest

from apportion.cluster.model import TaskStatus
from apportion.engine import run_cache_session, run_cycle
from apportion.errors import InputError
from apportion.state import cache as C
from apportion.state.cache import SchedulerCache
from apportion.state.check import check_cache
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent, parse_event

import k8s


def objs() -> list[dict]:
    return [
        k8s.node("n1", cpu=4), k8s.node("n2", cpu=4),
        k8s.queue("q1"), k8s.podgroup("g1", queue="q1", min_member=2),
        k8s.pod("p1", "g1", cpu=1), k8s.pod("p2", "g1", cpu=1),
        k8s.pod("r1", "g1", cpu=1, node_name="n1"),
    ]


def fresh(lines: list[str] | None = None) -> SchedulerCache:
    sink = lines if lines is not None else []
    return SchedulerCache(report=sink.append)


def feed(cache: SchedulerCache, *events: tuple[str, dict]) -> None:
    for i, (typ, obj) in enumerate(events):
        cache.apply(WatchEvent(typ, obj, f"test: event {i}"))


def out(result) -> str:
    return json.dumps(result.to_json(), indent=1)


def test_keys_follow_kubernetes() -> None:
    cache = fresh()
    feed(cache, *[(ADDED, o) for o in objs()], (ADDED, k8s.priority_class("high", 10)))
    assert list(cache.raw["Node"]) == ["n1", "n2"]
    assert list(cache.raw["Pod"]) == ["ns/p1", "ns/p2", "ns/r1"]
    assert list(cache.raw["PodGroup"]) == ["ns/g1"]
    assert list(cache.raw["Queue"]) == ["q1"]
    assert list(cache.raw["PriorityClass"]) == ["high"]
    assert cache.pods_by_node == {"n1": {"ns/r1"}}


def test_session_over_events_equals_cycle_over_the_same_objects() -> None:
    cache = fresh()
    feed(cache, *[(ADDED, o) for o in objs()])
    assert out(run_cache_session(cache)) == out(run_cycle(k8s.snapshot(*objs())))


def test_snapshot_is_a_copy_sessions_do_not_touch_the_cache() -> None:
    cache = fresh()
    feed(cache, *[(ADDED, o) for o in objs()])
    first = out(run_cache_session(cache))
    assert out(run_cache_session(cache)) == first  # the first session's binds stayed in its snapshot
    assert cache.records.pods["ns/p1"][1].task.status is TaskStatus.PENDING


def test_modified_and_deleted_change_the_state() -> None:
    cache = fresh()
    feed(cache, *[(ADDED, o) for o in objs()])
    feed(cache, (MODIFIED, k8s.pod("p1", "g1", cpu=1, node_name="n2")), (DELETED, k8s.pod("p2", "g1")))
    snap = cache.snapshot()
    job = snap.jobs["ns/g1"]
    assert sorted(t.name for t in job.tasks.values()) == ["p1", "r1"]
    assert job.tasks["ns/p1"].status is TaskStatus.RUNNING and job.tasks["ns/p1"].node_name == "n2"
    assert cache.pods_by_node == {"n1": {"ns/r1"}, "n2": {"ns/p1"}}
    # a MODIFIED object keeps its place: task order (and so outcomes) does not depend on updates
    assert list(cache.raw["Pod"]) == ["ns/p1", "ns/r1"]


def test_modified_before_added_is_an_add() -> None:
    lines: list[str] = []
    cache = fresh(lines)
    feed(cache, (MODIFIED, k8s.node("n1")))
    assert "n1" in cache.raw["Node"]
    assert cache.anomalies[C.MODIFIED_UNKNOWN] == 1
    assert lines == ["test: event 0: MODIFIED Node n1 before it was ADDED; treated as ADDED"]


def test_duplicate_added_is_a_modify() -> None:
    lines: list[str] = []
    cache = fresh(lines)
    feed(cache, (ADDED, k8s.node("n1", cpu=4)), (ADDED, k8s.node("n2")), (ADDED, k8s.node("n1", cpu=8)))
    assert cache.anomalies[C.DUPLICATE_ADDED] == 1 and len(lines) == 1
    assert cache.records.nodes["n1"][1].allocatable.cpu == 8000
    assert list(cache.raw["Node"]) == ["n1", "n2"]


def test_deleted_of_unknown_is_ignored() -> None:
    lines: list[str] = []
    cache = fresh(lines)
    feed(cache, (ADDED, k8s.node("n1")), (DELETED, k8s.pod("ghost", None)))
    assert cache.anomalies[C.DELETED_UNKNOWN] == 1
    assert lines == ["test: event 1: DELETED Pod ns/ghost, which the cache does not hold; ignored"]
    assert len(cache) == 1


def test_pod_whose_node_vanished_is_left_out_until_the_node_returns() -> None:
    lines: list[str] = []
    cache = fresh(lines)
    feed(cache, *[(ADDED, o) for o in objs()])
    feed(cache, (DELETED, k8s.node("n1")))
    assert cache.anomalies[C.NODE_DELETED_WITH_PODS] == 1
    assert "node n1 deleted with 1 pod(s) on it (ns/r1)" in lines[-1]
    snap = cache.snapshot()
    assert "ns/r1" not in snap.jobs["ns/g1"].tasks
    assert any("pod ns/r1 is on node 'n1', which is not in the cache" in w for w in snap.warnings)
    run_cache_session(cache)  # no traceback, and the self-check holds
    feed(cache, (ADDED, k8s.pod("late", "g1", node_name="n9")))
    assert cache.anomalies[C.POD_NODE_MISSING] == 1
    feed(cache, (ADDED, k8s.node("n1", cpu=4)))
    assert "ns/r1" in cache.snapshot().jobs["ns/g1"].tasks


def test_unknown_kind_is_skipped() -> None:
    lines: list[str] = []
    cache = fresh(lines)
    feed(cache, (ADDED, {"kind": "Service", "metadata": {"name": "s"}}))
    assert cache.anomalies[C.UNKNOWN_KIND] == 1 and len(cache) == 0


def test_malformed_object_leaves_the_cache_unchanged() -> None:
    cache = fresh()
    feed(cache, *[(ADDED, o) for o in objs()])
    before = cache.version
    bad = k8s.pod("p1", "g1")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    with pytest.raises(InputError, match=r"test: event 0: spec.containers\[0\].resources.requests.cpu"):
        feed(cache, (MODIFIED, bad))
    assert cache.version == before
    assert cache.records.pods["ns/p1"][1].task.resreq.cpu == 1000
    check_cache(cache)


def test_parse_event_names_the_field() -> None:
    with pytest.raises(InputError, match="line 3: type: expected ADDED, MODIFIED or DELETED, got 'BOOKMARKED'"):
        parse_event({"type": "BOOKMARKED", "object": {}}, "line 3")
    with pytest.raises(InputError, match="object.metadata.name"):
        parse_event({"type": "ADDED", "object": {"kind": "Pod", "metadata": {}}}, "line 4")
    with pytest.raises(InputError, match="object: required mapping is missing"):
        parse_event({"type": "ADDED"}, "line 5")
    bare = parse_event(k8s.node("n1"), "line 6")
    assert bare.type == MODIFIED and bare.kind == "Node"


def test_load_is_strict_like_a_dump() -> None:
    cache = fresh()
    with pytest.raises(InputError, match="duplicate Node 'n1'"):
        cache.load([("d: document 0", k8s.node("n1")), ("d: document 1", k8s.node("n1"))])
    cache = fresh()
    cache.load([(f"d: document {i}", o) for i, o in enumerate(objs())])
    check_cache(cache)
    assert out(run_cache_session(cache)) == out(run_cycle(k8s.snapshot(*objs())))


def test_check_catches_a_stale_index_and_a_touched_record() -> None:
    from apportion.state.check import StateCheckError

    cache = fresh()
    feed(cache, *[(ADDED, o) for o in objs()])
    cache.pods_by_node["n2"] = {"ns/p1"}
    with pytest.raises(StateCheckError, match="pods_by_node"):
        check_cache(cache)
    cache = fresh()
    feed(cache, *[(ADDED, o) for o in objs()])
    cache.records.pods["ns/p1"][1].task.status = TaskStatus.BINDING  # what a session must never do
    with pytest.raises(StateCheckError, match="the cache's Pod differs"):
        check_cache(cache)
