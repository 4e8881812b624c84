"""enqueue's votes asking again by bucket and leaving unread refusals out (docs/semantics.md K40): after
an admission the answers of the jobs left are asked per bucket (`Dispatch.enqueue_buckets`, capacity's
`enqueue_buckets`), and a session that makes no why-pending texts records no refusal's explanation from
the votes' answers (`enqueue.skip_unread`). Over random events and sessions on one cache (jobs added,
changed, admitted, deleted; pods placed and finished), every session decides as the same sessions with
both off, explains the same when it makes the texts, and the self-check passes throughout."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_enqueue_carried import CONF, GROUPS, LEAVES, _base, a_step

from apportion.actions import enqueue
from apportion.engine import open_session, run_session
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, WatchEvent
from session_steps import play_texts

import k8s


@st.composite
def a_crowd(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict]]]:
    """The events of many gangs of one pod submitted Pending at once (minResources of 1-5 cpu: some
    never fit a leaf's capability of 4), so that a session refuses many and admits a few."""
    events: list[tuple[str, dict]] = []
    for group in draw(st.lists(st.sampled_from(GROUPS), min_size=4, max_size=12, unique=True)):
        events += [(ADDED, k8s.podgroup(group, queue=draw(st.sampled_from(LEAVES)), phase="Pending",
                                        min_resources={"cpu": str(draw(st.integers(1, 5)))})),
                   (ADDED, k8s.pod(f"{group}-0", group, cpu=1))]
    return "submit", events


def _sessions(steps: list, fast: bool, monkeypatch: pytest.MonkeyPatch, texts: list[bool]) -> list[Any]:
    monkeypatch.setattr(enqueue, "ask_by_bucket", fast)
    monkeypatch.setattr(enqueue, "skip_unread", fast)
    monkeypatch.setattr(enqueue, "by_candidates", fast)
    return play_texts(steps, _base, CONF, texts)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(a_step(), a_crowd()), min_size=1, max_size=60),
       st.lists(st.booleans(), min_size=1, max_size=4))
def test_enqueue_by_bucket_decides_as_the_plain_one(monkeypatch: pytest.MonkeyPatch, steps: list,
                                                    texts: list[bool]) -> None:
    monkeypatch.setenv(check.ENV, "1")
    assert _sessions(steps, True, monkeypatch, texts) == _sessions(steps, False, monkeypatch, texts)


@pytest.mark.parametrize("texts", [True, False])
def test_a_session_without_texts_records_no_refusal(texts: bool) -> None:
    """A job the answers refuse is explained in a session that makes the texts, not in one that does not;
    the phases are the same."""
    cache = SchedulerCache(report=lambda line: None)
    _base(cache)
    for group, cpu in (("big", "5"), ("fits", "2")):
        cache.apply(WatchEvent(ADDED, k8s.podgroup(group, queue="pa-1", phase="Pending", min_resources={"cpu": cpu})))
        cache.apply(WatchEvent(ADDED, k8s.pod(f"{group}-0", group, cpu=1)))
    snap = cache.snapshot(keep=True)
    snap.memo = cache.memo
    ssn = open_session(snap, CONF, session_id="s0")
    ssn.why_pending = texts
    run_session(ssn)
    phases = {uid.rsplit("/", 1)[-1]: job.phase.value for uid, job in ssn.jobs.items()}
    assert phases == {"big": "Pending", "fits": "Inqueue"}
    big = next(uid for uid in ssn.jobs if uid.endswith("big"))
    assert (big in ssn.explanations) is texts
