"""Fit suggestions given the forecast's own start for the job: the same suggestions, fewer simulations.

The checks run the forecast simulator as it is (no assumed runtimes); when the forecast ran that same
simulation, its answer says whether the job starts in the next session and whether it starts anyway
by a booking's start, so neither is simulated again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from test_fit import CAPACITY, HIER, NOW, capped, snap_of, start_of
from test_reserve import gpu_dumps, gpu_jobs, gpu_node, reservable_gpu_cluster

from apportion.forecast import fit, reserve
from apportion.forecast.api import forecast_snapshot
from apportion.forecast.core import forecast
from apportion.forecast.fit import KnownStart
from apportion.forecast.forward import ForwardRun
from apportion.forecast.suggest import suggest
from apportion.framework.conf import parse_conf

from k8s import queue

CASES: dict[str, Callable[[], tuple[list[dict[str, Any]], str | None]]] = {
    "capped": lambda: (capped(), CAPACITY),
    "reservable-later": lambda: (reservable_gpu_cluster(), HIER),
    "cluster-plan-later": lambda: ([gpu_node("n1"), gpu_node("n2"), queue("a"), *gpu_jobs("a")], None),
}


def state_of(objs: list[dict[str, Any]], conf_text: str | None) -> Any:
    return start_of(objs, conf_text)


class Counted:
    """Counts the calls of the real function it wraps (and passes them through)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fn(*args, **kwargs)


def runs(monkeypatch: pytest.MonkeyPatch, state: Any, known: KnownStart | None) -> tuple[list[Any], int, int]:
    """The suggestions, the sessions the checks ran, and the forward simulations the booking ran (from
    now, or copies of the shared forward run)."""
    sessions = Counted(fit.Checker.starts)
    forward = Counted(reserve.first_start)
    copies = Counted(ForwardRun._copy_at)
    monkeypatch.setattr(fit.Checker, "starts", lambda self, *a: sessions(self, *a))
    monkeypatch.setattr(reserve, "first_start", forward)
    monkeypatch.setattr(ForwardRun, "_copy_at", lambda self, *a: copies(self, *a))
    found = suggest(state, "ns/t", known=known)
    monkeypatch.undo()
    return [s.to_json() for s in found], sessions.calls, forward.calls + copies.calls


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_forecasts_start_spares_simulations_and_changes_nothing(case: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    objs, conf_text = CASES[case]()
    state = state_of(objs, conf_text)
    (jf,) = forecast(state, ["ns/t"]).jobs
    assert jf.start_in is None or jf.start_in > 0
    plain, plain_sessions, plain_forward = runs(monkeypatch, state, None)
    known, known_sessions, known_forward = runs(monkeypatch, state, KnownStart(jf.start_in))
    assert known == plain and plain
    # the session as it is is not run again
    assert known_sessions == plain_sessions - 1
    if any(s["kind"] == "reservation" and s["change"]["start"] > 0 for s in plain):
        # nor the forward run without the booking
        assert known_forward == plain_forward - 1


def test_a_booking_no_earlier_than_the_forecast_is_not_simulated(monkeypatch: pytest.MonkeyPatch) -> None:
    # c (first in line) is gone: t starts at 00:30 on its own, when the planner would book it
    objs = [o for o in reservable_gpu_cluster() if not o["metadata"]["name"].startswith("c")]
    state = state_of(objs, HIER)
    (jf,) = forecast(state, ["ns/t"]).jobs
    assert jf.start_in == 1800.0
    plain, _, plain_forward = runs(monkeypatch, state, None)
    known, _, known_forward = runs(monkeypatch, state, KnownStart(jf.start_in))
    assert known == plain and not any(s["kind"] == "reservation" for s in plain)
    assert plain_forward >= 2 and known_forward == 0


def test_the_api_hands_the_forecast_to_the_search() -> None:
    objs, conf_text = CASES["reservable-later"]()
    snap = snap_of(objs)
    fc = forecast_snapshot(snap, ["ns/t"], conf=parse_conf(HIER), now=NOW)
    assert [s.to_json() for s in fc.jobs[0].fits] == [s.to_json() for s in suggest(state_of(objs, conf_text), "ns/t")]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu_dumps())
def test_same_suggestions_with_the_forecasts_start(case: tuple[list[dict[str, Any]], str | None]) -> None:
    objs, conf_text = case
    state = state_of(objs, conf_text)
    (jf,) = forecast(state, ["ns/t"], horizon=86400.0).jobs
    known = KnownStart(jf.start_in, 86400.0)
    assert [s.to_json() for s in suggest(state, "ns/t", known=known)] == [
        s.to_json() for s in suggest(state, "ns/t")]


def test_known_start_by() -> None:
    assert KnownStart(10.0).by(10.0) is True and KnownStart(10.0).by(9.0) is False
    assert KnownStart(None).by(1e9) is False
    assert KnownStart(None, 100.0).by(100.0) is False and KnownStart(None, 100.0).by(101.0) is None
