"""allocate's visit without the jobs still waiting for enqueue (docs/semantics.md K52, actions/allocate.py
`SKIP_WAITING`): random forecasts with it on and off are the same run, the self-check on (which compares
every shortened visit with the full one)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from test_fit import start_of
from test_forecast_sim import busy_dumps
from test_quiet import _answer

from apportion.actions import allocate
from apportion.forecast.sim import forecast_simulator
from apportion.state import check


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(case=busy_dumps())
def test_leaving_waiting_jobs_out_changes_no_forecast(case: tuple[list[dict[str, Any]], str | None],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")
    objs, conf_text = case
    answers = []
    for skip in (True, False):
        monkeypatch.setattr(allocate, "SKIP_WAITING", skip)
        sim = forecast_simulator(start_of(objs, conf_text), horizon=3 * 3600.0)
        sim.run()
        answers.append(_answer(sim))
    assert answers[0] == answers[1]
