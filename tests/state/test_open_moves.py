"""Session open's table step for what left and what came (framework/open_state.py `_apply_moves`,
docs/semantics.md K41): the used-only step against `NodeTable.apply_placements` (`LEAN_MOVES` off), bit for
bit, for any placements and kinds; and the exactness test against `_exact`."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.node_table import NodeTable
from apportion.framework import open_state
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
        with mock.patch.object(open_state, "LEAN_MOVES", lean):
            got = open_state._apply_moves(t, entries(removed), entries(added))
        out.append((got, [getattr(t, a).copy() for a in ("idle", "used", "releasing", "pipelined", "future",
                                                           "pod_count")]))
    (a, arrays_a), (b, arrays_b) = out
    assert (a is None) == (b is None)
    if a is not None:
        assert a == b or (np.isnan(a) and np.isnan(b))
    for x, y in zip(arrays_a, arrays_b):
        assert np.array_equal(x, y, equal_nan=True) and x.dtype == y.dtype
    # nothing is done when an added vector is not exact, which `_exact` says
    fresh = np.array([v for _, _, v in added]) if added else None
    assert (a is None) == (fresh is not None and not open_state._exact(fresh))
