"""The start state's stamps parsed once each (`start.DISTINCT_STAMPS`) against parsing each where it is
read: the same `now` (the same instant and offset: the first of equal times), and the same start state,
whatever the stamps (repeated, equal instants in other offsets, naive, malformed, empty)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import JobInfo, QueueInfo, TaskInfo, TaskStatus
from apportion.cluster.snapshot import Snapshot
from apportion.errors import InputError
from apportion.forecast import start
from apportion.forecast.runtime import DURATION_KEY
from apportion.forecast.start import newest_timestamp, start_state
from apportion.framework.conf import default_conf
from apportion.resources import Resource
from apportion.state.check import canonical

_STAMPS = st.sampled_from(["", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00+00:00", "2026-01-01T01:00:00+01:00",
                           "2026-01-01T00:00:00", "2026-01-01T00:05:00Z", "2026-01-01T00:05:00.5Z",
                           "2026-01-01T02:05:00+02:00", "not a time", "2025-12-31T23:59:59Z"])
_STATUSES = st.sampled_from([TaskStatus.RUNNING, TaskStatus.PENDING, TaskStatus.RELEASING, TaskStatus.SUCCEEDED])


@st.composite
def a_snapshot(draw: st.DrawFn) -> Snapshot:
    snap = Snapshot()
    for i in range(draw(st.integers(0, 2))):
        snap.queues[f"q{i}"] = QueueInfo(name=f"q{i}", creation=draw(_STAMPS))
    for j in range(draw(st.integers(0, 3))):
        job = JobInfo(uid=f"ns/j{j}", name=f"j{j}", namespace="ns", queue="q0", creation=draw(_STAMPS),
                      annotations={DURATION_KEY: "600"} if draw(st.booleans()) else {})
        for k in range(draw(st.integers(0, 3))):
            status = draw(_STATUSES)
            job.add_task(TaskInfo(uid=f"u{j}-{k}", name=f"p{j}-{k}", namespace="ns", job=job.uid, resreq=Resource(),
                                  status=status, node_name="" if status is TaskStatus.PENDING else "n1",
                                  creation=draw(_STAMPS), start_time=draw(_STAMPS)))
        snap.jobs[job.uid] = job
    for k in range(draw(st.integers(0, 2))):
        snap.orphan_tasks.append(TaskInfo(uid=f"o{k}", name=f"o{k}", namespace="ns", job="", resreq=Resource(),
                                          status=TaskStatus.RUNNING, node_name="n1", creation=draw(_STAMPS),
                                          start_time=draw(_STAMPS)))
    return snap


def _now(snap: Snapshot, distinct: bool) -> tuple[str, object] | None:
    start.DISTINCT_STAMPS = distinct
    try:
        t = newest_timestamp(snap)
    finally:
        start.DISTINCT_STAMPS = True
    return None if t is None else (t.isoformat(), t.tzinfo)


def _state(snap: Snapshot, now: datetime, distinct: bool) -> object:
    start.DISTINCT_STAMPS = distinct
    try:
        s = start_state(snap, default_conf(), now)
    except InputError as e:
        return str(e)
    finally:
        start.DISTINCT_STAMPS = True
    return [(j.uid, j.runtime, j.runtime_basis, [(t.index, t.status, t.node, t.elapsed, t.remaining, t.runtime, t.basis)
                                         for t in j.tasks]) for j in s.jobs], canonical(s.warnings)


@settings(max_examples=300, deadline=None)
@given(snap=a_snapshot(), now=st.sampled_from([datetime(2026, 1, 1, 0, 10, tzinfo=UTC),
                                                datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)]))
def test_stamps_parsed_once_are_the_reference(snap: Snapshot, now: datetime) -> None:
    assert _now(snap, True) == _now(snap, False)
    assert _state(snap, now, True) == _state(snap, now, False)
