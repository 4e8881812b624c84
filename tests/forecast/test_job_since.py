"""forecast/job_since.py and `copy_task` against their references (docs/semantics.md F17): `copy_task`
against `copy_task_reference` slot by slot; a first build (`build_first`) against `build_job`;
`JobShape.allocated` against `build_job`'s loop to the bit over amounts of every kind; chains of builds of random jobs (tasks changed at random between builds,
the last object moved by a session or not) built again from the last object and by `build_job`,
compared by `check_again` (every field, the maps' order, `allocated`'s bits, the tasks held again by
identity); and the benchmark's forecast small with `SINCE_LAST` and `FIRST_AS_STATE` on and off."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_quiet import RECLAIM, _answer, _bench_objects, _simulator

from apportion.cluster.model import RUNNING, SUCCEEDED, JobInfo, TaskInfo, TaskStatus
from apportion.forecast import job_since
from apportion.forecast import sim as forecast_sim
from apportion.forecast.job_build import build_job, copy_task, copy_task_reference, job_consts
from apportion.forecast.job_since import build_again, build_first, check_again, job_shape, job_shape_reference
from apportion.forecast.sim import DumpObjects
from apportion.resources import Resource
from apportion.simulation.jobs import SimJob, SimTask
from apportion.simulation.scenario import JobSpec
from apportion.state.check import ENV, StateCheckError

_STATUSES = st.sampled_from(list(TaskStatus))
_AMOUNT = st.one_of(st.integers(0, 4000).map(float), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0.1, -0.0, 2.0**50, 2.0**53 + 2, 1e308]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_STATUSES, st.sampled_from(["", "n1"]), st.one_of(st.none(), st.floats()), st.booleans(), st.booleans())
def test_copy_task_is_the_reference(status: TaskStatus, node: str, started: float | None, filled: bool,
                                    gated: bool) -> None:
    t = TaskInfo(uid="u", name="t-0", namespace="ns", job="ns/j", resreq=Resource(1.0, 2.0, {"x": 1.0}),
                 status=TaskStatus.PENDING, node_name="n0", started_at=started, gated=gated, labels={"a": "b"},
                 nominated_node="n2" if filled else "", predicate_key=("k",) if filled else None,
                 kube_requests=(1.0, 2.0, 3.0, 4.0, 5.0) if filled else None)
    if filled:
        t.vec, t.cols, t.initial_status, t.last_tx_status = [1.0], (0,), status, status
    a, b = copy_task(t, status, node), copy_task_reference(t, status, node)
    assert all(getattr(a, n) is getattr(b, n) for n in TaskInfo.__slots__)
    assert (a.status, a.node_name, a.vec, a.nominated_node) == (status, node, None, "")


def _job(requests: list[Resource], statuses: list[TaskStatus]) -> tuple[SimJob, JobInfo, list[TaskInfo]]:
    templates = [TaskInfo(uid=f"u{i}", name=f"t-{i}", namespace="ns", job="ns/j", resreq=r, status=s,
                          node_name="n0" if s is RUNNING else "") for i, (r, s) in enumerate(zip(requests, statuses))]
    spec = JobSpec(name="j", queue="q", arrival=0.0, duration=1.0, tasks=len(templates), min_member=1,
                   resources=Resource())
    sj = SimJob(spec=spec, uid="ns/j", queue="q", creation="", priority=0, resreq=Resource(),
                min_resources=Resource(),
                tasks=[SimTask(index=i, name=t.name, status=t.status, node=t.node_name, start=5.0)
                       for i, t in enumerate(templates)])
    return sj, JobInfo(uid="ns/j", name="j", namespace="ns", queue="q"), templates


def _bits(r: Resource) -> tuple[object, ...]:
    return r.cpu.hex(), r.memory.hex(), [(n, v.hex()) for n, v in r.scalars.items()]


@st.composite
def _request(draw: st.DrawFn) -> Resource:
    names = draw(st.lists(st.sampled_from(["nvidia.com/gpu", "pods", "x"]), unique=True, max_size=3))
    return Resource(draw(_AMOUNT), draw(_AMOUNT), {n: draw(_AMOUNT) for n in names})


def _copy(r: Resource) -> Resource:
    """An equal request whose amounts are other float objects (a NaN's copy is then not equal)."""
    return Resource(r.cpu * 1.0, r.memory * 1.0, {n: v * 1.0 for n, v in r.scalars.items()})


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_request(), st.lists(_STATUSES, min_size=1, max_size=8), st.sampled_from(["one", "clone", "copy"]))
def test_allocated_from_the_shape_is_the_loop_s(r: Resource, statuses: list[TaskStatus], how: str) -> None:
    """`JobShape.allocated` over the allocated tasks' count: `build_job`'s sum to the bit (NaN and the
    infinities too), whether the tasks share one request object, each has a clone (the same float
    objects) or a copy (other float objects, equal); `job_shape` is its reference's."""
    requests = [r if how == "one" else r.clone() if how == "clone" else _copy(r) for _ in statuses]
    sj, tpl, templates = _job(requests, statuses)
    shape = job_shape(sj, templates)
    ref = job_shape_reference(sj, templates)
    assert (shape is None) == (ref is None)
    if how == "copy" and len(statuses) > 1 and any(v != v for v in (r.cpu, r.memory, *r.scalars.values())):
        assert shape is None  # copies of a NaN are not equal
    if shape is None or ref is None:
        return
    assert (shape.uids, shape.request, shape.empty, shape.gated) == (ref.uids, ref.request, ref.empty, ref.gated)
    ji, _, _ = build_job(sj, tpl, job_consts(tpl), templates, [None] * len(templates), None)
    k = sum(c for s, c in ji.counts.items() if s in {TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND,
                                                      TaskStatus.RUNNING})
    assert _bits(shape.allocated(k)) == _bits(ji.allocated)
    assert shape.allocated(k) is not shape.allocated(k)


@pytest.mark.parametrize("loop", [False, True])
def test_shapes_that_build_again_would_not_build_alike(loop: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_since, "JOB_SHAPE_LOOP", loop)
    sj, _, templates = _job([Resource(1.0, 2.0), Resource(1.0, 3.0)], [RUNNING, RUNNING])
    assert job_shape(sj, templates) is None  # requests differ
    sj, _, templates = _job([Resource(1.0, 2.0, {"a": 1.0, "b": 1.0}), Resource(1.0, 2.0, {"b": 1.0, "a": 1.0})],
                            [RUNNING, RUNNING])
    assert job_shape(sj, templates) is None  # the scalars in another order
    sj, _, templates = _job([Resource(1.0, 2.0)] * 2, [RUNNING, RUNNING])
    templates[1].uid = "u0"
    assert job_shape(sj, templates) is None  # a uid met twice
    sj, _, templates = _job([Resource(1.0, 2.0)] * 2, [RUNNING, RUNNING])
    templates[0].started_at = math.nan
    assert job_shape(sj, templates) is None
    sj, _, templates = _job([Resource(1.0, 2.0)] * 2, [RUNNING, RUNNING])
    sj.tasks[0].index, sj.tasks[1].index = 1, 0
    assert job_shape(sj, templates) is None
    sj, _, templates = _job([Resource(1.0, 2.0, {"a": 1.0}), Resource(1.0, 2.0, {"a": 1})], [RUNNING, RUNNING])
    assert job_shape(sj, templates) is None  # an amount equal but an int
    sj, _, templates = _job([Resource(1.0, 2.0), Resource(1.0, 2.0)], [RUNNING, RUNNING])
    templates[1].gated = True
    shape = job_shape(sj, templates)
    assert shape is not None and shape.gated == 1 and shape.uids == ("u0", "u1")


_STEP = st.tuples(st.lists(st.tuples(st.integers(0, 7), st.sampled_from([TaskStatus.PENDING, RUNNING, SUCCEEDED,
                                                                          TaskStatus.RELEASING]),
                                     st.sampled_from(["n0", "n1"]), st.sampled_from([1.0, 2.0, 5.0, None]))),
                  st.booleans())


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_request(), st.lists(st.sampled_from([TaskStatus.PENDING, RUNNING]), min_size=1, max_size=8),
       st.lists(_STEP, max_size=6))
def test_chains_of_builds_again_are_build_job_s(r: Resource, statuses: list[TaskStatus],
                                                steps: list[tuple[list[tuple[int, TaskStatus, str, float | None]],
                                                                  bool]]) -> None:
    """A job built, then at each step some tasks changed in the simulation (status, node, start) and
    the job built again: from the last object over the changed tasks when no session moved it (else by
    `build_job`, as `DumpObjects` does), every build again compared with `build_job`'s."""
    sj, tpl, templates = _job([r] * len(statuses), statuses)
    shape = job_shape(sj, templates)
    assert shape is not None
    consts = job_consts(tpl)
    original: list[TaskStatus | None] = [t.status for t in templates]
    last, _, sound = build_job(sj, tpl, consts, templates, original, None, True)
    for changes, moved in steps:
        changed = set()
        for i, status, node, start in changes:
            if i >= len(statuses):
                continue
            st_ = sj.tasks[i]
            original[i] = None
            st_.status, st_.node, st_.start = status, node, start
            changed.add(i)
        if moved:
            t = next(iter(last.tasks.values()))
            last.set_status(t, TaskStatus.PIPELINED if t.status is not TaskStatus.PIPELINED else TaskStatus.PENDING)
        held = last.tasks if last.allocated_as_added else None
        ref, ref_shared, ref_sound = build_job(sj, tpl, consts, templates, original, held, True)
        if held is not None and sound:
            ji, shared, sound = build_again(sj, tpl, consts, shape, templates, original, last, changed)
            check_again(ji, shared, ref, ref_shared, held)
            assert sound == ref_sound
            last = ji
        else:
            last, sound = ref, ref_sound


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_request(), _STATUSES, st.booleans(), st.one_of(st.none(), st.just(3.0))), min_size=1,
                max_size=6), st.booleans(), st.booleans())
def test_a_first_build_is_build_job_s(cases: list[tuple[Resource, TaskStatus, bool, float | None]], starts: bool,
                                      moved: bool) -> None:
    """A job none of whose tasks changed, its template made by `add_task` of its tasks (as the kube
    build makes it): `build_first` gives `build_job`'s object; a template a status was set on since
    (`moved`) is left to `build_job`."""
    sj, _, templates = _job([r for r, *_ in cases], [s for _, s, *_ in cases])
    for tt, (_, _, gated, started) in zip(templates, cases):
        tt.gated, tt.started_at = gated, started
    tpl = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    for tt in templates:
        tpl.add_task(tt)
    if moved:
        tpl.set_status(templates[0], TaskStatus.PIPELINED if templates[0].status is not TaskStatus.PIPELINED
                       else TaskStatus.PENDING)
    original: list[TaskStatus | None] = [t.status for t in templates]
    first = build_first(sj, tpl, job_consts(tpl), templates, starts)
    if moved:
        assert first is None
        return
    assert first is not None
    ref, _, ref_sound = build_job(sj, tpl, job_consts(tpl), templates, original, None, starts)
    check_again(first[0], 0, ref, 0, {})
    assert first[1] == ref_sound


def test_check_again_fails_loudly_on_a_difference() -> None:
    sj, tpl, templates = _job([Resource(1.0, 2.0)] * 3, [RUNNING] * 3)
    consts = job_consts(tpl)
    original: list[TaskStatus | None] = [RUNNING] * 3
    last, _, _ = build_job(sj, tpl, consts, templates, original, None, True)
    original[1], sj.tasks[1].status, sj.tasks[1].node = None, SUCCEEDED, ""
    shape = job_shape(sj, templates)
    assert shape is not None
    ji, shared, _ = build_again(sj, tpl, consts, shape, templates, original, last, set())  # the change not told
    ref, ref_shared, _ = build_job(sj, tpl, consts, templates, original, last.tasks, True)
    with pytest.raises(StateCheckError, match="built again from its last object differs"):
        check_again(ji, shared, ref, ref_shared, last.tasks)


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_forecasts_built_again_since_the_last_object_are_the_reference_s(seed: int) -> None:
    """The benchmark's shape small with reclaim, with `SINCE_LAST` and `FIRST_AS_STATE` on (under the
    self-check: each such build compared with `build_job`'s) and off: the same answer and the same
    tasks held again."""
    runs = []
    again = []

    def counted(*args: Any) -> Any:
        again.append(args[0].uid)
        return build_again(*args)

    for since in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(job_since, "SINCE_LAST", since)
            mp.setattr(job_since, "FIRST_AS_STATE", since)
            mp.setattr(forecast_sim, "build_again", counted)
            if since:
                mp.setenv(ENV, "1")
            else:
                mp.delenv(ENV, raising=False)
            sim = _simulator(_bench_objects(seed, nodes=6, gangs=16), RECLAIM, True, 1800.0)
            sim.run()
        objects = sim.objects
        assert isinstance(objects, DumpObjects)
        runs.append((_answer(sim), objects.tasks_shared))
        assert bool(again) == since
        again.clear()
    assert runs[0] == runs[1]
