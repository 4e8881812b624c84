"""A forecast's job builds give a running task made anew its start (semantics F10, forecast/job_build.py
`STARTS_AT_BUILD`), which `give_starts` gave it at the snapshot: the switch on and off give the same
forecasts and every snapshot's tasks the same starts; the builds give starts only while the simulator's
records by task key name each start task's own (`Simulator.start_keys_own`)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fit import start_of
from test_forecast_sim import busy_dumps
from test_quiet import RECLAIM, _answer, _bench_objects, _simulator

from apportion.cluster.model import TaskStatus
from apportion.cluster.snapshot import Snapshot
from apportion.forecast import job_build
from apportion.forecast.sim import DumpObjects, forecast_simulator
from apportion.resources import Resource
from apportion.simulation.engine import Simulator
from apportion.simulation.jobs import NAMESPACE
from apportion.simulation.scenario import JobSpec
from apportion.state.check import ENV

from k8s import node, pod, podgroup


def run_recording_starts(mp: pytest.MonkeyPatch, objs: list[dict[str, Any]], conf_text: str | None,
                         skip: bool) -> tuple[Simulator, list[dict[str, tuple[Any, ...]]]]:
    """A forecast of `objs` run four hours under `mp`'s switches, and, snapshot by snapshot, every task's
    start (`give_starts` done)."""
    seen: list[dict[str, tuple[Any, ...]]] = []
    snapshot = Simulator._snapshot

    def recording(self: Simulator) -> Snapshot:
        snap = snapshot(self)
        seen.append({uid: tuple((k, t.status, t.started_at) for k, t in ji.tasks.items())
                     for uid, ji in snap.jobs.items()})
        return snap

    mp.setattr(Simulator, "_snapshot", recording)
    sim = _simulator(objs, conf_text, skip, 4 * 3600.0)
    sim.run()
    return sim, seen


def _run(objs: list[dict[str, Any]], conf_text: str | None, skip: bool, at_build: bool, checking: bool,
         monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ...]:
    """The forecast's answer and, snapshot by snapshot, every task's start (`give_starts` done)."""
    with monkeypatch.context() as mp:
        mp.setattr(job_build, "STARTS_AT_BUILD", at_build)
        if checking:
            mp.setenv(ENV, "1")
        else:
            mp.delenv(ENV, raising=False)
        sim, seen = run_recording_starts(mp, objs, conf_text, skip)
    objects = sim.objects
    assert isinstance(objects, DumpObjects) and objects.starts_known
    return _answer(sim), seen, objects.tasks_shared


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(busy_dumps(), st.booleans(), st.booleans())
def test_starts_given_at_build_are_those_given_at_the_snapshot(monkeypatch: pytest.MonkeyPatch,
                                                               case: tuple[list[dict[str, Any]], str | None],
                                                               skip: bool, checking: bool) -> None:
    """Random GPU dumps (their running pods have no start of their own: the simulation's is given), with
    and without skipping and the self-check: the same forecast, the same starts at every snapshot and
    the same tasks shared from build to build."""
    objs, conf_text = case
    assert _run(objs, conf_text, skip, True, checking, monkeypatch) == _run(objs, conf_text, skip, False, checking,
                                                                            monkeypatch)


@pytest.mark.parametrize("conf_text", [None, RECLAIM])
def test_the_benchmark_dump_small_starts_alike(conf_text: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's shape small (with reclaim: evicted tasks start again): the same forecast and starts."""
    objs = _bench_objects(3, nodes=10, gangs=40)
    fast = _run(objs, conf_text, True, True, False, monkeypatch)
    assert fast == _run(objs, conf_text, True, False, False, monkeypatch)
    assert fast[0] == _run(objs, conf_text, True, True, True, monkeypatch)[0]
    # the run builds jobs after the first session, whose running tasks have the simulation's starts
    assert any(t[1] is TaskStatus.RUNNING and t[2] is not None for s in fast[1][1:] for ts in s.values() for t in ts)


def test_a_key_shared_with_an_arrival_leaves_the_starts_to_the_snapshot() -> None:
    """A dump's pod whose key is an arrival's task's: the simulator's record under that key is one task's
    only, so the builds give no start (`give_starts` does, as before)."""
    objs = [
        node("n0"),
        podgroup("a", ns=NAMESPACE, phase="Running"),
        pod("z0-task-0", "a", cpu=1, node_name="n0", ns=NAMESPACE, phase="Running"),
    ]
    for clash in (True, False):
        state = start_of(objs)
        state.arrivals = [JobSpec(name="z0" if clash else "z1", queue="default", arrival=state.t0 + 60.0,
                                  duration=60.0, tasks=1, min_member=1, resources=Resource.from_natural({"cpu": 1}))]
        sim = forecast_simulator(state, horizon=600.0)
        assert sim.start_keys_own is not clash
        assert isinstance(sim.objects, DumpObjects) and sim.objects.starts_known is not clash
        sim.run()
