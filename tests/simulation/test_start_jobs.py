"""The simulator's start jobs taken in (`TaskLifecycle._start_jobs`, one heapify) against the reference
that pushes each event: the same events popped in the same order, the same tasks on the same nodes,
the same tables, for random start states (tasks pending, running, releasing, done; ends known or not;
deleted or not; ties in time)."""

from __future__ import annotations

import copy
import heapq
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import TaskStatus
from apportion.resources import Resource
from apportion.simulation.jobs import EV_WAKE, SimJob, SimTask
from apportion.simulation.lifecycle import TaskLifecycle
from apportion.simulation.specs import JobSpec
from apportion.simulation.start import StartJob, StartTask


class _Changes:
    """The recorder's one call here: the queues whose work changed, in order."""

    def __init__(self) -> None:
        self.queues: list[str] = []

    def work_changed(self, queue: str) -> None:
        self.queues.append(queue)


class _Bare(TaskLifecycle):
    """A TaskLifecycle with only what taking start jobs touches."""

    def __init__(self, built_by_objects: bool, t0: float, period: float) -> None:
        self.heap = [(t0 + 5.0, EV_WAKE, "wake-0000", 1, None)]
        self._seq = 1
        self.node_tasks = {"n0": set()}
        self.task_by_key = {}
        self.deleting = set()
        self.t0, self.period = t0, period
        self.jobs, self.active = {}, {}
        self._dirty, self._early_dirty, self._objects_jobs = set(), set(), set()
        self.held: dict[str, str] = {}
        self.objects = object() if built_by_objects else None  # type: ignore[assignment]
        self.recorder = _Changes()  # type: ignore[assignment]


_STATUS = st.sampled_from([TaskStatus.PENDING, TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.SUCCEEDED])


@st.composite
def start_jobs(draw: st.DrawFn) -> list[StartJob]:
    out = []
    for j in range(draw(st.integers(0, 6))):
        n = draw(st.integers(1, 4))
        spec = JobSpec(name=f"j{j}", queue=draw(st.sampled_from(["a", "b"])), arrival=0.0, duration=60.0, tasks=n,
                       min_member=1, resources=Resource())
        sj = SimJob(spec=spec, uid=f"ns/j{j}", queue=spec.queue, creation="", priority=0, resreq=Resource(),
                    min_resources=Resource(), state="active")
        starts = []
        for i in range(n):
            status = draw(_STATUS)
            held = status in (TaskStatus.RUNNING, TaskStatus.RELEASING)
            sj.tasks.append(SimTask(index=i, name=draw(st.sampled_from([f"j{j}-{i}", "same"])), status=status,
                                    node=draw(st.sampled_from(["n0", "n1", "n2"])) if held else "",
                                    attempt=draw(st.integers(0, 1))))
            end = draw(st.none() | st.sampled_from([0.0, 1.0, 5.0, 7.5, 100.0]))
            starts.append(StartTask(key=f"ns/j{j}-{i}", end=end, deleted=draw(st.booleans())))
        out.append(StartJob(job=sj, tasks=starts))
    return out


def _state(sim: _Bare) -> Any:
    heap = list(sim.heap)
    popped = [heapq.heappop(heap) for _ in range(len(heap))]
    return (popped, sim._seq, [(k, sorted(v)) for k, v in sim.node_tasks.items()],
            [(k, v[0].uid, v[1].index) for k, v in sim.task_by_key.items()], sorted(sim.deleting), list(sim.jobs),
            list(sim.active), sorted(sim._dirty), sorted(sim._objects_jobs), sim.recorder.queues)  # type: ignore[attr-defined]


@settings(max_examples=300, deadline=None)
@given(jobs=start_jobs(), built=st.booleans(), t0=st.sampled_from([0.0, 2.5]), period=st.sampled_from([1.0, 2.5]))
def test_one_heapify_is_the_pushes(jobs: list[StartJob], built: bool, t0: float, period: float) -> None:
    fast, ref = _Bare(built, t0, period), _Bare(built, t0, period)
    fast._start_jobs(jobs)
    ref._start_jobs_reference(copy.deepcopy(jobs))
    assert _state(fast) == _state(ref)
