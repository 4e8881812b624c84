"""Property: sessions dropped without their close (a forecast's skipped sessions, F1/F2) break no
chain: the next close and the next PodGroup phases over the memo look at what the deltas since the last
close named (framework/closing.py, `note_unclosed`) and decide what a close of every job decides,
session after session; and they do look only at that."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_closing import CONFS, START, an_object, running_gang_and_a_waiting_job, twin_sessions

from apportion.engine import _decided, dispatch, open_session, run_cache_session
from apportion.framework import closing
from apportion.framework.closing import CLOSE_MEMO, UNCLOSED_MEMO
from apportion.framework.session import PODGROUPS_MEMO
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater

import k8s

#: a change to the running gang that no session then touches (a pod of it ends or runs again): only the
#: delta of the session it came before names it
gang_pod = st.tuples(st.just(MODIFIED), st.builds(lambda name, phase: k8s.pod(name, "g0", cpu=1, node_name="n0",
                                                                             phase=phase),
                                                  st.sampled_from(["p0", "p1"]), st.sampled_from(["Running", "Succeeded"])))
step = st.one_of(st.tuples(st.sampled_from([ADDED, ADDED, MODIFIED, DELETED]), an_object()), gang_pod, gang_pod,
                 st.just(("SESSION", None)), st.just(("SESSION", "skip")), st.just(("SESSION", "skip")))


def _open_and_drop(cache: SchedulerCache, conf: Any, sid: str) -> None:
    """A session opened over the cache's snapshot and released without its actions or close."""
    snap = cache.snapshot(keep=True)
    snap.memo = cache.memo
    open_session(snap, conf, session_id=sid).release()
    cache.last_session = None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(conf=st.sampled_from(sorted(CONFS)), steps=st.lists(step, min_size=1, max_size=30))
def test_closes_across_dropped_sessions_decide_as_full_ones(conf: str, steps: list,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")  # every job a close does not look at is checked to carry

    def session(carry: bool, cache: SchedulerCache, sid: str, what: Any) -> Any:
        if what == "skip":
            _open_and_drop(cache, CONFS[conf], sid)
            return None
        if not carry:
            for key in (CLOSE_MEMO, PODGROUPS_MEMO, UNCLOSED_MEMO):
                cache.memo.pop(key, None)
        result = run_cache_session(cache, CONFS[conf], session_id=sid, reuse=False)
        dispatch(result, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
        return (_decided(result), [(e.object, e.reason, e.message) for e in result.events],
                sorted(result.podgroups.items()))

    # keys sorted: the closes' maps from the jobs' delta hold a new job after the others (K17)
    twin_sessions(START, steps, session, sort_keys=True)


def test_a_close_after_dropped_sessions_looks_only_at_what_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sessions dropped between two closes, a job arriving during them: the second close looks at
    that job (and the waiting one it explains), not at the running gang nothing touched, and so do the
    PodGroup phases; a gap in the chain (a snapshot without a session) makes both look at every job."""
    monkeypatch.setenv(check.ENV, "1")
    conf = CONFS["capacity"]
    cache = running_gang_and_a_waiting_job()
    for sid in ("s1", "s2"):
        dispatch(run_cache_session(cache, conf, session_id=sid, reuse=False), CacheBinder(cache),
                 CacheEvictor(cache), CacheStatusUpdater(cache))
    _open_and_drop(cache, conf, "s3")
    for o in (k8s.podgroup("g5", queue="b1", phase="Inqueue"), k8s.pod("p9", "g5", cpu=1)):
        cache.apply(WatchEvent(ADDED, o, "arrival"))
    _open_and_drop(cache, conf, "s4")
    full = []
    split_reference = closing.Close.split_reference

    def spy(self: closing.Close) -> Any:
        full.append(self.ssn.uid)
        return split_reference(self)
    monkeypatch.setattr(closing.Close, "split_reference", spy)
    result = run_cache_session(cache, conf, session_id="s5", reuse=False)
    assert full == []
    assert "ns/g0" not in {j.uid for j in result.recomputed or ()}
    assert "ns/g5" in {j.uid for j in result.recomputed or ()}
    assert result.podgroups["ns/g0"] == "Running" and result.podgroups["ns/g5"] in ("Inqueue", "Running")
    dispatch(result, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
    cache.snapshot(keep=True)  # a snapshot no session saw: the chain has a gap
    run_cache_session(cache, conf, session_id="s6", reuse=False)
    assert full == ["s6"]


@pytest.mark.parametrize("change", ["a gang's pod ends", "a waiting job leaves"])
def test_what_changed_before_a_dropped_session_is_looked_at(change: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A change that only the dropped session's delta names (it came before that session's snapshot,
    and the next session does not touch the job): the next close closes the job again, as a close of
    every job does. Without the dropped session's delta in the chain the self-check fails here."""
    monkeypatch.setenv(check.ENV, "1")
    conf = CONFS["capacity"]
    decided = []
    for chain in (True, False):
        cache = running_gang_and_a_waiting_job()
        for sid in ("s1", "s2"):
            dispatch(run_cache_session(cache, conf, session_id=sid, reuse=False), CacheBinder(cache),
                     CacheEvictor(cache), CacheStatusUpdater(cache))
        if change == "a gang's pod ends":
            cache.apply(WatchEvent(MODIFIED, k8s.pod("p1", "g0", cpu=1, node_name="n0", phase="Succeeded"), "end"))
        else:
            for o in (k8s.pod("p2", "g1", cpu=8), k8s.podgroup("g1", queue="b1", min_member=1, phase="Inqueue")):
                cache.apply(WatchEvent(DELETED, o, "gone"))
        _open_and_drop(cache, conf, "s3")
        if not chain:
            for key in (CLOSE_MEMO, PODGROUPS_MEMO, UNCLOSED_MEMO):
                cache.memo.pop(key, None)
        result = run_cache_session(cache, conf, session_id="s4", reuse=False)
        decided.append((_decided(result), sorted(result.podgroups.items()),
                        sorted(j.uid for j in result.recomputed or ())))
    assert decided[0][:2] == decided[1][:2]
    if change == "a gang's pod ends":
        assert "ns/g0" in decided[0][2]
