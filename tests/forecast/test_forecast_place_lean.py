"""allocate's per-placement steps written leaner (docs/semantics.md K58) in forecasts: random busy
forecasts with every switch on and every switch off are the same run, with the self-check on (kept
counts of what a job passed over lacks compared with fresh ones, kept compared columns with the table's)
and off (allocate then passes over the jobs at once, `_run_lone`, reading the kept counts)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fit import start_of
from test_forecast_sim import busy_dumps
from test_quiet import _answer

from apportion.actions import pass_over
from apportion.forecast.sim import forecast_simulator
from apportion.framework import node_choice, placement_carry
from apportion.plugins import k8s_view, nodeorder
from apportion.plugins.capacity import simulate
from apportion.state import check

SWITCHES = [(placement_carry, "SAME_AT_ONCE"), (nodeorder, "LEAN_ROW_SCORE"), (k8s_view, "SHARED_VECTORS"),
            (simulate, "LEAN_CHARGE"), (node_choice, "CARRIED_COLUMNS"), (pass_over, "KEEP_LACKING"),
            (nodeorder, "KEEP_WEIGHTS")]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(case=busy_dumps(), checking=st.sampled_from(["1", "0"]))
def test_lean_steps_change_no_forecast(case: tuple[list[dict[str, Any]], str | None], checking: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, checking)
    objs, conf_text = case
    answers = []
    for lean in (True, False):
        for module, name in SWITCHES:
            monkeypatch.setattr(module, name, lean)
        sim = forecast_simulator(start_of(objs, conf_text), horizon=3 * 3600.0)
        sim.run()
        answers.append(_answer(sim))
    assert answers[0] == answers[1]
