"""allocate's visit without the jobs still waiting for enqueue (docs/semantics.md K52, actions/allocate.py
`SKIP_WAITING`, framework/job_visits.py `JobVisits.visit_admitted`): over random events and sessions on
one cache (random forecasts: tests/forecast/test_forecast_waiting.py), sessions that leave out the jobs
the jobs log shows waiting still decide, explain and bind as sessions that visit every busy job, with the
self-check on (which compares every shortened visit with the full one, and the kept lists with lists
judged afresh); a job log that misses an admission fails the self-check."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_closing import fed_start, step
from test_job_visits_order import ALL_CONFS

from apportion.actions import allocate
from apportion.cluster.model import PodGroupPhase
from apportion.framework.job_visits import JobVisits
from apportion.framework.session import Session
from apportion.state import check
from session_steps import play, play_texts


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(conf=st.sampled_from(sorted(ALL_CONFS)), raw=st.lists(step, min_size=1, max_size=20))
def test_leaving_waiting_jobs_out_decides_as_visiting_every_job(conf: str, raw: list,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")
    steps = [("SESSION", []) if typ == "SESSION" else ("change", [(typ, obj)]) for typ, obj in raw]
    runs = []
    for skip in (True, False):
        monkeypatch.setattr(allocate, "SKIP_WAITING", skip)
        runs.append(play_texts(steps, fed_start, ALL_CONFS[conf], [True, False]))
    assert runs[0] == runs[1]


def test_the_waiting_jobs_are_kept_apart_and_an_unlogged_admission_fails_the_check(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """g2 waits for enqueue (phase Pending) at open: kept apart from the admitted busy job g1, visited once
    the log names it; an admission the log misses is caught by the self-check."""
    monkeypatch.setenv(check.ENV, "1")
    seen: list[tuple[set[str], list[str] | None, list[str] | None]] = []

    def before(i: int, ssn: Session) -> None:
        visits = ssn.visits
        seen.append((set(visits.waiting), visits.admitted and list(visits.admitted),
                     visits.visit_admitted(set())))
        if i == 0:
            # an admission nobody logs: the shortened visit would leave g2 out
            ssn.jobs["ns/g2"].phase = PodGroupPhase.INQUEUE
            with pytest.raises(check.StateCheckError):
                allocate._to_visit(ssn, True)
            ssn.jobs["ns/g2"].phase = PodGroupPhase.PENDING
            # logged, it is visited
            assert "ns/g2" in (visits.visit_admitted({"ns/g2"}) or [])

    play([("SESSION", []), ("SESSION", [])], fed_start, ALL_CONFS[sorted(ALL_CONFS)[0]], lambda i, s, r: None, before)
    waiting, admitted, shortened = seen[0]
    assert "ns/g2" in waiting and admitted is not None and "ns/g1" in admitted and "ns/g2" not in admitted
    assert shortened is not None and "ns/g2" not in shortened
    monkeypatch.setattr(JobVisits, "keep_waiting", False)
    visits = JobVisits({}, lambda j: (True, ""), ("gang",), None, None, None)
    assert visits.visit_admitted(set()) is None
