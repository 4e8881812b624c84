"""Session open's steps over whole lists (docs/semantics.md K60) against their task-by-task references:
a changed job whose placed tasks are its held entries as they stand (`walk_kept`, framework/
open_pairing.py) walked with `KEPT_WALK` on and off; a touched row's map taken by entry
(`row_tasks_by_entry`, framework/open_rows.py) against the map made from the row and `row_tasks`' walks;
a row merged with its kept entries keyed at once (`KEYS_AT_ONCE`) against the sort; the scalar names'
counts left as the base's (`_scalar_counts`) against counting them out and in; and open sequences with
the switches off, each compared with a full open."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_open_grown import a_grown_row
from test_open_state import _run as run_open_steps
from test_open_state import step as open_steps

from apportion.cluster.model import JobInfo, NodeInfo, TaskInfo, TaskStatus
from apportion.framework import open_pairing, open_rows, open_state
from apportion.framework.open_pairing import walk_kept, walk_paired
from apportion.framework.open_rows import (
    merge_row,
    merge_row_reference,
    row_key,
    row_keys,
    row_tasks,
    tasks_map,
)
from apportion.resources import Resource

NODES = [NodeInfo(name=f"n{i}", index=i, allocatable=Resource(8000.0, 2.0**34)) for i in range(3)]
BY_NAME = {n.name: n for n in NODES}
#: with a node named "" (whose tasks the walk places nowhere)
BY_NAME_EMPTY = {**BY_NAME, "": NodeInfo(name="", index=3, allocatable=Resource())}


def _task(i: int, status: TaskStatus, node: str, gpu: bool) -> TaskInfo:
    scalars = {"nvidia.com/gpu": 1000.0} if gpu else {}
    return TaskInfo(uid=f"u{i}", name=f"t{i}", namespace="ns", job="ns/j", resreq=Resource(500.0, 2.0**20, scalars),
                    status=status, node_name=node)


def _job(tasks: list[TaskInfo]) -> JobInfo:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    for t in tasks:
        job.add_task(t)
    return job


placed = st.tuples(st.sampled_from([TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.RELEASING, TaskStatus.PIPELINED]),
                   st.sampled_from(["n0", "n1", "n2"]), st.booleans())
#: what becomes of a held task: mostly kept as it stands, else ended (a new object that occupies no
#: node), moved in place (same object: another status or node), another vector, a new equal object, a
#: new task placed, or gone (the positions move)
fate = st.sampled_from(["keep"] * 6 + ["ended", "status", "node", "vec", "equal", "placed", "pending", "gone",
                                       "nowhere", "empty"])


def _norm(e: Any) -> tuple:
    """An entry as compared: its task and vector by identity."""
    return (e[0], id(e[1]), e[2], id(e[3]), e[4], e[5])


@settings(max_examples=300, deadline=None)
@given(st.lists(placed, min_size=1, max_size=10), st.data())
def test_a_job_walked_kept_is_the_walked_one(held_specs: list[Any], data: st.DataObject) -> None:
    """`walk_paired` with `KEPT_WALK` on and off: the same slots, the same entries taken out, put in and
    replaced in the same order, the same names and statuses at open; and `walk_kept` answers for the
    jobs whose placed tasks are all kept."""
    by_name = data.draw(st.sampled_from([BY_NAME, BY_NAME, BY_NAME_EMPTY]))
    tasks = [_task(i, *spec) for i, spec in enumerate(held_specs)]
    for t in tasks:
        t.vec = np.array([t.resreq.cpu, t.resreq.memory])
    # a held job's placements: every task's, or some left out (tasks placed since)
    old = [(BY_NAME[t.node_name].index, t, open_state.KIND_OF[t.status], t.vec, "ns/j", i) for i, t in enumerate(tasks)
           if data.draw(st.booleans()) or i % 3]
    now: list[TaskInfo] = []
    for i, t in enumerate(tasks):
        what = data.draw(fate)
        if what == "gone":
            continue
        if what == "keep":
            now.append(t)
        elif what == "ended":
            now.append(_task(i, TaskStatus.SUCCEEDED, t.node_name, bool(t.resreq.scalars)))
        elif what == "status":
            t.status = TaskStatus.RELEASING if t.status is not TaskStatus.RELEASING else TaskStatus.RUNNING
            now.append(t)
        elif what == "node":
            t.node_name = "n1" if t.node_name != "n1" else "n2"
            now.append(t)
        elif what == "vec":
            t.vec = np.array([1.0, 2.0])
            now.append(t)
        elif what == "equal":
            u = _task(i, t.status, t.node_name, bool(t.resreq.scalars))
            u.vec = t.vec
            now.append(u)
        elif what == "placed":
            now.append(_task(i, *data.draw(placed)))
        elif what == "pending":
            now.append(_task(i, TaskStatus.PENDING, "", False))
        elif what == "nowhere":
            t.node_name = "n9"
            now.append(t)
        else:
            t.node_name = ""
            now.append(t)
    job = _job(now)
    out = []
    for on in (True, False):
        removed: list[Any] = []
        fresh: list[Any] = []
        replaced: list[Any] = []
        for t in now:
            t.initial_status = None
        vecs = [t.vec for t in now]
        with mock.patch.object(open_pairing, "KEPT_WALK", on):
            slots, names = walk_paired(job, job.uid, by_name, old, removed, fresh, replaced)
        job.derived.clear()
        out.append(([s if isinstance(s, int) else _norm(s) for s in slots], names, [id(e) for e in removed],
                    [_norm(e) for e in fresh], [(id(o), _norm(n)) for o, n in replaced],
                    [t.initial_status for t in now]))
        for t, v in zip(now, vecs):
            t.vec = v
    assert out[0] == out[1]
    # the fast path answers exactly when every task placed now is the held entry at its position
    removed = []
    got = walk_kept(job, by_name, old, removed) if old else None
    if got is not None:
        assert not out[1][3] and not out[1][4]


def test_a_job_one_task_of_which_ended_is_walked_kept() -> None:
    """The forecast's most common changed job: built again with its tasks as they were but one ended."""
    tasks = [_task(i, TaskStatus.RUNNING, f"n{i % 3}", False) for i in range(4)]
    for t in tasks:
        t.vec = np.array([t.resreq.cpu, t.resreq.memory])
    old = [(i % 3, t, "used", t.vec, "ns/j", i) for i, t in enumerate(tasks)]
    job = _job([tasks[0], _task(1, TaskStatus.SUCCEEDED, "n1", False), tasks[2], tasks[3]])
    removed: list[Any] = []
    got = walk_kept(job, BY_NAME, old, removed)
    assert got is not None and got[0] == [old[0], old[2], old[3]] and removed == [old[1]]
    assert [t.initial_status for t in job.tasks.values()] == [TaskStatus.RUNNING, TaskStatus.SUCCEEDED,
                                                               TaskStatus.RUNNING, TaskStatus.RUNNING]


def _pairs(m: dict[str, TaskInfo]) -> list[tuple[str, int]]:
    return [(k, id(t)) for k, t in m.items()]


@settings(max_examples=200, deadline=None)
@given(a_grown_row(), st.data())
def test_a_row_map_taken_by_entry_is_the_map_made_from_the_row(rows: tuple[list, list], data: st.DataObject) -> None:
    """`row_tasks` with `KEYS_BY_ENTRY` on and off, for rows that gained, lost or kept entries: the map
    made from the row, keys, order and task objects."""
    old, now = rows
    if data.draw(st.booleans()):  # a row that lost entries, or kept as many
        now = [e for e in now if e[4] == "j"]
    got = row_tasks(now, old, tasks_map(old))
    with mock.patch.object(open_rows, "KEYS_BY_ENTRY", False):
        want = row_tasks(now, old, tasks_map(old))
    assert _pairs(got) == _pairs(want) == _pairs(tasks_map(now))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", None]), st.integers(0, 6)), unique=True, max_size=12),
       st.data())
def test_a_row_merged_with_its_keys_made_at_once_is_the_sorted_row(entries: list[Any], data: st.DataObject) -> None:
    """`merge_row` with `keys` (`KEYS_AT_ONCE` on and off) against the sort of the whole row."""
    pos = {"a": 2, "b": 0, "c": 3, "d": 1}
    key, keys = row_key(pos, 4), row_keys(pos, 4)
    row = [(0, None, "used", None, j, i) for j, i in entries]
    new = [e for e in row if data.draw(st.booleans())]
    kept = sorted((e for e in row if e not in new), key=key)
    want = merge_row_reference(list(kept), list(new), key)
    for on in (True, False):
        with mock.patch.object(open_rows, "KEYS_AT_ONCE", on):
            assert [id(e) for e in merge_row(list(kept), list(new), key, keys)] == [id(e) for e in want]
    assert keys(row) == [key(e) for e in row]


names = st.frozensets(st.sampled_from(["gpu", "fpga", "pods"]), max_size=2)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdefg"), names, max_size=6), st.data())
def test_the_scalar_counts_left_as_they_were_are_the_counts_counted(held_names: dict[str, frozenset[str]],
                                                                   data: st.DataObject) -> None:
    """`_scalar_counts` (the base's counts when every job taken out is a changed one listing its held
    names) with `NET_COUNTS` on and off."""
    from collections import Counter
    counts: Counter[str] = Counter()
    for ns in held_names.values():
        counts.update(ns)
    base = SimpleNamespace(jobs={u: (None, 0, [], ns, None) for u, ns in held_names.items()}, scalar_counts=counts)
    gone = [u for u in held_names if data.draw(st.booleans())]
    changed = {u: data.draw(st.sampled_from([held_names[u], frozenset(held_names[u]), frozenset({"gpu"})]))
               for u in gone if data.draw(st.booleans())}
    changed.update({u: data.draw(names) for u in data.draw(st.lists(st.sampled_from("xyz"), unique=True))})
    got = open_state._scalar_counts(base, gone, changed)  # type: ignore[arg-type]
    with mock.patch.object(open_state, "NET_COUNTS", False):
        want = open_state._scalar_counts(base, gone, changed)  # type: ignore[arg-type]
    assert dict(got) == dict(want)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(open_steps, open_steps, st.tuples(st.just("PHASE"), st.integers(0, 7))), min_size=1,
                max_size=30))
def test_opens_with_the_whole_list_steps_off_are_full_opens(monkeypatch: pytest.MonkeyPatch, steps: list) -> None:
    """K60's switches off (`KEPT_WALK`, `KEYS_BY_ENTRY`, `KEYS_AT_ONCE`): the opens are full ones as with
    them on (`_run` compares each with one, under the self-check)."""
    monkeypatch.setattr(open_pairing, "KEPT_WALK", False)
    monkeypatch.setattr(open_rows, "KEYS_BY_ENTRY", False)
    monkeypatch.setattr(open_rows, "KEYS_AT_ONCE", False)
    run_open_steps(steps, monkeypatch)
