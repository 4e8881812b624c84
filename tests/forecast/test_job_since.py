"""forecast/job_since.py and `copy_task` against their references (docs/semantics.md F17): `copy_task`
against `copy_task_reference` slot by slot; a first build (`build_first`) against `build_job`, compared
by `check_build` (every field, the maps' order, `allocated`'s bits, the tasks field by field); and the
benchmark's forecast small with `FIRST_AS_STATE` on and off."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_quiet import RECLAIM, _answer, _bench_objects, _simulator

from apportion.cluster.model import RUNNING, JobInfo, TaskInfo, TaskStatus
from apportion.forecast import job_since
from apportion.forecast import sim as forecast_sim
from apportion.forecast.job_build import build_job, copy_task, copy_task_reference, job_consts
from apportion.forecast.job_since import build_first, check_build
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


@st.composite
def _request(draw: st.DrawFn) -> Resource:
    names = draw(st.lists(st.sampled_from(["nvidia.com/gpu", "pods", "x"]), unique=True, max_size=3))
    return Resource(draw(_AMOUNT), draw(_AMOUNT), {n: draw(_AMOUNT) for n in names})


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
    ref, _ = build_job(sj, tpl, job_consts(tpl), templates, original, None, starts)
    check_build(first, ref)


def test_check_build_fails_loudly_on_a_difference() -> None:
    """A template whose counts are not its tasks' (its bookkeeping as added otherwise): `build_first`
    takes them, and the self-check names the difference."""
    sj, tpl, templates = _job([Resource(1.0, 2.0)] * 3, [RUNNING] * 3)
    for tt in templates:
        tpl.add_task(tt)
    tpl.counts[RUNNING] += 1
    original: list[TaskStatus | None] = [RUNNING] * 3
    first = build_first(sj, tpl, job_consts(tpl), templates, True)
    assert first is not None
    ref, _ = build_job(sj, tpl, job_consts(tpl), templates, original, None, True)
    with pytest.raises(StateCheckError, match="built from its template's bookkeeping differs from build_job's in counts"):
        check_build(first, ref)


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_forecasts_with_first_builds_from_the_templates_are_the_reference_s(seed: int) -> None:
    """The benchmark's shape small with reclaim, with `FIRST_AS_STATE` on (under the self-check: each
    first build compared with `build_job`'s) and off: the same answer and the same tasks held again."""
    runs = []
    firsts = []

    def counted(*args: Any) -> Any:
        firsts.append(args[0].uid)
        return build_first(*args)

    for first in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(job_since, "FIRST_AS_STATE", first)
            mp.setattr(forecast_sim, "build_first", counted)
            if first:
                mp.setenv(ENV, "1")
            else:
                mp.delenv(ENV, raising=False)
            sim = _simulator(_bench_objects(seed, nodes=6, gangs=16), RECLAIM, True, 1800.0)
            sim.run()
        objects = sim.objects
        assert isinstance(objects, DumpObjects)
        runs.append((_answer(sim), objects.tasks_shared))
        assert bool(firsts) == first
        firsts.clear()
    assert runs[0] == runs[1]
