"""forecast/job_delta.py against its reference: a job built from its last object (`build_job_delta`) is
what `build_job` gives with that object's tasks held (the same tasks held again, counts in order, sums
to the bit), job by job over random moves and over whole forecasts (`DELTA_BUILD` off), and the
self-check fails loudly on a delta build that holds a task wrongly (docs/semantics.md F13)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_quiet import RECLAIM, _answer, _bench_objects, _simulator

from apportion.cluster.model import JobInfo, TaskInfo, TaskStatus
from apportion.forecast import job_delta
from apportion.forecast.built_check import check_as_built
from apportion.forecast.job_build import build_job, fresh_fields, job_consts
from apportion.forecast.job_delta import build_job_delta, check_delta, exact_names
from apportion.forecast.sim import DumpObjects
from apportion.resources import Resource
from apportion.simulation.engine import Simulator
from apportion.simulation.jobs import SimJob, SimTask
from apportion.simulation.scenario import JobSpec
from apportion.state.check import ENV, StateCheckError

_STATUSES = st.sampled_from([TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.SUCCEEDED,
                             TaskStatus.BOUND])
_WHOLE = st.one_of(st.integers(0, 64_000).map(float), st.just(0.0), st.just(2.0**40))
_NAMES = st.sampled_from([(), ("pods",), ("nvidia.com/gpu", "pods")])


@st.composite
def _job(draw: st.DrawFn) -> tuple[SimJob, JobInfo, list[TaskInfo], list[TaskStatus | None]]:
    names = draw(_NAMES)
    n = draw(st.integers(1, 8))
    templates, sim_tasks, original = [], [], []
    for i in range(n):
        r = Resource(draw(_WHOLE), draw(_WHOLE), {k: draw(_WHOLE) for k in names})
        own = draw(st.sampled_from([TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.BOUND]))
        tt = TaskInfo(uid=f"u{i}", name=f"j-task-{i}", namespace="ns", job="ns/j", resreq=r, status=own,
                      node_name="" if own is TaskStatus.PENDING else f"n{i % 3}", gated=draw(st.booleans()),
                      started_at=draw(st.one_of(st.none(), st.just(3.0))))
        templates.append(tt)
        status = draw(_STATUSES)
        sim_tasks.append(SimTask(index=i, name=tt.name, status=status, node=f"n{draw(st.integers(0, 2))}",
                                 start=draw(st.sampled_from([0.0, 5.0, 7.0]))))
        original.append(own if draw(st.booleans()) else None)
    spec = JobSpec(name="j", queue="q", arrival=0.0, duration=1.0, tasks=n, min_member=1, resources=Resource())
    sj = SimJob(spec=spec, uid="ns/j", queue="q", creation="", priority=0, resreq=Resource(),
                min_resources=Resource(), tasks=sim_tasks)
    tpl = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", min_available=1)
    return sj, tpl, templates, original


@settings(max_examples=300, deadline=None)
@given(_job(), st.lists(st.tuples(st.integers(0, 7), _STATUSES, st.integers(0, 2), st.sampled_from([5.0, 9.0])),
                        max_size=6))
def test_a_build_from_the_last_object_is_the_whole_build(
        job: tuple[SimJob, JobInfo, list[TaskInfo], list[TaskStatus | None]],
        moves: list[tuple[int, TaskStatus, int, float]]) -> None:
    """A job built, then some of its records moved (a status, a node, a start: the same again too),
    then built again both ways."""
    sj, tpl, templates, original = job
    names = exact_names(templates, sj.tasks)
    assert names is not None
    consts, fresh = job_consts(tpl), [fresh_fields(t) for t in templates]
    prev, _ = build_job(sj, tpl, consts, templates, fresh, original, None, True)
    moved = set()
    for i, status, node, start in moves:
        if i >= len(sj.tasks):
            continue
        moved.add(i)
        original[i] = None
        st_ = sj.tasks[i]
        st_.status = status
        st_.node = "" if status in (TaskStatus.PENDING, TaskStatus.SUCCEEDED) else f"n{node}"
        if status is TaskStatus.RUNNING:
            st_.start = start
    full, shared_full = build_job(sj, tpl, consts, templates, fresh, original, prev.tasks, True)
    ji, shared = build_job_delta(sj, tpl, consts, templates, fresh, original, prev, moved, names)
    assert shared == shared_full
    check_delta(ji, full, prev.tasks)
    check_as_built(ji, full, "built from its last object")
    for k, t in ji.tasks.items():
        assert t.started_at == full.tasks[k].started_at


@pytest.mark.parametrize("amounts, whole", [
    ((1.0, 2.0, {"pods": 1.0}), True),
    ((0.5, 2.0, {"pods": 1.0}), False),          # a fraction: sums depend on their order
    ((1.0, -0.0, {}), False),
    ((1.0, float("inf"), {}), False),
    ((1.0, 2.0**53, {}), False),                 # two tasks' total above 2**53
    ((1.0, 2.0, {"nvidia.com/gpu": 1.0}), False),  # another name than the first task's
])
def test_exact_names_asks_for_whole_amounts_and_one_list_of_names(amounts: tuple[Any, ...], whole: bool) -> None:
    first = TaskInfo(uid="a", name="a", namespace="ns", job="ns/j", resreq=Resource(1.0, 1.0, {"pods": 1.0}),
                     status=TaskStatus.PENDING)
    cpu, memory, scalars = amounts
    if not scalars:
        first.resreq = Resource(1.0, 1.0)
    second = TaskInfo(uid="b", name="b", namespace="ns", job="ns/j", resreq=Resource(cpu, memory, scalars),
                      status=TaskStatus.PENDING)
    sims = [SimTask(index=0, name="a"), SimTask(index=1, name="b")]
    got = exact_names([first, second], sims)
    assert (got is not None) is whole
    assert exact_names([first, second], list(reversed(sims))) is None  # records by position only


def _objects(sim: Simulator) -> DumpObjects:
    assert isinstance(sim.objects, DumpObjects)
    return sim.objects


def _twins(objs: list[dict[str, Any]], conf_text: str | None, horizon: float, skip: bool = True) -> DumpObjects:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        delta = _simulator(objs, conf_text, skip, horizon)
        delta.run()
        mp.setattr(job_delta, "DELTA_BUILD", False)
        whole = _simulator(objs, conf_text, skip, horizon)
        whole.run()
    assert _answer(delta) == _answer(whole)
    assert _objects(whole).built_from_last == 0
    assert _objects(delta).tasks_shared == _objects(whole).tasks_shared
    return _objects(delta)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_building_from_the_last_object_changes_no_forecast(case: tuple[list[dict[str, Any]], str | None],
                                                          skip: bool) -> None:
    """Random GPU dumps (flat or tree capacity, Volcano's default conf with proportion; sessions
    skipped or every one run)."""
    objs, conf_text = case
    _twins(objs, conf_text, 4 * 3600.0, skip)


@pytest.mark.parametrize("seed, reclaim", [(0, False), (1, True)])
def test_jobs_are_built_from_their_last_object_on_the_benchmark_shape(seed: int, reclaim: bool) -> None:
    objects = _twins(_bench_objects(seed, nodes=10, gangs=40), RECLAIM if reclaim else None, 3 * 3600.0)
    assert objects.built_from_last > 0


def test_the_self_check_compares_delta_builds_with_whole_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1")
    checked = _simulator(_bench_objects(2, nodes=10, gangs=40), RECLAIM, True, 3 * 3600.0)
    checked.run()
    assert _objects(checked).built_from_last > 0


def test_the_self_check_fails_loudly_on_a_task_held_wrongly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A moved task of the last object held again whatever its status now."""
    monkeypatch.setenv(ENV, "1")
    monkeypatch.setattr(job_delta, "task_again", lambda *args: True)
    sim = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3 * 3600.0)
    with pytest.raises(StateCheckError, match="differs from a fresh build|built from its last object"):
        sim.run()
