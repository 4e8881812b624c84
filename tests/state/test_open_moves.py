"""Session open's table step for what left and what came (framework/open_moves.py `_apply_moves`,
docs/semantics.md K41): the used-only step against `NodeTable.apply_placements` (`LEAN_MOVES` off), bit for
bit, for any placements and kinds; the exactness test against `_exact`; the rows and signs it hands the
node view, and the removed rows negated in place (K46); and sessions opened with the references of the
open's steps against full opens."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_open_state import _run as run_open_steps
from test_open_state import step as open_steps

from apportion.cluster.node_table import NodeTable
from apportion.framework import open_moves
from apportion.plugins import k8s_view
from apportion.resources import Resource

ROWS = 5
KINDS = ["used", "releasing", "pipelined"]
amount = st.one_of(st.integers(0, 2**40).map(float), st.sampled_from([0.5, float(2**53), float("nan"), 3.0]))
entry = st.tuples(st.integers(0, ROWS - 1), st.sampled_from(KINDS), st.lists(amount, min_size=3, max_size=3))


def table() -> NodeTable:
    return NodeTable([f"n{i}" for i in range(ROWS)], [Resource(64000.0, 2.0**38, {"pods": 110.0})] * ROWS, set())


def entries(specs: list[tuple[int, str, list[float]]]) -> list[Any]:
    return [(row, None, kind, np.array(v), "j", i) for i, (row, kind, v) in enumerate(specs)]


@settings(max_examples=200, deadline=None)
@given(removed=st.lists(entry, max_size=6), added=st.lists(entry, max_size=6), used_only=st.booleans())
def test_lean_moves_are_apply_placements(removed: list[Any], added: list[Any], used_only: bool) -> None:
    if used_only:
        removed = [(r, "used", v) for r, _, v in removed]
        added = [(r, "used", v) for r, _, v in added]
    if not removed and not added:
        return
    out = []
    for lean in (True, False):
        t = table()
        with mock.patch.object(open_moves, "LEAN_MOVES", lean):
            got = open_moves._apply_moves(t, entries(removed), entries(added))
        out.append((got, [getattr(t, a).copy() for a in ("idle", "used", "releasing", "pipelined", "future",
                                                           "pod_count")]))
    (a, arrays_a), (b, arrays_b) = out
    assert (a is None) == (b is None)
    if a is not None and b is not None:
        assert a[0] == b[0] or (np.isnan(a[0]) and np.isnan(b[0]))
        # the rows and signs of what was taken out, then what was put in
        want_rows = [r for r, _, _ in removed] + [r for r, _, _ in added]
        for got in (a, b):
            assert got[1].tolist() == want_rows and got[2].tolist() == [-1] * len(removed) + [1] * len(added)
    for x, y in zip(arrays_a, arrays_b):
        assert np.array_equal(x, y, equal_nan=True) and x.dtype == y.dtype
    # nothing is done when an added vector is not exact, which `_exact` says
    fresh = np.array([v for _, _, v in added]) if added else None
    assert (a is None) == (fresh is not None and not open_moves._exact(fresh))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(open_steps, min_size=1, max_size=30))
def test_opens_with_the_references_are_full_ones(monkeypatch: pytest.MonkeyPatch, steps: list) -> None:
    """The references of K41's open steps (`LEAN_MOVES` off: every move through `apply_placements`;
    `UPDATE_IN_PLACE` off: the carried node view copied before it is brought up to date) and of K46's
    (`SHARE_MOVES` off: the view's rows and signs its own) give, as the default ones do in
    test_open_state.py, the node table, maps and view of a full open at every session."""
    monkeypatch.setattr(open_moves, "LEAN_MOVES", False)
    monkeypatch.setattr(k8s_view, "UPDATE_IN_PLACE", False)
    monkeypatch.setattr(k8s_view, "SHARE_MOVES", False)
    run_open_steps(steps, monkeypatch)


any_float = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 2.0**53, -1.0]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(any_float, min_size=3, max_size=3), min_size=1, max_size=8), st.data())
def test_rows_negated_in_place_are_the_signed_product(vectors: list[list[float]], data: st.DataObject) -> None:
    """K46: the first `cut` rows of a stack multiplied by -1 where they are is, bit for bit, the stack
    times its signs (-1 for those rows, 1 for the rest) as `_apply_moves` and the node view made it."""
    cut = data.draw(st.integers(0, len(vectors)))
    stack = np.array(vectors)
    signs = np.ones(len(vectors), dtype=np.int64)
    signs[:cut] = -1
    want = stack * signs[:, None]
    got = stack.copy()
    if cut:
        got[:cut] *= -1
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
