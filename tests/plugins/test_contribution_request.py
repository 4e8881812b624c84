"""plugins/queue_common.py's `_contribution` takes a job without Pending tasks' request from its allocated
sum (`REQUEST_IS_ALLOCATED`): against the task-by-task loop (the switch off) over random jobs, bit for
bit and in the order of the scalars, with tasks added and statuses moved (the running sum as added, or
summed again)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apportion.cluster.model import JobInfo, PodGroupPhase, TaskInfo, TaskStatus
from apportion.plugins import queue_common
from apportion.plugins.queue_common import JobContribution, _contribution
from apportion.resources import Resource

_AMOUNT = st.one_of(st.integers(0, 4000).map(float), st.floats(0, 64, allow_nan=False), st.just(2.0**50),
                    st.just(0.1), st.just(-0.0))
_NAMES = ["nvidia.com/gpu", "example.com/fpga", "pods"]


@st.composite
def _requests(draw: st.DrawFn) -> Resource:
    names = draw(st.lists(st.sampled_from(_NAMES), unique=True, max_size=3))
    return Resource(draw(_AMOUNT), draw(_AMOUNT), {n: draw(_AMOUNT) for n in names})


def _bits(r: Resource) -> tuple[object, ...]:
    def b(v: float) -> bytes:
        return struct.pack("<d", v)
    return b(r.cpu), b(r.memory), [(n, b(v)) for n, v in r.scalars.items()]


def _of(c: JobContribution) -> tuple[object, ...]:
    return tuple(_bits(r) for r in (c.allocated, c.request, c.inqueue, c.elastic))


@given(st.lists(st.tuples(_requests(), st.sampled_from(list(TaskStatus))), min_size=0, max_size=6),
       st.lists(st.tuples(st.integers(0, 5), st.sampled_from(list(TaskStatus))), max_size=4),
       st.sampled_from(list(PodGroupPhase)), st.one_of(st.none(), _requests()), st.integers(0, 6))
def test_the_request_of_a_job_without_pending_tasks_is_its_allocated_sum(
        tasks: list[tuple[Resource, TaskStatus]], moves: list[tuple[int, TaskStatus]], phase: PodGroupPhase,
        min_resources: Resource | None, min_available: int) -> None:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", min_available=min_available,
                  min_resources=min_resources, phase=phase)
    for i, (r, status) in enumerate(tasks):
        job.add_task(TaskInfo(uid=f"t{i}", name=f"j-{i}", namespace="ns", job="ns/j", resreq=r, status=status))
    order = list(job.tasks.values())
    for i, status in moves:
        if order:
            job.set_status(order[i % len(order)], status)
    got = {}
    for on in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(queue_common, "REQUEST_IS_ALLOCATED", on)
            got[on] = _of(_contribution(job))
    assert got[True] == got[False]
