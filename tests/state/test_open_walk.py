"""A changed job walked and paired in one pass at session open (framework/open_pairing.py `walk_paired`,
docs/semantics.md K45) against the walk (`_changed_job`) and then the pairing (`pair_job`): the same
slots, placements taken out, put in and replaced, in the same order, for any held placements and any
job built again from them (tasks handed out again as the same objects, replaced by equal ones,
moved, ended, added); sessions opened with `PAIR_IN_WALK` off against the same with it on; and full
placements that take the array their vectors were made in (`STACK_MADE`) against the stacking ones."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_open_state import _same_either_way
from test_open_state import step as open_steps

from apportion.cluster.model import JobInfo, NodeInfo, TaskInfo, TaskStatus
from apportion.framework.open_pairing import check_walked, pair_job, walk_paired
from apportion.framework.open_state import _changed_job
from apportion.resources import Resource
from apportion.state import check

NODES = [NodeInfo(name=f"n{i}", index=i, allocatable=Resource(8000.0, 2.0**34)) for i in range(3)]
BY_NAME = {n.name: n for n in NODES}
STATUSES = [TaskStatus.RUNNING, TaskStatus.RUNNING, TaskStatus.PENDING, TaskStatus.RELEASING,
            TaskStatus.PIPELINED, TaskStatus.SUCCEEDED, TaskStatus.BOUND]


def _task(i: int, status: TaskStatus, node: str, cpu: float, gpu: bool) -> TaskInfo:
    scalars = {"nvidia.com/gpu": 1000.0} if gpu else {}
    return TaskInfo(uid=f"u{i}", name=f"t{i}", namespace="ns", job="ns/j", resreq=Resource(cpu, 2.0**20, scalars),
                    status=status, node_name=node if status is not TaskStatus.PENDING else "")


def _job(tasks: list[TaskInfo]) -> JobInfo:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    for t in tasks:
        job.add_task(t)
    return job


a_task = st.tuples(st.sampled_from(STATUSES), st.sampled_from(["n0", "n1", "n2", "n9"]),
                   st.sampled_from([500.0, 1000.0]), st.booleans())
#: what becomes of a held task in the job built again: kept (the same object), an equal new object, a new
#: object that differs (status, node or request), or gone; its vector kept, cleared or another one
fate = st.tuples(st.sampled_from(["same", "same", "equal", "other", "gone"]), a_task,
                 st.sampled_from(["kept", "kept", "none", "other"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(a_task, max_size=8), st.data())
def test_walked_and_paired_in_one_pass_is_the_walk_then_the_pairing(held_specs: list[Any], data: st.DataObject) -> None:
    held_tasks = [_task(i, *spec) for i, spec in enumerate(held_specs)]
    for t in held_tasks:
        t.vec = np.array([t.resreq.cpu, t.resreq.memory])
    held_job = _job(held_tasks)
    old, _ = _changed_job(held_job, held_job.uid, BY_NAME)
    old = [(r, t, k, t.vec, j, i) for r, t, k, _, j, i in old]
    now: list[TaskInfo] = []
    for i, t in enumerate(held_tasks):
        what, spec, vec = data.draw(fate)
        if what == "gone":
            continue
        if what == "same":
            u = t
        elif what == "equal":
            u = _task(i, t.status, t.node_name, t.resreq.cpu, bool(t.resreq.scalars))
        else:
            u = _task(i, *spec)
        u.vec = (t.vec if vec == "kept" else None if vec == "none" else np.array([1.0, 2.0]))
        now.append(u)
    now.extend(_task(len(held_tasks) + i, *spec) for i, spec in enumerate(data.draw(st.lists(a_task, max_size=3))))
    # a task placed again at another position (another task's uid): the positions move
    if len(now) > 1 and data.draw(st.booleans()):
        now[0], now[1] = now[1], now[0]
    job = _job(now)
    before = [(None, None, "used", None, "gone/j", 0)]
    fresh_before = [(0, now[0], "used", None, "other/j", 0)] if now else []
    out: list[Any] = []
    for one_pass in (True, False):
        removed: list[Any] = list(before)
        fresh: list[Any] = list(fresh_before)
        replaced: list[Any] = []
        vecs = [t.vec for t in now]
        if one_pass:
            slots, names = walk_paired(job, job.uid, BY_NAME, old, removed, fresh, replaced)
        else:
            mine, names = _changed_job(job, job.uid, BY_NAME)
            slots = pair_job(old, mine, removed, fresh, replaced)
        out.append((slots, names, removed, fresh, replaced, [t.vec for t in now], [t.initial_status for t in now]))
        for t, v in zip(now, vecs):  # the pairing gives a replacement the old vector: undone for the other run
            t.vec = v
    (s1, n1, r1, f1, p1, v1, i1), (s2, n2, r2, f2, p2, v2, i2) = out
    assert n1 == n2 and i1 == i2
    assert [id(e) for e in r1] == [id(e) for e in r2]
    assert [e[:3] + (id(e[3]),) + e[4:] for e in f1] == [e[:3] + (id(e[3]),) + e[4:] for e in f2]
    assert [(id(o), n[:3] + (id(n[3]),) + n[4:]) for o, n in p1] == [(id(o), n[:3] + (id(n[3]),) + n[4:])
                                                                      for o, n in p2]
    assert [s if isinstance(s, int) else s[:3] + (id(s[3]),) + s[4:] for s in s1] == [
        s if isinstance(s, int) else s[:3] + (id(s[3]),) + s[4:] for s in s2]
    assert [id(v) for v in v1] == [id(v) for v in v2]


def test_the_self_check_catches_a_pairing_that_differs() -> None:
    """`check_walked` refuses slots that the walk and the pairing would not give."""
    t = _task(0, TaskStatus.RUNNING, "n0", 500.0, False)
    t.vec = np.array([500.0, 2.0**20])
    job = _job([t])
    old = [(0, t, "used", t.vec, job.uid, 0)]
    removed: list[Any] = []
    fresh: list[Any] = []
    replaced: list[Any] = []
    slots, _ = walk_paired(job, job.uid, BY_NAME, old, removed, fresh, replaced)
    assert slots == [old[0]] and not removed and not fresh
    held = (job, job.version, old, frozenset(), job.phase)
    walk = lambda j, u: _changed_job(j, u, BY_NAME)[0]  # noqa: E731
    check_walked([(job.uid, job, held)], walk, [], {job.uid: slots}, removed, fresh, replaced)
    with pytest.raises(check.StateCheckError):
        check_walked([(job.uid, job, held)], walk, [], {job.uid: [0]}, removed, [old[0]], replaced)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(open_steps, open_steps, open_steps, st.tuples(st.just("PHASE"), st.integers(0, 7))),
                min_size=1, max_size=40))
def test_an_open_walking_and_pairing_in_one_pass_is_the_two_pass_one(monkeypatch: pytest.MonkeyPatch,
                                                                      steps: list) -> None:
    """Opens with `PAIR_IN_WALK` on take out, put in and replace what they do with it off, and both are a
    full open (`_run` compares each with one)."""
    _same_either_way(monkeypatch, "PAIR_IN_WALK", steps)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(open_steps, min_size=1, max_size=30))
def test_a_full_placement_taking_the_array_it_made_is_the_stacking_one(monkeypatch: pytest.MonkeyPatch,
                                                                       steps: list) -> None:
    """`place_full` with `STACK_MADE` on (the vectors' own array taken as the stack) and off: the same
    opens, each a full one bit for bit (`_run` compares each with the reference placement)."""
    _same_either_way(monkeypatch, "STACK_MADE", steps)
