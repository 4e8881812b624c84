"""A forecast's job handed out again with its new phase when only its phase moved (forecast/sim.py,
`DumpObjects.rephasable`): the forecast is the one that builds such a job anew, and under the
self-check every job handed out again equals a fresh build."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_quiet import RECLAIM, _answer, _bench_objects, _simulator, _without_reclaim

from apportion.forecast.sim import DumpObjects
from apportion.simulation.engine import Simulator
from apportion.simulation.handout import JobsHandout
from apportion.state.check import ENV, StateCheckError


def _objects(sim: Simulator) -> DumpObjects:
    objects = sim.objects
    assert isinstance(objects, DumpObjects)
    return objects


def _twins(objs: list[dict[str, Any]], conf_text: str | None, horizon: float, skip: bool = True) -> DumpObjects:
    """The forecast handing jobs out again with their new phase and the one building them anew: the
    same answer. Returns the first one's objects."""
    fast = _simulator(objs, conf_text, skip, horizon)
    fast.run()
    plain = _simulator(objs, conf_text, skip, horizon)
    _objects(plain).rephase = False
    plain.run()
    assert _answer(fast) == _answer(plain)
    assert _objects(plain).rephased == 0
    return _objects(fast)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans(), st.booleans())
def test_handing_out_a_job_with_its_new_phase_changes_no_forecast(
        case: tuple[list[dict[str, Any]], str | None], drop: bool, skip: bool) -> None:
    """Random GPU dumps (flat or tree capacity, Volcano's default conf with proportion; with and
    without reclaim; sessions skipped or every one run)."""
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        _twins(objs, _without_reclaim(conf_text, drop), 4 * 3600.0, skip)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.booleans())
def test_handing_out_a_job_with_its_new_phase_on_the_benchmark_shape(seed: int, reclaim: bool) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        objects = _twins(_bench_objects(seed, nodes=10, gangs=40), RECLAIM if reclaim else None, 3 * 3600.0)
    # a gang bound in one session turns Running at the next close, or at the phases-only session
    # decided early (F2, F3): its object is handed out again
    assert objects.rephased > 0


def test_the_self_check_compares_jobs_handed_out_again_with_fresh_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    plain = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3600.0)
    plain.run()
    monkeypatch.setenv(ENV, "1")
    checked = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3600.0)
    checked.run()
    assert _objects(checked).rephased > 0
    assert _answer(checked) == _answer(plain)


def test_the_self_check_fails_loudly_on_a_stale_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job handed out again although a task of it finished since: not what a fresh build gives."""
    monkeypatch.setenv(ENV, "1")

    def stale(self: DumpObjects, sj: Any) -> Any:
        return sj.info if sj.info is not None and sj.info_of[2:] == (sj.queue, sj.reservation_id) else None

    monkeypatch.setattr(DumpObjects, "rephasable", stale)
    sim = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3 * 3600.0)
    with pytest.raises(StateCheckError, match="differs from a fresh build"):
        sim.run()



def _naming_checked(mp: pytest.MonkeyPatch) -> None:
    """The handout's check that a job given a new phase is named, after every snapshot of a run without
    the self-check (under it every session runs, and close sets the phases on the jobs itself)."""
    plain = JobsHandout.hand_out

    def hand_out(self: JobsHandout, active: Any, assembled: Any, touched: Any, delta: Any) -> Any:
        jobs, changed = plain(self, active, assembled, touched, delta)
        self._check_named(jobs, changed, delta)
        return jobs, changed

    mp.setattr(JobsHandout, "hand_out", hand_out)


def test_every_job_given_a_new_phase_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    _naming_checked(monkeypatch)
    sim = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3 * 3600.0)
    sim.run()
    assert _objects(sim).rephased > 0


def test_the_naming_check_fails_loudly_on_a_job_not_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job handed out again with its new phase and not named in the snapshot's jobs' delta."""
    monkeypatch.delenv(ENV, raising=False)
    _naming_checked(monkeypatch)
    monkeypatch.setattr(DumpObjects, "take_moved", lambda self: set())
    sim = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3 * 3600.0)
    with pytest.raises(StateCheckError, match="not named as changed"):
        sim.run()
