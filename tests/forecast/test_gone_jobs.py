"""The jobs a forecast's snapshot names as gone: the handout's count of the jobs it dropped from its
last map (simulation/handout.py) against the reference, the last map's keys less this one's."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_quiet import _answer, _bench_objects, _simulator

import apportion.simulation.engine as engine
from apportion.simulation.handout import JobsHandout
from apportion.simulation.start import objects_delta
from apportion.state.check import ENV, StateCheckError


def _compared(mp: pytest.MonkeyPatch) -> dict[str, int]:
    """Compare, at every snapshot of the runs that follow, the handout's `gone` with the reference;
    returns the counts of snapshots that had one and of jobs named gone by it."""
    seen = {"given": 0, "gone": 0}

    def compared(jobs: Any, last: Any, cache: Any, changed: Any = None, gone: Any = None) -> Any:
        if gone is not None:
            assert gone == last.keys() - jobs.keys()
            seen["given"] += 1
            seen["gone"] += len(gone)
        return objects_delta(jobs, last, cache, changed, gone)

    mp.setattr(engine, "objects_delta", compared)
    return seen


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_the_jobs_named_gone_are_those_the_last_map_held_and_this_one_does_not(
        case: tuple[list[dict[str, Any]], str | None], skip: bool) -> None:
    """Random GPU dumps (flat or tree capacity; sessions skipped or every one run): the same sets, and
    the same forecast as with the reference at every snapshot."""
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        plain = _simulator(objs, conf_text, skip, 4 * 3600.0)
        plain.run()
        _compared(mp)
        fast = _simulator(objs, conf_text, skip, 4 * 3600.0)
        fast.run()
    assert _answer(fast) == _answer(plain)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_jobs_go_on_the_benchmark_shape_and_are_named(seed: int) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        seen = _compared(mp)
        _simulator(_bench_objects(seed, nodes=10, gangs=40), None, True, 3 * 3600.0).run()
    assert seen["given"] > 0
    assert seen["gone"] > 0


def test_the_self_check_fails_loudly_on_a_job_gone_unnamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A handout that forgets the jobs it dropped: the self-check finds the snapshot's delta wrong."""
    monkeypatch.setenv(ENV, "1")
    plain = JobsHandout.hand_out

    def forgetful(self: JobsHandout, active: Any, assembled: Any, touched: Any, delta: Any) -> Any:
        out = plain(self, active, assembled, touched, delta)
        if self.gone:
            self.gone = set()
        return out

    monkeypatch.setattr(JobsHandout, "hand_out", forgetful)
    sim = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3 * 3600.0)
    with pytest.raises(StateCheckError, match="named as gone"):
        sim.run()
