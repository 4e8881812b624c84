"""drf's sums and shares carried from open to open (plugins/drf.py): the next open takes the last
one's dictionaries as they are, puts back what the last session's events changed (`_Held.undo`) and
applies its delta. Whatever the events did, the next open's shares are those derived for every job
(the self-check compares them): also for an event that moves no task status, which no jobs' delta
would name."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.engine import open_session, run_cache_session
from apportion.plugins.drf import DrfPlugin
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, WatchEvent

import k8s

CONF = k8s.conf("enqueue, allocate", ["priority", "gang"], ["drf", "predicates", "proportion", "nodeorder"])


def _cache() -> SchedulerCache:
    cache = SchedulerCache(report=lambda line: None)
    for o in (k8s.node("n0", cpu=8), k8s.node("n1", cpu=8),
              k8s.podgroup("run", min_member=2, phase="Running"),
              k8s.pod("r0", "run", cpu=2, node_name="n0", phase="Running"),
              k8s.pod("r1", "run", cpu=2, node_name="n1", phase="Running"),
              k8s.podgroup("wait", min_member=1, phase="Inqueue"), k8s.pod("w0", "wait", cpu=3)):
        cache.apply(WatchEvent(ADDED, o, "t"))
    return cache


def _open(cache: SchedulerCache, sid: str) -> Any:
    snap = cache.snapshot(keep=True)
    snap.memo = cache.memo
    return open_session(snap, CONF, session_id=sid)


def _drf(ssn: Any) -> DrfPlugin:
    return next(p for _, p in ssn.plugins if isinstance(p, DrfPlugin))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(st.lists(st.tuples(st.sampled_from(["allocate", "deallocate"]),
                                          st.sampled_from(["ns/r0", "ns/r1", "ns/w0"])), max_size=5),
                       min_size=1, max_size=4))
def test_shares_after_any_events_are_the_derived_ones(events: list[list[tuple[str, str]]],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")  # the carried shares are compared with shares derived afresh
    cache = _cache()
    run_cache_session(cache, CONF, session_id="s0", reuse=False)
    for i, session_events in enumerate(events):
        ssn = _open(cache, f"s{i + 1}")
        drf = _drf(ssn)
        assert drf.allocated == {uid: drf._derived(job)[0] for uid, job in ssn.jobs.items()}
        tasks = {t.key: t for job in ssn.jobs.values() for t in job.tasks.values()}
        for what, key in session_events:
            # the handlers as a session's event fires them, here without a status move
            (drf.on_allocate if what == "allocate" else drf.on_deallocate)(tasks[key])
        ssn.release()
    last = _open(cache, "last")
    drf = _drf(last)
    assert {uid: (a.cpu, a.memory, drf.shares[uid]) for uid, a in drf.allocated.items()} == {
        uid: (a.cpu, a.memory, sh) for uid, (a, sh) in ((u, drf._derived(j)) for u, j in last.jobs.items())}
