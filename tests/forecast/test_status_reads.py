"""The statuses a pod's read (`kube.pods._task_status`) and the start state (`forecast.start._task_start`)
read once, as module constants, instead of from the Enum class at each call: the same members, and the
same answers as the reads through the class (the references here) for any phase, deletion, node, status
and annotations."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import JobInfo, TaskInfo, TaskStatus
from apportion.errors import InputError
from apportion.forecast import start
from apportion.forecast.runtime import DURATION_KEY, EXPECTED_END_KEY
from apportion.kube import pods
from apportion.resources import Resource

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _task_status_reference(phase: str, deleting: bool, node: str) -> TaskStatus:
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if node else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


def _task_start_reference(index: int, t: TaskInfo, job: JobInfo, now: datetime) -> start.TaskStart:
    """`_task_start` as it read the statuses through the class (no stamp memo: `times` None)."""
    if t.status in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
        return start.TaskStart(index, t, "done")
    if t.status in (TaskStatus.PENDING, TaskStatus.PIPELINED) or not t.node_name:
        return start.TaskStart(index, t, "pending", runtime=start._own_runtime(t, job))
    status = "releasing" if t.status is TaskStatus.RELEASING else "running"
    started = start.try_time(t.start_time)
    elapsed = max(0.0, (now - started).total_seconds()) if started is not None else 0.0
    runtime = start._own_runtime(t, job)
    end = start._annotation(t, job, EXPECTED_END_KEY)
    if end is not None:
        left = start._within((start.parse_time(end[0], end[1]) - now).total_seconds(), end[1])
        return start.TaskStart(index, t, status, t.node_name, elapsed, max(0.0, left), runtime, start.EXPECTED_END)
    if runtime is not None and started is not None:
        return start.TaskStart(index, t, status, t.node_name, elapsed, max(0.0, runtime - elapsed), runtime,
                               start.DURATION)
    return start.TaskStart(index, t, status, t.node_name, elapsed, None, runtime,
                           start.BASIS_RELEASING if status == "releasing" else start.BASIS_UNKNOWN)


def test_the_constants_are_the_members() -> None:
    assert start._FINISHED == (TaskStatus.SUCCEEDED, TaskStatus.FAILED)
    assert start._WAITING == (TaskStatus.PENDING, TaskStatus.PIPELINED)
    assert start._RELEASING is TaskStatus.RELEASING
    assert (pods._RUNNING, pods._RELEASING, pods._BOUND, pods._PENDING, pods._SUCCEEDED, pods._FAILED,
            pods._UNKNOWN) == (TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.BOUND, TaskStatus.PENDING,
                               TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.UNKNOWN)


@settings(max_examples=60, deadline=None)
@given(phase=st.sampled_from(["Running", "Pending", "Succeeded", "Failed", "Unknown", "", "running"]) | st.text(max_size=4),
       deleting=st.booleans(), node=st.sampled_from(["", "n1"]))
def test_task_status_is_the_reference(phase: str, deleting: bool, node: str) -> None:
    assert pods._task_status(phase, deleting, node) is _task_status_reference(phase, deleting, node)


_STAMPS = st.sampled_from(["", "2025-12-31T23:00:00Z", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "bad"])
_ANNOTATIONS = st.dictionaries(st.sampled_from([DURATION_KEY, EXPECTED_END_KEY, "other"]),
                               st.sampled_from(["600", "1h", "x", "2026-01-01T01:00:00Z", "-5", "nan"]), max_size=3)


def _outcome(fn, *args: object) -> tuple[str, object]:
    try:
        ts = fn(*args)
    except InputError as e:
        return "error", (str(e), e.where)
    values = (ts.index, ts.template, ts.status, ts.node, ts.elapsed, ts.remaining, ts.runtime, ts.basis)
    # -0.0 and 0.0 told apart, as equality would not
    return "value", (values, tuple(math.copysign(1.0, v) for v in values if isinstance(v, float)))


@settings(max_examples=150, deadline=None)
@given(status=st.sampled_from(list(TaskStatus)), node=st.sampled_from(["", "n1"]), stamp=_STAMPS,
       pod=_ANNOTATIONS, group=_ANNOTATIONS, offset=st.integers(min_value=-7200, max_value=7200))
def test_task_start_is_the_reference(status: TaskStatus, node: str, stamp: str, pod: dict[str, str],
                                     group: dict[str, str], offset: int) -> None:
    task = TaskInfo(uid="u", name="p", namespace="ns", job="ns/g", resreq=Resource(), status=status, node_name=node,
                    start_time=stamp, annotations=pod)
    job = JobInfo(uid="ns/g", name="g", namespace="ns", queue="q", annotations=group)
    now = NOW + timedelta(seconds=offset)
    # with the stamp memo (as `start_state` calls it) and without
    assert _outcome(start._task_start, 3, task, job, now) == _outcome(_task_start_reference, 3, task, job, now)
    assert (_outcome(start._task_start, 3, task, job, now, {}, {})
            == _outcome(_task_start_reference, 3, task, job, now))
