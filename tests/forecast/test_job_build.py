"""forecast/job_build.py against its references: `fresh_fields` against `fresh_fields_reference` over
tasks with every field set, the sharing test written out in `build_job`'s loop against `task_again`
(`INLINE_SHARING` False) task by task and over whole forecasts, and every build against
`DumpObjects.build` (the self-check compares them field by field)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_quiet import _answer, _simulator

from apportion.cluster.model import JobInfo, TaskInfo, TaskStatus
from apportion.forecast import job_build
from apportion.forecast.job_build import build_job, fresh_fields, fresh_fields_reference, job_consts
from apportion.forecast.sim import DumpObjects
from apportion.resources import Resource
from apportion.simulation.jobs import SimJob, SimTask
from apportion.simulation.scenario import JobSpec
from apportion.state.check import ENV

_STATUSES = st.sampled_from(list(TaskStatus))
_STARTS = st.one_of(st.none(), st.sampled_from([0.0, 3.0, 5.0]))
_NODES = st.sampled_from(["", "n0", "n1"])


@given(_STATUSES, _NODES, _STARTS, st.sampled_from(["", "n1"]), st.booleans(), st.booleans())
def test_fresh_fields_are_the_references(status: TaskStatus, node: str, started: float | None, nominated: str,
                                         filled: bool, gated: bool) -> None:
    t = TaskInfo(uid="u", name="t-0", namespace="ns", job="ns/j", resreq=Resource(1.0, 2.0, {"nvidia.com/gpu": 1.0}),
                 status=status, node_name=node, started_at=started, gated=gated, labels={"a": "b"},
                 nominated_node=nominated, predicate_key=("k",) if filled else None,
                 kube_requests=(1.0, 2.0, 3.0, 4.0, 5.0) if filled else None)
    if filled:
        t.vec, t.cols, t.initial_status, t.last_tx_status = [1.0], (0,), status, status
    assert fresh_fields(t) == fresh_fields_reference(t)
    a, b = TaskInfo(*fresh_fields(t)), TaskInfo(*fresh_fields_reference(t))
    assert a.vec is None and a.cols is None and a.nominated_node == "" and a.initial_status is None
    assert [getattr(a, n) for n in a.__slots__] == [getattr(b, n) for n in b.__slots__]


def _task(uid: str, status: TaskStatus, node: str, started: float | None) -> TaskInfo:
    return TaskInfo(uid=uid, name=uid, namespace="ns", job="ns/j", resreq=Resource(1.0, 1.0), status=status,
                    node_name=node, started_at=started)


_CASE = st.tuples(_STATUSES, _NODES, _STARTS, _STATUSES, _NODES, _STARTS, _STARTS, st.booleans())


@given(st.lists(_CASE, min_size=1, max_size=6))
def test_the_loop_shares_as_task_again_says(cases: list[tuple[Any, ...]]) -> None:
    """Each task: the last object's (status, node, start), the template's start, the simulation's
    status, node and start, and whether the state's own status still applies."""
    templates, held, sim_tasks, original = [], {}, [], []
    for i, (old_status, old_node, old_start, status, node, tpl_start, sim_start, own) in enumerate(cases):
        uid = f"t{i}"
        templates.append(_task(uid, status, node, tpl_start))
        held[uid] = _task(uid, old_status, old_node, old_start)
        sim_tasks.append(SimTask(index=i, name=uid, status=status, node=node, start=sim_start))
        original.append(status if own else None)
    tpl = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    spec = JobSpec(name="j", queue="q", arrival=0.0, duration=1.0, tasks=len(cases), min_member=1,
                   resources=Resource())
    sj = SimJob(spec=spec, uid="ns/j", queue="q", creation="", priority=0, resreq=Resource(), min_resources=Resource(),
                tasks=sim_tasks)
    built = {}
    for inline in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(job_build, "INLINE_SHARING", inline)
            ji, shared = build_job(sj, tpl, job_consts(tpl), templates, original, held)
        built[inline] = (shared, [ji.tasks[t.uid] is held[t.uid] for t in templates],
                         [(t.status, t.node_name) for t in ji.tasks.values()], ji.counts, ji.version)
    assert built[True] == built[False]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_forecasts_with_the_loop_are_those_with_task_again(case: tuple[list[dict[str, Any]], str | None],
                                                           skip: bool) -> None:
    """Random GPU dumps: the same answers and the same tasks shared, every build compared with
    `DumpObjects.build` (the self-check)."""
    objs, conf_text = case
    runs = []
    for inline in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(ENV, "1")
            mp.setattr(job_build, "INLINE_SHARING", inline)
            sim = _simulator(objs, conf_text, skip, 4 * 3600.0)
            sim.run()
        objects = sim.objects
        assert isinstance(objects, DumpObjects)
        runs.append((_answer(sim), objects.tasks_shared))
    assert runs[0] == runs[1]


_AMOUNT = st.one_of(st.integers(0, 4000).map(float), st.floats(0, 64, allow_nan=False), st.just(2.0**50),
                    st.just(0.1), st.just(-0.0))


@st.composite
def _request(draw: st.DrawFn) -> Resource:
    names = draw(st.lists(st.sampled_from(["nvidia.com/gpu", "example.com/fpga", "pods"]), unique=True, max_size=3))
    return Resource(draw(_AMOUNT), draw(_AMOUNT), {n: draw(_AMOUNT) for n in names})


def _bits(r: Resource) -> tuple[object, ...]:
    return r.cpu.hex(), r.memory.hex(), [(n, v.hex()) for n, v in r.scalars.items()]


def _built_and_added(templates: list[TaskInfo], sim_tasks: list[SimTask],
                     held: dict[str, TaskInfo] | None) -> tuple[JobInfo, JobInfo]:
    """Job `ns/j` built by `build_job` from the task templates (`held`: the tasks it may keep), and the
    same job made by `add_task` of each template's fresh copy (the reference)."""
    tpl = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    spec = JobSpec(name="j", queue="q", arrival=0.0, duration=1.0, tasks=len(templates), min_member=1,
                   resources=Resource())
    sj = SimJob(spec=spec, uid="ns/j", queue="q", creation="", priority=0, resreq=Resource(), min_resources=Resource(),
                tasks=sim_tasks)
    ji, _ = build_job(sj, tpl, job_consts(tpl), templates, [None] * len(templates), held)
    want = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    for t in templates:
        want.add_task(TaskInfo(*fresh_fields(t)))
    return ji, want


@given(st.lists(st.tuples(_request(), _STATUSES, st.booleans()), min_size=1, max_size=6), st.booleans())
def test_the_allocated_sum_written_out_is_add_task_s(cases: list[tuple[Resource, TaskStatus, bool]],
                                                     with_held: bool) -> None:
    """`build_job` sums `allocated` in its loop: the bits and the scalars' order `add_task` gives, and the
    same counts and best-effort count, whether its tasks are made anew or held again."""
    templates, held, sim_tasks = [], {}, []
    for i, (r, status, gated) in enumerate(cases):
        uid = f"t{i}"
        tt = TaskInfo(uid=uid, name=uid, namespace="ns", job="ns/j", resreq=r, status=status, node_name="n0",
                      gated=gated)
        templates.append(tt)
        held[uid] = TaskInfo(*fresh_fields(tt))
        held[uid].status, held[uid].node_name = status, "n0"
        sim_tasks.append(SimTask(index=i, name=uid, status=status, node="n0"))
    ji, want = _built_and_added(templates, sim_tasks, held if with_held else None)
    assert _bits(ji.allocated) == _bits(want.allocated)
    assert (ji.counts, ji.pending_be, ji.gated_tasks, ji.version) == (want.counts, want.pending_be, want.gated_tasks,
                                                                      want.version)


@pytest.mark.parametrize("uids", [("a", "b", "c"), ("a", "b", "a"), ("a", "a")])
def test_a_task_met_twice_is_add_task_s_replacement(uids: tuple[str, ...]) -> None:
    """`build_job` tells a task replaced (`allocated_as_added` False) by the map it ends with being
    shorter than the tasks it added: what `add_task` says, with the same version and counts."""
    templates = [TaskInfo(uid=u, name=f"t{i}", namespace="ns", job="ns/j", resreq=Resource(1.0, 1.0),
                          status=TaskStatus.RUNNING, node_name="n0") for i, u in enumerate(uids)]
    sim_tasks = [SimTask(index=i, name=f"t{i}", status=TaskStatus.RUNNING, node="n0") for i in range(len(uids))]
    ji, want = _built_and_added(templates, sim_tasks, None)
    assert (ji.allocated_as_added, ji.version, ji.counts, list(ji.tasks)) == (
        want.allocated_as_added, want.version, want.counts, list(want.tasks))
