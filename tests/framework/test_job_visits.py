"""Property: sessions whose actions pass over the quiet jobs (framework/job_visits.py), with the verdicts
carried from session to session over the cache's memo, decide what sessions that visit every job
decide, in every field, session after session; the carrying happens, and the self-check catches a
carried verdict that is wrong."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_closing import CONFS as CLOSING_CONFS
from test_closing import GANG, START, decided_session, running_gang_and_a_waiting_job, step, twin_sessions

from apportion.engine import dispatch, run_cache_session
from apportion.framework import job_visits
from apportion.framework.job_visits import MEMO, JobVisits
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater
from spying import record_calls

import k8s

CONFS = {
    **CLOSING_CONFS,
    # flat capacity with reclaim first: a quiet job whose task reclaim evicts is visited by allocate after
    "flat, reclaim first": k8s.conf("enqueue, reclaim, allocate, backfill", GANG,
                                    ["drf", "predicates", "capacity", "nodeorder"]),
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(conf=st.sampled_from(sorted(CONFS)), steps=st.lists(step, min_size=1, max_size=30))
def test_passing_over_quiet_jobs_decides_as_visiting_every_job(conf: str, steps: list,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")

    def session(skip: bool, cache: SchedulerCache, sid: str, _: Any) -> Any:
        monkeypatch.setattr(JobVisits, "enabled", skip)
        return decided_session(cache, CONFS[conf], sid)

    twin_sessions(START, steps, session)


def test_a_running_gang_is_quiet_and_carried(monkeypatch: pytest.MonkeyPatch) -> None:
    """The running gang is quiet and the waiting job busy; the second session over the same cache takes
    both verdicts from the memo (nothing judged again), and still agrees with the self-check."""
    monkeypatch.setenv(check.ENV, "1")
    cache = running_gang_and_a_waiting_job()
    conf = CONFS["capacity"]
    first = run_cache_session(cache, conf, session_id="s1", reuse=False)
    assert first.session is not None
    assert first.session.visits.quiet == {"ns/g0": "a1"} and first.session.visits.busy == {"ns/g1"}
    assert first.session.visits.visit() == ["ns/g1"]
    dispatch(first, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
    judged = record_calls(monkeypatch, JobVisits, "is_quiet", lambda self, job: job.uid)
    monkeypatch.setenv(check.ENV, "0")
    second = run_cache_session(cache, conf, session_id="s2", reuse=False)
    assert second.session is not None
    assert judged == []
    assert second.session.visits.quiet == {"ns/g0": "a1"} and second.session.visits.busy == {"ns/g1"}


def test_a_wrong_carried_verdict_fails_the_self_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The self-check is not vacuous: a verdict tampered with in the memo is caught."""
    monkeypatch.setenv(check.ENV, "1")
    cache = running_gang_and_a_waiting_job()
    conf = CONFS["capacity"]
    first = run_cache_session(cache, conf, session_id="s1", reuse=False)
    dispatch(first, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
    held = cache.memo[MEMO]
    held.quiet["ns/g1"] = "b1"
    held.busy.discard("ns/g1")
    with pytest.raises(check.StateCheckError, match="quiet jobs"):
        run_cache_session(cache, conf, session_id="s2", reuse=False)


def test_another_validity_plugin_visits_every_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """A JobValid plugin not known to answer from the job alone switches the passing over off."""
    monkeypatch.setattr(job_visits, "JOB_LOCAL_VALIDITY", frozenset())
    cache = running_gang_and_a_waiting_job()
    result = run_cache_session(cache, CONFS["capacity"], session_id="s1", reuse=False)
    assert result.session is not None
    assert not result.session.visits.active
    assert result.session.visits.visit() == ["ns/g0", "ns/g1"]


def test_a_quiet_job_reclaim_evicts_from_is_visited_by_allocate_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """With reclaim before allocate, reclaim evicts a task of the running gang `h` (quiet at open): `h`
    is no longer valid, and allocate, which visits it now, explains so, as the visit of every job does."""
    objs = [k8s.node("n0", cpu=8, memory="32Gi"),
            k8s.queue("hog", deserved={"cpu": "2"}), k8s.queue("poor", deserved={"cpu": "6"}),
            k8s.podgroup("h", queue="hog", min_member=4, phase="Running")]
    objs += [k8s.pod(f"h-{i}", "h", cpu=2, memory="1Gi", node_name="n0") for i in range(4)]
    objs += [k8s.podgroup("a", queue="poor", min_member=1, phase="Inqueue", min_resources={"cpu": "2"}),
             k8s.pod("a-0", "a", cpu=2, memory="1Gi")]
    conf = CONFS["flat, reclaim first"]
    decided = []
    for skip in (True, False):
        monkeypatch.setattr(JobVisits, "enabled", skip)
        result = k8s.cycle(objs, conf)
        assert result.session is not None
        decided.append((result.to_json(), result.session.explanations))
    assert decided[0] == decided[1]
    assert decided[0][0]["evictions"]
    assert any("not enough valid tasks" in m for m in decided[0][1]["ns/h"])
