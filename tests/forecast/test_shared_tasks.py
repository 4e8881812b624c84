"""A forecast's job built again after a task of it changed status keeps the tasks of its last object
that a fresh build gives alike (forecast/sim.py `DumpObjects.build_fast`, forecast/job_build.py `task_again`): the
forecast is the one that builds every task anew (`share_tasks=False`, the reference), and under the
self-check every such build equals a fresh one but for what sessions fill in."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_quiet import RECLAIM, _answer, _bench_objects, _simulator

from apportion.cluster.model import JobInfo, TaskInfo, TaskStatus
from apportion.forecast import job_build
from apportion.forecast.built_check import check_starts
from apportion.forecast.job_build import task_again
from apportion.forecast.sim import DumpObjects
from apportion.resources import Resource
from apportion.simulation.engine import Simulator
from apportion.simulation.jobs import SimTask
from apportion.state.check import ENV, StateCheckError


def _objects(sim: Simulator) -> DumpObjects:
    objects = sim.objects
    assert isinstance(objects, DumpObjects)
    return objects


def _twins(objs: list[dict[str, Any]], conf_text: str | None, horizon: float, skip: bool = True) -> DumpObjects:
    """The forecast sharing tasks and the one building every task anew: the same answer. Returns the
    first one's objects."""
    shared = _simulator(objs, conf_text, skip, horizon)
    shared.run()
    plain = _simulator(objs, conf_text, skip, horizon)
    _objects(plain).share_tasks = False
    plain.run()
    assert _answer(shared) == _answer(plain)
    assert _objects(plain).tasks_shared == 0
    return _objects(shared)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_sharing_tasks_changes_no_forecast(case: tuple[list[dict[str, Any]], str | None], skip: bool) -> None:
    """Random GPU dumps (flat or tree capacity, Volcano's default conf with proportion; sessions
    skipped or every one run)."""
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        _twins(objs, conf_text, 4 * 3600.0, skip)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.booleans())
def test_sharing_tasks_on_the_benchmark_shape(seed: int, reclaim: bool) -> None:
    """The benchmark's shape small, any seed: the same answer with and without sharing (a seed may
    share nothing: with reclaim, seed 4875's rebuilt gangs all had a task placed or evicted since)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        _twins(_bench_objects(seed, nodes=10, gangs=40), RECLAIM if reclaim else None, 3 * 3600.0)


@pytest.mark.parametrize("seed, reclaim", [(0, False), (0, True), (1, True)])
def test_tasks_are_shared_on_the_benchmark_shape(seed: int, reclaim: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gang whose task ends is built again: its other tasks are the last object's."""
    monkeypatch.delenv(ENV, raising=False)
    objects = _twins(_bench_objects(seed, nodes=10, gangs=40), RECLAIM if reclaim else None, 3 * 3600.0)
    assert objects.tasks_shared > 0


def test_the_self_check_compares_builds_that_share_with_fresh_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    plain = _simulator(_bench_objects(2, nodes=10, gangs=40), RECLAIM, True, 3 * 3600.0)
    plain.run()
    monkeypatch.setenv(ENV, "1")
    checked = _simulator(_bench_objects(2, nodes=10, gangs=40), RECLAIM, True, 3 * 3600.0)
    checked.run()
    assert _objects(checked).tasks_shared > 0
    assert _answer(checked) == _answer(plain)


def test_the_self_check_fails_loudly_on_a_task_shared_wrongly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A task of the last object handed out again whatever its status now: not what a fresh build gives."""
    monkeypatch.setenv(ENV, "1")

    def any_task(t: TaskInfo, status: TaskStatus, node: str, tt: TaskInfo, st: SimTask) -> bool:
        return True

    monkeypatch.setattr(job_build, "INLINE_SHARING", False)
    monkeypatch.setattr(job_build, "task_again", any_task)
    sim = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3 * 3600.0)
    with pytest.raises(StateCheckError, match="built fast differs from a fresh build"):
        sim.run()


@pytest.mark.parametrize("template, old, status, start, again", [
    (None, None, TaskStatus.RUNNING, 5.0, True),        # give_starts gives both the simulation's start
    (None, 5.0, TaskStatus.RUNNING, 5.0, True),
    (None, 4.0, TaskStatus.RUNNING, 5.0, False),        # started again since
    (None, 5.0, TaskStatus.PENDING, 5.0, False),        # a fresh pending task has none
    (3.0, 3.0, TaskStatus.RUNNING, 5.0, True),          # the template's start is kept
    (3.0, None, TaskStatus.RUNNING, 5.0, False),
    (None, None, TaskStatus.PENDING, None, True),
])
def test_a_task_is_shared_only_with_the_start_a_fresh_build_ends_with(
        template: float | None, old: float | None, status: TaskStatus, start: float | None, again: bool) -> None:
    def task(started: float | None, st: TaskStatus) -> TaskInfo:
        return TaskInfo(uid="u", name="t", namespace="ns", job="ns/j", resreq=Resource(), status=st,
                        node_name="n0", started_at=started)

    sim_task = SimTask(index=0, name="t", status=status, node="n0", start=start)
    assert task_again(task(old, status), status, "n0", task(template, TaskStatus.PENDING),
                                    sim_task) is again
    # another status or node: never
    assert not task_again(task(old, status), TaskStatus.SUCCEEDED, "n0", task(template, status),
                                        sim_task)
    assert not task_again(task(old, status), status, "n1", task(template, status), sim_task)


@pytest.mark.parametrize("template, built, status, start, ok", [
    (None, 999.0, TaskStatus.RUNNING, 999.0, True),     # reused: the simulation's start, as give_starts gives
    (None, None, TaskStatus.RUNNING, 999.0, True),      # fresh: give_starts gives it next
    (None, 100.0, TaskStatus.RUNNING, 999.0, False),    # reused with a start the simulation never gave
    (3.0, 3.0, TaskStatus.RUNNING, 999.0, True),        # the template's own start
    (3.0, 999.0, TaskStatus.RUNNING, 999.0, False),
    (None, 999.0, TaskStatus.PENDING, 999.0, False),    # a pending task starts nowhere
])
def test_the_self_check_compares_the_starts_of_tasks_built_fast(
        template: float | None, built: float | None, status: TaskStatus, start: float | None, ok: bool) -> None:
    """`check_as_built` leaves the starts out (sessions fill them in); `check_starts` compares what a
    task built fast starts at with what a fresh build starts at once given its start."""
    tt = TaskInfo(uid="u", name="t", namespace="ns", job="ns/j", resreq=Resource(), status=TaskStatus.PENDING,
                  node_name="", started_at=template)
    t = TaskInfo(uid="u", name="t", namespace="ns", job="ns/j", resreq=Resource(), status=status,
                 node_name="n0", started_at=built)
    ji = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", min_available=1)
    ji.tasks = {"u": t}
    sj = SimpleNamespace(tasks=[SimTask(index=0, name="t", status=status, node="n0", start=start)])
    if ok:
        check_starts(ji, sj, [tt])  # type: ignore[arg-type]
    else:
        with pytest.raises(StateCheckError, match="built fast starts at"):
            check_starts(ji, sj, [tt])  # type: ignore[arg-type]
