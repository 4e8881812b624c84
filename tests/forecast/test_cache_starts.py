"""`give_starts` looks at the cache's own jobs alone when a start state's objects build theirs with their
starts (simulation/handout.py `CACHE_STARTS_ONLY`, docs/semantics.md F13): the switch on and off give the
same forecasts and every snapshot's tasks the same starts, and under the self-check a job built with its
starts that lacks one fails loudly."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_quiet import RECLAIM, _answer, _bench_objects, _simulator
from test_starts_at_build import run_recording_starts

from apportion.cluster.model import JobInfo, TaskStatus
from apportion.forecast.sim import DumpObjects
from apportion.simulation import handout
from apportion.simulation.jobs import SimJob
from apportion.state.check import ENV, StateCheckError


def _run(objs: list[dict[str, Any]], conf_text: str | None, skip: bool, only: bool,
         monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """The forecast's answer and, snapshot by snapshot, every task's start (`give_starts` done)."""
    with monkeypatch.context() as mp:
        mp.setattr(handout, "CACHE_STARTS_ONLY", only)
        mp.delenv(ENV, raising=False)
        sim, seen = run_recording_starts(mp, objs, conf_text, skip)
    assert isinstance(sim.objects, DumpObjects)
    return _answer(sim), seen


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(busy_dumps(), st.booleans())
def test_the_cache_s_jobs_alone_start_alike(monkeypatch: pytest.MonkeyPatch, case: tuple[list[dict[str, Any]], str | None],
                                            skip: bool) -> None:
    objs, conf_text = case
    assert _run(objs, conf_text, skip, True, monkeypatch) == _run(objs, conf_text, skip, False, monkeypatch)


@pytest.mark.parametrize("conf_text", [None, RECLAIM])
def test_the_benchmark_dump_small_starts_alike(conf_text: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    objs = _bench_objects(5, nodes=10, gangs=40)
    assert _run(objs, conf_text, True, True, monkeypatch) == _run(objs, conf_text, True, False, monkeypatch)


def test_the_self_check_fails_loudly_on_a_job_built_with_its_starts_that_lacks_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    job_info = DumpObjects.job_info

    def startless(self: DumpObjects, sj: SimJob) -> JobInfo | None:
        ji = job_info(self, sj)
        for t in ji.tasks.values() if ji is not None else ():
            if t.status is TaskStatus.RUNNING:
                t.started_at = None
        return ji

    monkeypatch.setattr(DumpObjects, "job_info", startless)
    monkeypatch.setenv(ENV, "1")
    sim = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3 * 3600.0)
    with pytest.raises(StateCheckError, match="has no start"):
        sim.run()
