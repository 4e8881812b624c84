"""The busy jobs kept in uid order from open to open (framework/job_visits.py `JobVisits.keep_order`):
over random events and sessions on one cache, sessions that keep the order decide, explain and leave the
cache as sessions that sort the busy uids at every visit; every visit's uids are the sort's, with the
self-check on throughout; and a kept order tampered with in the memo fails the self-check."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_closing import GANG, START, decided_session, running_gang_and_a_waiting_job, step, twin_sessions
from test_job_visits import CONFS

from apportion.engine import dispatch, run_cache_session
from apportion.framework.job_visits import MEMO, JobVisits
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, WatchEvent
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater

import k8s

ALL_CONFS = {**CONFS, "enqueue, allocate, reclaim, backfill": k8s.conf(
    "enqueue, allocate, reclaim, backfill", GANG, ["drf", "predicates", "capacity", "nodeorder"])}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(conf=st.sampled_from(sorted(ALL_CONFS)), steps=st.lists(step, min_size=1, max_size=30))
def test_the_kept_order_decides_as_the_sort(conf: str, steps: list, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")
    visits: list[tuple[list[str], list[str]]] = []
    real = JobVisits.visit

    def spied(self: JobVisits) -> list[str]:
        out = real(self)
        if self.active:
            visits.append((out, self.visit_reference()))
        return out

    monkeypatch.setattr(JobVisits, "visit", spied)

    def session(keep: bool, cache: SchedulerCache, sid: str, _: Any) -> Any:
        monkeypatch.setattr(JobVisits, "keep_order", keep)
        return decided_session(cache, ALL_CONFS[conf], sid)

    twin_sessions(START, steps, session)
    assert all(out == ref for out, ref in visits)


def test_the_order_is_carried_and_follows_the_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second session over the cache takes the first one's order from the memo (the same list), with
    a job submitted in between put in at its place."""
    monkeypatch.setenv(check.ENV, "1")
    cache = running_gang_and_a_waiting_job()
    conf = CONFS["capacity"]
    first = run_cache_session(cache, conf, session_id="s1", reuse=False)
    assert first.session is not None
    order = first.session.visits.order
    assert order == ["ns/g1"] == first.session.visits.visit()
    assert first.session.visits.visit() is not order  # a copy: a caller may change it
    dispatch(first, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
    cache.apply(WatchEvent(ADDED, k8s.podgroup("g0a", queue="a1", phase="Pending", min_resources={"cpu": "1"})))
    cache.apply(WatchEvent(ADDED, k8s.pod("g0a-0", "g0a", cpu=1)))
    second = run_cache_session(cache, conf, session_id="s2", reuse=False)
    assert second.session is not None
    assert second.session.visits.order is order
    assert order == ["ns/g0a", "ns/g1"] == sorted(second.session.visits.busy)


def test_a_wrong_kept_order_fails_the_self_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The self-check is not vacuous: an order tampered with in the memo is caught."""
    monkeypatch.setenv(check.ENV, "1")
    cache = running_gang_and_a_waiting_job()
    conf = CONFS["capacity"]
    first = run_cache_session(cache, conf, session_id="s1", reuse=False)
    dispatch(first, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
    held = cache.memo[MEMO]
    assert held.order is not None
    held.order.insert(0, "ns/zz")
    with pytest.raises(check.StateCheckError):
        run_cache_session(cache, conf, session_id="s2", reuse=False)
