"""Property: sessions over snapshots that hand them the jobs' delta (docs/semantics.md K17: the cache
visits only the PodGroups that changed, and capacity's ledger, session open, close and the result's
PodGroup phases look only at the jobs the delta names) decide what sessions over snapshots assembled in
full decide, in every field, session after session; the delta is used, and the self-check catches a
job changed behind the log's back."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_closing import CONFS as CLOSING_CONFS
from test_closing import GANG, GROUPS, _tree, an_object, running_gang_and_a_waiting_job, twin_sessions

from apportion.cluster.model import PodGroupPhase
from apportion.cluster.snapshot import JobDelta
from apportion.engine import _decided, dispatch, run_cache_session
from apportion.plugins.capacity.ledger import LEDGER_MEMO, Ledger
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater

import k8s

CONFS = {
    **CLOSING_CONFS,
    "flat capacity, reclaim first": k8s.conf("enqueue, reclaim, allocate, backfill", GANG,
                                             ["drf", "predicates", "capacity", "nodeorder"]),
}


@st.composite
def another_object(draw: st.DrawFn) -> dict:
    """What `an_object` leaves out: pods without a PodGroup (a job each), a PodGroup of a queue that is
    missing (left out of the session) or of a parent queue (charged beside capacity's ledger), priority
    classes (every job's priority)."""
    kind = draw(st.sampled_from(["loose", "missing", "parent", "pc"]))
    if kind == "loose":
        node = draw(st.sampled_from(["", "n0"]))
        return k8s.pod(f"q{draw(st.integers(0, 2))}", None, cpu=1, node_name=node)
    if kind == "missing":
        return k8s.podgroup(draw(st.sampled_from(GROUPS)), queue="nowhere", phase="Inqueue")
    if kind == "parent":
        return k8s.podgroup(draw(st.sampled_from(GROUPS)), queue="a", phase=draw(st.sampled_from(["Inqueue", "Running"])))
    return k8s.priority_class("high", draw(st.sampled_from([10, 20])))


step = st.one_of(st.tuples(st.sampled_from([ADDED, ADDED, MODIFIED, DELETED]), an_object()),
                 st.tuples(st.sampled_from([ADDED, DELETED]), another_object()),
                 st.just(("SESSION", None)), st.just(("SESSION", None)), st.just(("SESSION", None)),
                 # a session whose decisions are not sent back (a shadow without --apply): only the jobs'
                 # log tells the next snapshot what it changed
                 st.just(("SESSION", "dry")))


def _start() -> list[dict]:
    return [*_tree(), k8s.node("n0", cpu=3), k8s.node("n1", cpu=2),
            k8s.podgroup("g0", queue="a1", min_member=2, phase="Running"),
            k8s.pod("p0", "g0", cpu=1, node_name="n0"), k8s.pod("p1", "g0", cpu=1, node_name="n0"),
            k8s.podgroup("g1", queue="b1", phase="Inqueue"), k8s.pod("p2", "g1", cpu=2),
            k8s.podgroup("g2", queue="a2", phase="Pending", min_resources={"cpu": "2"}), k8s.pod("p3", "g2", cpu=2),
            k8s.podgroup("g3", queue="a1", phase="Running"), k8s.pod("p4", "g3", cpu=1, node_name="n1")]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(conf=st.sampled_from(sorted(CONFS)), steps=st.lists(step, min_size=1, max_size=30))
def test_sessions_from_the_jobs_delta_decide_as_full_ones(conf: str, steps: list,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")  # every pass from the delta is also compared with its full walk

    def session(delta: bool, cache: SchedulerCache, sid: str, what: Any) -> Any:
        monkeypatch.setattr(SchedulerCache, "job_deltas", delta)
        result = run_cache_session(cache, CONFS[conf], session_id=sid, reuse=False)
        assert result.session is not None
        if what != "dry":
            dispatch(result, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
        return (_decided(result), [(e.object, e.reason, e.message) for e in result.events],
                result.session.explanations, result.session.snapshot.warnings, sorted(result.podgroups.items()))

    # keys sorted: the closes' and phases' maps from the delta hold a new job after the others
    twin_sessions(_start(), steps, session, sort_keys=True)


def _session(cache: SchedulerCache, sid: str) -> Any:
    result = run_cache_session(cache, CONFS["capacity"], session_id=sid, reuse=False)
    dispatch(result, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
    return result


def test_the_delta_names_only_what_changed_and_the_passes_look_at_that(monkeypatch: pytest.MonkeyPatch) -> None:
    """A running gang nothing touches and a job that arrives: the second snapshot builds the new job
    only, its delta names it alone, and the ledger, open and close look at it and not at the gang."""
    monkeypatch.setenv(check.ENV, "1")
    cache = running_gang_and_a_waiting_job()
    _session(cache, "s1")
    _session(cache, "s2")  # the first session's decisions came back as events: settle them
    gang = cache.snapshot(keep=True)
    assert gang.jobs_delta is not None and gang.jobs_delta.since is not None
    for o in (k8s.podgroup("g5", queue="b1", phase="Inqueue"), k8s.pod("p9", "g5", cpu=1)):
        cache.apply(WatchEvent(ADDED, o, "arrival"))
    looked: dict[str, set[str]] = {}
    split = Ledger.split

    def spy_split(self: Ledger, jobs: Any, delta: Any = None) -> Any:
        fresh = split(self, jobs, delta)
        looked["ledger"] = {j.uid for j in fresh}
        return fresh
    monkeypatch.setattr(Ledger, "split", spy_split)
    result = _session(cache, "s3")
    snap = result.session.snapshot
    assert snap.jobs_delta.changed == {"ns/g5"} and snap.jobs_delta.gone == set()
    assert snap.jobs["ns/g0"] is gang.jobs["ns/g0"]  # handed out again without being visited
    assert looked["ledger"] == {"ns/g5"}
    assert result.session.open_delta is not None and result.session.open_delta.changed == ["ns/g5"]
    assert "ns/g0" not in {j.uid for j in result.recomputed} and result.podgroups["ns/g0"] == "Running"
    assert isinstance(cache.memo[LEDGER_MEMO], Ledger)


def test_a_job_changed_behind_the_log_fails_the_self_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session that wrote a phase without `set_phase` (so the jobs' log missed it) is caught at the next
    snapshot, before any pass trusts the delta."""
    monkeypatch.setenv(check.ENV, "1")
    cache = running_gang_and_a_waiting_job()
    _session(cache, "s1")
    _session(cache, "s2")
    snap = cache.snapshot(keep=True)
    check.check_snapshot(cache, snap)
    snap.jobs["ns/g0"].phase = PodGroupPhase.UNKNOWN  # not logged
    with pytest.raises(check.StateCheckError, match="without being logged"):
        check.check_snapshot(cache, cache.snapshot(keep=True))


@pytest.mark.parametrize("keep", ["changed", "gone", "log"])
def test_a_delta_that_leaves_a_job_out_fails_the_self_check(keep: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A delta that leaves out what it should name (a new job, a gone one, one the last session moved)
    is caught by the self-check of the first pass that trusts it."""
    monkeypatch.setenv(check.ENV, "1")
    cache = running_gang_and_a_waiting_job()
    _session(cache, "s1")
    _session(cache, "s2")
    if keep == "changed":
        for o in (k8s.podgroup("g5", queue="b1", phase="Inqueue"), k8s.pod("p9", "g5", cpu=1)):
            cache.apply(WatchEvent(ADDED, o, "arrival"))
    elif keep == "gone":
        cache.apply(WatchEvent(DELETED, k8s.podgroup("g0", queue="a1", min_member=2, phase="Running"), "gone"))
    else:
        # a session whose decisions are not sent back: only the jobs' log knows what it changed
        cache.apply(WatchEvent(ADDED, k8s.node("n9", cpu=4), "room"))
        _session(cache, "s2b")
        for o in (k8s.podgroup("g5", queue="b1", phase="Inqueue"), k8s.pod("p9", "g5", cpu=1)):
            cache.apply(WatchEvent(ADDED, o, "arrival"))
        moved = run_cache_session(cache, CONFS["capacity"], session_id="s2c", reuse=False)
        assert moved.binds
    since_last = JobDelta.since_last

    def blind(self: JobDelta, at: int | None) -> set[str] | None:
        got = since_last(self, at)
        return None if got is None else got - {*self.changed, *self.gone, *self.log}
    monkeypatch.setattr(JobDelta, "since_last", blind)
    with pytest.raises(check.StateCheckError):
        _session(cache, "s3")
