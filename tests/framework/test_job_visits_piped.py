"""The jobs that may hold a pipelined task (framework/job_visits.py `JobVisits.keep_piped`): over random
events and sessions on one cache, sessions that look at the busy jobs that held one at open and the jobs
moved since decide, explain and leave the cache as sessions that look at every visited job, and every
`Session.pipelined` is the reference's, with the self-check on throughout."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_closing import START, decided_session, step, twin_sessions
from test_job_visits_order import ALL_CONFS

from apportion.framework.job_visits import JobVisits
from apportion.framework.session import Session
from apportion.state import check


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(conf=st.sampled_from(sorted(ALL_CONFS)), steps=st.lists(step, min_size=1, max_size=30))
def test_the_kept_pipelined_jobs_decide_as_every_visited_job(conf: str, steps: list,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")
    seen: list[tuple[dict[str, str], dict[str, str]]] = []
    real = Session.pipelined

    def spied(self: Session) -> dict[str, str]:
        out = real(self)
        keep = JobVisits.keep_piped
        JobVisits.keep_piped = False
        try:
            seen.append((out, real(self)))
        finally:
            JobVisits.keep_piped = keep
        return out

    monkeypatch.setattr(Session, "pipelined", spied)

    def session(keep: bool, cache: Any, sid: str, _: Any) -> Any:
        monkeypatch.setattr(JobVisits, "keep_piped", keep)
        return decided_session(cache, ALL_CONFS[conf], sid)

    twin_sessions(START, steps, session)
    # the order of the keys too: jobs in the session's order, tasks in the job's
    assert all(list(out.items()) == list(ref.items()) for out, ref in seen)


def test_a_job_pipelined_at_open_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """`may_hold_pipelined` names the busy jobs judged with a pipelined task and the moved ones."""
    from types import SimpleNamespace

    from apportion.cluster.model import PodGroupPhase, TaskStatus

    def job(uid: str, counts: dict[TaskStatus, int]) -> Any:
        return SimpleNamespace(uid=uid, queue="q", phase=PodGroupPhase.INQUEUE, counts=counts, pending_be=0)

    jobs: Any = {"a": job("a", {TaskStatus.PIPELINED: 1}), "b": job("b", {TaskStatus.PENDING: 2}),
                 "c": job("c", {TaskStatus.RUNNING: 1})}
    visits = JobVisits(jobs, lambda j: (True, ""), ("gang",), None, None, None)
    assert visits.busy == {"a", "b"} and visits.piped == {"a"}
    assert visits.may_hold_pipelined() == ["a"]
    visits.moved.add("c")
    assert sorted(visits.may_hold_pipelined() or []) == ["a", "c"]
    monkeypatch.setattr(JobVisits, "keep_piped", False)
    assert visits.may_hold_pipelined() is None
