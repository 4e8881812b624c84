"""capacity's charged amounts (plugins/capacity/charged.py, docs/semantics.md K50): the lean path (a job
without Pending tasks worked out from its running sums, the answer kept across a phase move of the same
object) gives what `charged_amounts` of a fresh contribution gives, over random jobs whose tasks change
status, whose phase moves and whose minResources change, with amounts exact and not."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from apportion.cluster.model import JobInfo, PodGroupPhase, TaskInfo, TaskStatus
from apportion.plugins.capacity import charged
from apportion.plugins.capacity.charged import charged_amounts, job_amounts, job_amounts_reference
from apportion.plugins.queue_common import _contribution
from apportion.resources import Resource

# integers (exact), and in one resource of three also halves (not) and amounts at the edge of 2**53
_EDGES = (0.5, 2.0**53, 2.0**53 - 1)
exact_amount = st.integers(0, 3).map(lambda i: i * 1000.0)
amount = st.one_of(exact_amount, st.sampled_from(_EDGES))
SCALARS = ["nvidia.com/gpu", "pods", "ephemeral-storage", "cpu"]
statuses = st.sampled_from([TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.SUCCEEDED,
                            TaskStatus.RELEASING, TaskStatus.PIPELINED])
phases = st.sampled_from(list(PodGroupPhase))


@st.composite
def resources(draw: st.DrawFn, scalar_names: list[str]) -> Resource:
    names = draw(st.lists(st.sampled_from(scalar_names), unique=True, max_size=3))
    a = amount if draw(st.integers(0, 2)) == 0 else exact_amount
    return Resource(draw(a), draw(a), {n: draw(a) for n in names})


min_resources = st.one_of(st.none(), resources(SCALARS))
# a task's request never lists a scalar under cpu's name (a minResources may, as Resource(...) allows)
task = st.tuples(resources(SCALARS[:3]), statuses, st.booleans())
step = st.one_of(st.tuples(st.just("phase"), phases), st.tuples(st.just("status"), st.tuples(st.integers(0, 5), statuses)),
                 st.tuples(st.just("min"), min_resources), st.tuples(st.just("ask"), st.none()))


def _job(tasks: list[tuple[Resource, TaskStatus, bool]], mr: Resource | None, min_available: int,
         phase: PodGroupPhase) -> JobInfo:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", min_available=min_available,
                  min_resources=mr, phase=phase)
    for i, (r, status, gated) in enumerate(tasks):
        job.add_task(TaskInfo(uid=f"ns/t{i}", name=f"t{i}", namespace="ns", job="ns/j", resreq=r, status=status,
                              gated=gated and status is TaskStatus.PENDING))
    return job


@settings(max_examples=150, deadline=None)
@given(tasks=st.lists(task, max_size=6), mr=min_resources, min_available=st.integers(0, 4), phase=phases,
       steps=st.lists(step, max_size=8), elastic=st.booleans())
def test_lean_amounts_are_a_fresh_contribution(tasks: list[tuple[Resource, TaskStatus, bool]], mr: Resource | None,
                                               min_available: int, phase: PodGroupPhase,
                                               steps: list[tuple[str, object]], elastic: bool) -> None:
    job = _job(tasks, mr, min_available, phase)
    assert job_amounts(job, elastic) == charged_amounts(_contribution(job), elastic)
    for kind, arg in steps:
        if kind == "phase":
            assert isinstance(arg, PodGroupPhase)
            job.set_phase(arg)
        elif kind == "status":
            assert isinstance(arg, tuple)
            i, status = arg
            if i < len(tasks):
                job.set_status(job.tasks[f"ns/t{i}"], status)
        elif kind == "min":
            assert arg is None or isinstance(arg, Resource)
            job.min_resources = arg
        for e in (elastic, not elastic):
            want = charged_amounts(_contribution(job), e)
            assert job_amounts(job, e) == want
            assert job_amounts_reference(job, e) == want


edge_amount = st.integers(0, 9).map(lambda i: _EDGES[i] if i < len(_EDGES) else i * 1000.0)


@st.composite
def edgy(draw: st.DrawFn, scalar_names: list[str]) -> Resource:
    names = draw(st.lists(st.sampled_from(scalar_names), unique=True, max_size=3))
    return Resource(draw(edge_amount), draw(edge_amount), {n: draw(edge_amount) for n in names})


@settings(max_examples=300, deadline=None)
@example(r=Resource(1000.0, 1000.0, {"nvidia.com/gpu": 1000.0}), mr=Resource(0.0, 0.0, {"nvidia.com/gpu": 0.5}),
         phase=PodGroupPhase.PENDING)  # a part exceeding minResources by a fraction
@example(r=Resource(0.0, 0.0, {"pods": 1000.0}), mr=Resource(0.0, 0.0, {"cpu": 1000.0}),
         phase=PodGroupPhase.INQUEUE)  # a scalar under cpu's name
@given(r=edgy(SCALARS[:3]), mr=st.one_of(st.none(), edgy(SCALARS)),
       phase=st.sampled_from([PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING, PodGroupPhase.PENDING]))
def test_settled_arithmetic(r: Resource, mr: Resource | None, phase: PodGroupPhase) -> None:
    """One running task: inqueue and elastic from the running sum against minResources, each amount
    now and then a half or at the edge of 2**53, every dimension on its own."""
    job = _job([(r, TaskStatus.RUNNING, False)], mr, 1, phase)
    for e in (False, True):
        assert job_amounts(job, e) == charged_amounts(_contribution(job), e)


def test_a_phase_move_keeps_the_answer() -> None:
    """A running gang admitted (Inqueue) then Running charges the same inqueue: the answer is kept."""
    r = Resource(1000.0, 2.0**30, {"pods": 1.0})
    job = _job([(r, TaskStatus.RUNNING, False)] * 2, Resource(1000.0, 2.0**30), 2, PodGroupPhase.INQUEUE)
    first = job_amounts(job, True)
    assert first == ((2000, 2**31, (("pods", 2),)), (2000, 2**31, (("pods", 2),)), None, (1000, 2**30, (("pods", 2),)))
    job.set_phase(PodGroupPhase.RUNNING)
    assert job_amounts(job, True) is first
    job.set_phase(PodGroupPhase.PENDING)  # inqueue no longer charged: worked out again (here alike)
    assert job_amounts(job, True) == first


def test_the_reference_switch(monkeypatch: object) -> None:
    job = _job([(Resource(1000.0, 1.0), TaskStatus.PENDING, False)], Resource(500.0, 1.0), 1,
               PodGroupPhase.INQUEUE)
    want = charged_amounts(_contribution(job), False)
    charged.LEAN_AMOUNTS = False
    try:
        assert job_amounts(job, False) == want
        assert charged.LEAN_KEY not in job.derived
    finally:
        charged.LEAN_AMOUNTS = True
    assert job_amounts(job, False) == want
