"""The early quiet test's held record made in one walk over a job's tasks (forecast/quiet_held.py,
`whole_and_placed`, `ONE_WALK`; docs/semantics.md F18): the same answer, placements, request rows and
`WholeRequests` state as the two walks it replaces (`WholeRequests.__call__`, then `placements`), over
random tasks (every status, nodes on the table and off it, none), requests shared and equal, whole and
not (fractions, 2**50, NaN, the infinities), rows set beforehand or not, asked one after another."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import TaskInfo, TaskStatus
from apportion.cluster.node_table import NodeTable
from apportion.forecast import quiet_held
from apportion.forecast.quiet_bound import RowsMade
from apportion.forecast.quiet_held import whole_and_placed
from apportion.forecast.quiet_whole import WholeRequests
from apportion.resources import Resource
from apportion.state.check import ENV

_AMOUNTS = st.one_of(
    st.integers(0, 2**12).map(float),
    st.sampled_from([0.0, -0.0, 0.5, math.nan, math.inf, float(2**50), float(2**50 - 1)]),
)
_REQUESTS = st.builds(lambda c, m, g: Resource(c, m, {"nvidia.com/gpu": g} if g is not None else None),
                      _AMOUNTS, _AMOUNTS, st.one_of(st.none(), _AMOUNTS))
#: the ways compared: (ONE_WALK, EQUAL_AS_LAST); the two walks are the reference
_WAYS = ((True, True), (True, False), (False, True))


def _with_copies(requests: list[Resource], copies: list[tuple[int, float | None]]) -> list[Resource]:
    """The requests, and copies of some of them (equal amounts in other objects, as a gang's tasks ask),
    some with another scalar amount (the same cpu and memory)."""
    out = list(requests)
    for i, gpu in copies:
        r = requests[i % len(requests)]
        out.append(Resource(r.cpu, r.memory, r.scalars if gpu is None else {"nvidia.com/gpu": gpu}))
    return out
_NODES = ["n0", "n1", "n2", "elsewhere", ""]


def _table() -> NodeTable:
    return NodeTable(["n0", "n1", "n2"], [Resource(8000, 2**30, {"nvidia.com/gpu": 8.0})] * 3, set())


def _tasks(spec: list[tuple[int, TaskStatus, str, bool]], requests: list[Resource],
           rows: RowsMade, table: NodeTable) -> list[tuple[str, TaskInfo]]:
    out = []
    for i, (ri, status, node, with_vec) in enumerate(spec):
        t = TaskInfo(uid=f"t{i}", name=f"t{i}", namespace="ns", job="j", resreq=requests[ri % len(requests)],
                     status=status, node_name=node)
        if with_vec:
            t.vec = rows.row(table, t.resreq)
        out.append((f"ns/t{i}", t))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(_REQUESTS, min_size=1, max_size=6),
       st.lists(st.tuples(st.integers(0, 5), st.one_of(st.none(), _AMOUNTS)), max_size=6),
       st.lists(st.lists(st.tuples(st.integers(0, 11), st.sampled_from(list(TaskStatus)), st.sampled_from(_NODES),
                                   st.booleans()), max_size=8), min_size=1, max_size=4),
       st.booleans())
def test_one_walk_is_the_two_walks(requests: list[Resource], copies: list[tuple[int, float | None]],
                                   jobs: list[list[tuple[int, TaskStatus, str, bool]]], checking: bool) -> None:
    """Jobs walked one after another with one `WholeRequests` and one `RowsMade` each way: every answer,
    the placements (keys in order, rows, the very request and row objects), each task's row and what
    `WholeRequests` keeps are the same with `ONE_WALK` on and off (and `EQUAL_AS_LAST` on and off), and
    with the self-check on."""
    table = _table()
    requests = _with_copies(requests, copies)
    kept = {way: (WholeRequests(), RowsMade()) for way in _WAYS}
    with pytest.MonkeyPatch.context() as mp:
        if checking:
            mp.setenv(ENV, "1")
        else:
            mp.delenv(ENV, raising=False)
        for spec in jobs:
            got = {}
            for way in _WAYS:
                mp.setattr(quiet_held, "ONE_WALK", way[0])
                mp.setattr(quiet_held, "EQUAL_AS_LAST", way[1])
                whole_of, rows = kept[way]
                tasks = _tasks(spec, requests, rows, table)
                placed: dict = {}
                answer = whole_and_placed(whole_of, table, rows, iter(tasks), placed)
                got[way] = (answer, placed, [t.vec for _, t in tasks])
            a2, p2, v2 = got[(False, True)]
            for way in _WAYS[:2]:
                a1, p1, v1 = got[way]
                assert a1 == a2
                assert list(p1) == list(p2)
                for key in p1:
                    assert p1[key][0] == p2[key][0] and p1[key][1] is p2[key][1]
                    assert p1[key][2].tobytes() == p2[key][2].tobytes()
                assert [None if v is None else v.tobytes() for v in v1] == [
                    None if v is None else v.tobytes() for v in v2]
                w1, w2 = kept[way][0], kept[(False, True)][0]
                assert w1.whole == w2.whole and list(w1.seen) == list(w2.seen)


def test_a_whole_answer_is_the_reference() -> None:
    """A job of whole requests, one not whole, and no task at all."""
    table = _table()
    for reqs, want in (([Resource(1000, 2**20)], True), ([Resource(1000, 2**20), Resource(0.5, 1)], False), ([], True)):
        tasks = [(f"k{i}", TaskInfo(uid=f"t{i}", name="t", namespace="ns", job="j", resreq=r, status=TaskStatus.RUNNING,
                                    node_name="n1")) for i, r in enumerate(reqs)]
        placed: dict = {}
        assert whole_and_placed(WholeRequests(), table, RowsMade(), tasks, placed) is want
        assert list(placed) == [k for k, _ in tasks] and all(p[0] == 1 for p in placed.values())
