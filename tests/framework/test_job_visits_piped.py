"""The jobs that may hold a pipelined task (framework/job_visits.py `JobVisits.keep_piped`): over random
events and sessions on one cache, every `Session.pipelined` (looking at the busy jobs that held one at
open and the jobs moved since) is the reference's (looking at every visited job), keys in the same order,
with the self-check on throughout (which compares the kept jobs with those judged afresh at every open).
`pipelined` reads the session and changes nothing, so both are asked of each session of one run."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_closing import fed_start, step
from test_job_visits_order import ALL_CONFS

from apportion.framework.job_visits import JobVisits
from apportion.framework.session import Session
from apportion.state import check
from session_steps import play

#: the method itself (the fixture undoes its patches only after every example: a spy made from the
#: attribute as it stands would call the last example's spy, twice a call, example after example)
_PIPELINED = Session.pipelined


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(conf=st.sampled_from(sorted(ALL_CONFS)), raw=st.lists(step, min_size=1, max_size=24))
def test_the_kept_pipelined_jobs_give_what_every_visited_job_gives(conf: str, raw: list,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")
    seen: list[tuple[dict[str, str], dict[str, str]]] = []

    def spied(self: Session) -> dict[str, str]:
        out = _PIPELINED(self)
        JobVisits.keep_piped = False
        try:
            seen.append((out, _PIPELINED(self)))
        finally:
            JobVisits.keep_piped = True
        return out

    monkeypatch.setattr(Session, "pipelined", spied)
    steps = [("SESSION", []) if typ == "SESSION" else ("change", [(typ, obj)]) for typ, obj in raw]
    play(steps, fed_start, ALL_CONFS[conf], lambda i, ssn, result: None)
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
