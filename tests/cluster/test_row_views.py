"""The node table's and the node view's one-row steps on the row's view in place (docs/semantics.md K56):
`NodeTable.add`/`remove` with `IN_ROW_VIEWS` on against the reference that stores every row back, a new
table's allocatable made as the rows of one array (`ROWS_AT_ONCE`) against row by row, and the node
view's event step (`IN_ROW_VIEW`) against its reference; bit for bit, for any amounts (NaN, infinities,
signed zeros, fractions, integers past 2**53)."""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster import node_table
from apportion.cluster.model import NodeInfo, TaskInfo, TaskStatus
from apportion.cluster.node_table import NodeTable
from apportion.plugins import k8s_view
from apportion.plugins.k8s_view import NodeView
from apportion.resources import GPU, Resource

ROWS = 4
ARRAYS = ("allocatable", "idle", "used", "releasing", "pipelined", "future", "pod_count", "max_pods")
amount = st.one_of(
    st.floats(min_value=-1e12, max_value=1e12),
    st.integers(0, 2**40).map(float),
    st.sampled_from([0.0, -0.0, 0.5, 2.0**53 + 2.0, float("nan"), float("inf"), float("-inf"), 1e300]),
)
resource = st.builds(lambda c, m, g, x: Resource(c, m, {GPU: g, "pods": 1.0} if x else {"pods": 1.0}),
                     amount, amount, amount, st.booleans())
# node amounts as a dump gives them: floats, Python integers (some past 2**63), scalars or none
node_amount = st.one_of(amount, st.integers(0, 2**70), st.integers(-(2**10), 2**10))
node_alloc = st.builds(lambda c, m, s: Resource(c, m, s), node_amount, node_amount,
                       st.dictionaries(st.sampled_from([GPU, "pods", "example.com/fpga"]), node_amount, max_size=3))


def _table(alloc: list[Resource], extra: set[str]) -> NodeTable:
    return NodeTable([f"n{i}" for i in range(len(alloc))], alloc, extra)


def _same(a: NodeTable, b: NodeTable) -> None:
    assert a.columns == b.columns
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), name
    assert a.touched == b.touched


@settings(max_examples=100, deadline=None)
@given(alloc=st.lists(node_alloc, min_size=0, max_size=ROWS), extra=st.sets(st.sampled_from([GPU, "pods", "x/y"])))
def test_allocatable_made_at_once_is_row_by_row(alloc: list[Resource], extra: set[str]) -> None:
    tables = []
    for at_once in (True, False):
        with mock.patch.object(node_table, "ROWS_AT_ONCE", at_once), np.errstate(all="ignore"):
            tables.append(_table(alloc, extra))
    _same(*tables)


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(st.tuples(st.booleans(), st.integers(0, ROWS - 1), resource,
                                st.sampled_from(["used", "releasing", "pipelined"])), max_size=16))
def test_row_steps_in_place_are_the_stored_ones(steps: list[tuple[bool, int, Resource, str]]) -> None:
    alloc = [Resource(64000.0, 2.0**39, {GPU: 8000.0, "pods": 110.0}) for _ in range(ROWS)]
    tables = []
    for in_place in (True, False):
        t = _table(alloc, {GPU})
        with mock.patch.object(node_table, "IN_ROW_VIEWS", in_place), np.errstate(all="ignore"):
            for add, row, r, kind in steps:
                (t.add if add else t.remove)(row, t.vector(r), kind)
        tables.append(t)
    _same(*tables)


def _task(i: int, r: Resource, node: str) -> TaskInfo:
    return TaskInfo(uid=f"u{i}", name=f"t{i}", namespace="ns", job="ns/j", resreq=r, status=TaskStatus.PENDING,
                    node_name=node, nonzero_cpu=r.cpu, nonzero_memory=r.memory)


@settings(max_examples=100, deadline=None)
@given(steps=st.lists(st.tuples(st.booleans(), st.integers(0, ROWS - 1), resource), max_size=16))
def test_view_events_in_place_are_the_stored_ones(steps: list[tuple[bool, int, Resource]]) -> None:
    nodes = [NodeInfo(name=f"n{i}", index=i, allocatable=Resource(64000.0, 2.0**39)) for i in range(ROWS)]
    views = []
    for in_place in (True, False):
        view = NodeView(nodes)
        with mock.patch.object(k8s_view, "IN_ROW_VIEW", in_place), np.errstate(all="ignore"):
            for i, (add, row, r) in enumerate(steps):
                t = _task(i, r, f"n{row}")
                # cpu and memory are rounded up (`pod_requests` refuses NaN and infinities): finite ones here
                if not (math.isfinite(r.cpu) and math.isfinite(r.memory)):
                    continue
                (view.on_allocate if add else view.on_deallocate)(t)
        views.append(view)
    a, b = views
    assert a.count.tobytes() == b.count.tobytes() and a.sums.tobytes() == b.sums.tobytes()
