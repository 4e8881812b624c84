"""Property: a session that carries over the close of the jobs nothing touched since the last close
(framework/closing.py), and makes its queue report from the last one (capacity's report), decides what
a session that closes every job and reports every queue afresh decides, in every field, session after
session; and the carrying happens."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.cluster.model import JobInfo, PodGroupPhase, TaskInfo, TaskStatus
from apportion.engine import _decided, dispatch, run_cache_session
from apportion.framework.close_texts import tasks_explained, tasks_explained_reference
from apportion.framework.closing import CLOSE_MEMO
from apportion.framework.conf import SchedulerConf
from apportion.framework.queue_status import QueueStatuses
from apportion.plugins.capacity.ledger import LEDGER_MEMO
from apportion.resources import Resource
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.check import state_of
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater

import k8s

GANG = ["priority", "gang", "conformance"]
CONFS = {
    "proportion": k8s.conf("enqueue, allocate, backfill, preempt, reclaim", GANG,
                           ["drf", "predicates", "proportion", "nodeorder"]),
    "capacity": k8s.conf("enqueue, allocate, backfill, reclaim", GANG,
                         ["drf", "predicates", {"name": "capacity", "enableHierarchy": True}, "nodeorder"]),
}
NODES = ["n0", "n1"]
GROUPS = ["g0", "g1", "g2", "g3"]
LEAVES = ["a1", "a2", "b1"]


def _tree() -> list[dict]:
    return [k8s.queue("root"), k8s.queue("a", parent="root", deserved={"cpu": "3"}),
            k8s.queue("b", parent="root", deserved={"cpu": "3"}),
            k8s.queue("a1", parent="a", deserved={"cpu": "2"}), k8s.queue("a2", parent="a", deserved={"cpu": "1"}),
            k8s.queue("b1", parent="b", deserved={"cpu": "3"}), k8s.queue("default", parent="root")]


@st.composite
def an_object(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["Node", "PodGroup", "Pod", "Pod", "Pod", "Queue"]))
    if kind == "Node":
        return k8s.node(draw(st.sampled_from(NODES)), cpu=draw(st.sampled_from([2, 3])))
    if kind == "Queue":
        # a leaf's state or deserved changes: the queue report must see it
        name = draw(st.sampled_from(LEAVES))
        parent = "b" if name == "b1" else "a"
        return k8s.queue(name, parent=parent, deserved={"cpu": draw(st.sampled_from(["1", "2"]))},
                         state=draw(st.sampled_from(["Open", "Open", "Closed"])))
    if kind == "PodGroup":
        size = draw(st.integers(1, 2))
        return k8s.podgroup(draw(st.sampled_from(GROUPS)), queue=draw(st.sampled_from(LEAVES)),
                            min_member=size, phase=draw(st.sampled_from(["Pending", "Inqueue", "Running"])),
                            min_resources={"cpu": str(size)})
    node = draw(st.sampled_from(["", "", *NODES]))
    return k8s.pod(f"p{draw(st.integers(0, 6))}", draw(st.sampled_from(GROUPS)), cpu=draw(st.sampled_from([1, 2])),
                   node_name=node, phase=draw(st.sampled_from(["Running", "Running", "Succeeded"])) if node else "Pending")


step = st.one_of(st.tuples(st.sampled_from([ADDED, ADDED, MODIFIED, DELETED]), an_object()),
                 st.just(("SESSION", None)), st.just(("SESSION", None)))


def _full_close_and_report(cache: SchedulerCache) -> None:
    """Make the next session over the cache close every job and report every queue afresh."""
    cache.memo.pop(CLOSE_MEMO, None)
    ledger = cache.memo.get(LEDGER_MEMO)
    if ledger is not None:
        ledger.report = None


#: a running gang, a waiting job and a pending one to start with: the events then change some of them
START = [*_tree(), k8s.node("n0", cpu=3), k8s.podgroup("g0", queue="a1", min_member=2, phase="Running"),
         k8s.pod("p0", "g0", cpu=1, node_name="n0"), k8s.pod("p1", "g0", cpu=1, node_name="n0"),
         k8s.podgroup("g1", queue="b1", phase="Inqueue"), k8s.pod("p2", "g1", cpu=2),
         k8s.podgroup("g2", queue="a2", phase="Pending", min_resources={"cpu": "2"}), k8s.pod("p3", "g2", cpu=2)]


def fed_start(cache: SchedulerCache) -> None:
    """The cache fed START's objects (the base the session-step tests play their steps from)."""
    for o in START:
        cache.apply(WatchEvent(ADDED, o, "setup"))


def twin_sessions(start: list[dict], steps: list[tuple[str, Any]],
                  session: Callable[[bool, SchedulerCache, str, Any], Any], *, sort_keys: bool = False) -> None:
    """Two caches fed the same objects and events; at each ("SESSION", what) step `session(first, cache,
    session id, what)` runs a session on each (`first` tells them apart: the way under test, then the
    reference) and returns what it decided, which must be equal (as JSON), and so must the caches'
    states after every step."""
    caches = [SchedulerCache(report=lambda line: None) for _ in range(2)]
    for cache in caches:
        for o in start:
            cache.apply(WatchEvent(ADDED, o, "setup"))
    for i, (typ, obj) in enumerate(steps):
        decided = []
        for first, cache in zip((True, False), caches):
            if typ == "SESSION":
                decided.append(session(first, cache, f"s{i}", obj))
            else:
                cache.apply(WatchEvent(typ, obj, f"event {i}"))
        if decided:
            assert json.dumps(decided[0], default=str, sort_keys=sort_keys) == json.dumps(
                decided[1], default=str, sort_keys=sort_keys)
        assert state_of(caches[0]) == state_of(caches[1])



def decided_session(cache: SchedulerCache, conf: SchedulerConf, sid: str) -> tuple[Any, list[Any], Any]:
    """One session over the cache, its decisions dispatched back into it: what it decided, its events
    and its explanations (what a `twin_sessions` session function compares)."""
    result = run_cache_session(cache, conf, session_id=sid, reuse=False)
    assert result.session is not None
    dispatch(result, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
    return (_decided(result), [(e.object, e.reason, e.message) for e in result.events],
            result.session.explanations)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conf=st.sampled_from(sorted(CONFS)), steps=st.lists(step, min_size=1, max_size=30))
def test_carried_closes_and_reports_decide_as_full_ones(conf: str, steps: list) -> None:
    last_report: list[Any] = [None]

    def session(carry: bool, cache: SchedulerCache, sid: str, _: Any) -> Any:
        if not carry:
            _full_close_and_report(cache)
        result = run_cache_session(cache, CONFS[conf], session_id=sid, reuse=False)
        if carry:
            _same_where_unchanged(result.queue_status, last_report)
        dispatch(result, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
        return _decided(result), [(e.object, e.reason, e.message) for e in result.events]

    # keys sorted: the closes' maps from the jobs' delta hold a new job after the others (K17)
    twin_sessions(START, steps, session, sort_keys=True)


def _same_where_unchanged(report: Any, last: list[Any]) -> None:
    """A report that names its changes against the last one holds that one's very status objects for
    every other queue, and the same queues."""
    if isinstance(report, QueueStatuses) and last[0] is not None and report.since is last[0].token:
        assert report.keys() == last[0].keys()
        for name, status in report.items():
            if name not in report.changed:
                assert status is last[0][name]
    last[0] = report


def running_gang_and_a_waiting_job() -> SchedulerCache:
    """A cache holding a running gang of two on n0 and a waiting job too large for the node."""
    cache = SchedulerCache(report=lambda line: None)
    objs = [*_tree(), k8s.node("n0", cpu=4), k8s.podgroup("g0", queue="a1", min_member=2, phase="Running"),
            k8s.pod("p0", "g0", cpu=1, node_name="n0", phase="Running"),
            k8s.pod("p1", "g0", cpu=1, node_name="n0", phase="Running"),
            k8s.podgroup("g1", queue="b1", min_member=1, phase="Inqueue"), k8s.pod("p2", "g1", cpu=8)]
    for o in objs:
        cache.apply(WatchEvent(ADDED, o, "t"))
    return cache


def test_a_running_gang_nothing_touched_is_carried_over(monkeypatch: Any) -> None:
    """The carrying happens: the second session over an unchanged running gang closes it without the
    close hook visiting it, with its own id in the carried condition; the self-check agrees."""
    monkeypatch.setenv(check.ENV, "1")
    cache = running_gang_and_a_waiting_job()
    first = run_cache_session(cache, CONFS["capacity"], session_id="s1")
    assert {j.uid for j in first.recomputed or ()} == {"ns/g0", "ns/g1"}
    dispatch(first, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
    second = run_cache_session(cache, CONFS["capacity"], session_id="s2", reuse=False)
    # g1 waits (nothing fits 8 cpu): allocate records the same fit errors and explanations as last
    # time, so its close (Unschedulable, the event) is carried too
    assert not second.recomputed
    assert [e.object for e in second.events] == ["ns/g1"]
    assert [(c.type, c.transition_id) for c in second.conditions["ns/g1"]] == [("Unschedulable", "s2")]
    assert second.podgroups["ns/g0"] == "Running"
    assert [(c.type, c.transition_id) for c in second.conditions["ns/g0"]] == [("Scheduled", "s2")]
    # the ledger starts with the second session (the first builds capacity's tree): the third one's
    # report is the second's with nothing made again
    dispatch(second, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
    third = run_cache_session(cache, CONFS["capacity"], session_id="s3", reuse=False)
    report = third.queue_status
    assert isinstance(report, QueueStatuses) and isinstance(second.queue_status, QueueStatuses)
    # the waiting g1 is kept by the ledger like the running g0: no queue is charged again
    assert report.since is second.queue_status.token and set(report.changed) == set()
    assert all(report[name] is second.queue_status[name]
               for name in ("a", "a1", "a2", "b", "b1", "root", "default"))


def test_a_carried_close_that_differs_fails_the_self_check(monkeypatch: Any) -> None:
    """The self-check is not vacuous: a carried close tampered with is caught."""
    from apportion.framework import closing
    monkeypatch.setenv(check.ENV, "1")
    cache = SchedulerCache(report=lambda line: None)
    for o in (*_tree(), k8s.node("n0", cpu=4), k8s.podgroup("g0", queue="a1", phase="Running"),
              k8s.pod("p0", "g0", cpu=1, node_name="n0", phase="Running")):
        cache.apply(WatchEvent(ADDED, o, "t"))
    run_cache_session(cache, CONFS["capacity"], session_id="s1")
    kept = cache.memo[CLOSE_MEMO].jobs["ns/g0"]
    cache.memo[CLOSE_MEMO].jobs["ns/g0"] = closing.JobClose(**{
        **{f: getattr(kept, f) for f in kept.__dataclass_fields__}, "phase": closing.PodGroupPhase.UNKNOWN})
    try:
        run_cache_session(cache, CONFS["capacity"], session_id="s2", reuse=False)
    except check.StateCheckError as e:
        assert "ns/g0" in str(e)
    else:
        raise AssertionError("the self-check passed a carried close that differs from the full one")


@settings(max_examples=300, deadline=None)
@given(statuses=st.lists(st.sampled_from(list(TaskStatus)), max_size=8),
       steps=st.lists(st.tuples(st.integers(0, 7), st.sampled_from(list(TaskStatus)),
                                st.sampled_from(list(PodGroupPhase)),
                                st.dictionaries(st.sampled_from([f"ns/t{i}" for i in range(9)] + ["ns/j"]),
                                                st.lists(st.sampled_from(["a", "b"]), max_size=2), max_size=4)),
                      max_size=6))
def test_tasks_explained_from_kept_keys_is_the_walk(statuses: list[TaskStatus], steps: list[Any]) -> None:
    """A close's pending-task explanations read from the keys kept on the job (JobInfo.derive) are the
    reference walk's, before and after status and phase changes, whatever is explained."""
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    for i, status in enumerate(statuses):
        job.add_task(TaskInfo(uid=f"u{i}", name=f"t{i}", namespace="ns", job="ns/j", resreq=Resource(1, 1),
                              status=status))
    assert tasks_explained(job, {}) == tasks_explained_reference(job, {})
    for i, status, phase, explained in steps:
        if i < len(statuses):
            job.set_status(job.tasks[f"u{i}"], status)
        job.phase = phase
        assert tasks_explained(job, explained) == tasks_explained_reference(job, explained)


def test_a_waiting_job_whose_refusal_text_moves_is_closed_without_the_hooks(monkeypatch: Any) -> None:
    """A job that reaches close as last time but for its explanations (the queue use its refusal names
    moved) keeps the last close's phase and conditions without the close hooks visiting it, and gets an
    event with this session's text; the result names it as recomputed, and the self-check (the full
    close) agrees."""
    from apportion.plugins.gang import GangPlugin
    monkeypatch.setenv(check.ENV, "1")
    visited: list[list[str]] = []
    hook = GangPlugin.on_session_close

    def recording(self: GangPlugin, ssn: Any) -> None:
        visited.append(sorted(j.uid for j in ssn.closing))
        hook(self, ssn)

    monkeypatch.setattr(GangPlugin, "on_session_close", recording)
    cache = SchedulerCache(report=lambda line: None)
    for o in (*_tree(), k8s.node("n0", cpu=4), k8s.podgroup("g0", queue="a1", phase="Running"),
              k8s.pod("p0", "g0", cpu=1, node_name="n0", phase="Running"),
              k8s.podgroup("g1", queue="b1", phase="Pending", min_resources={"cpu": "4"}), k8s.pod("p2", "g1", cpu=4)):
        cache.apply(WatchEvent(ADDED, o, "t"))
    results = []
    for i in range(3):
        if i:
            # the running gang grows: the root queue's use, which g1's refusal names, moves
            cache.apply(WatchEvent(ADDED, k8s.pod(f"p{10 + i}", "g0", cpu=1, node_name="n0", phase="Running"), "t"))
        results.append(run_cache_session(cache, CONFS["capacity"], session_id=f"s{i}", reuse=False))
        dispatch(results[-1], CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
        visited.append([])  # the self-check's full closes of carried jobs follow as further visits
    last = results[-1]
    # the third session's hooks visit only the changed gang (then the self-check visits g1 in full)
    third = visited[visited.index([], visited.index([]) + 1) + 1:]
    assert third[0] == ["ns/g0"]
    assert {j.uid for j in last.recomputed or ()} == {"ns/g0", "ns/g1"}
    texts = [next(e.message for e in r.events if e.object == "ns/g1") for r in results[1:]]
    assert "short by 2" in texts[0] and "short by 3" in texts[1]
    assert last.podgroups["ns/g1"] == "Inqueue"
    assert [(c.type, c.transition_id) for c in last.conditions["ns/g1"]] == [("Unschedulable", "s2")]
