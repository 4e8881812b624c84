"""NodeTable's bulk paths against the one-at-a-time ones they stand in for, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.node_table import NodeTable
from apportion.resources import Resource

amounts = st.floats(min_value=0, max_value=1e9, allow_nan=False)
resources = st.builds(lambda c, m, g, x: Resource(c, m, {"nvidia.com/gpu": g} if x else {}),
                      amounts, amounts, amounts, st.booleans())


def _table() -> NodeTable:
    alloc = [Resource(64000, 2**39, {"nvidia.com/gpu": 8000, "pods": 110}) for _ in range(4)]
    return NodeTable([f"n{i}" for i in range(4)], alloc, {"nvidia.com/gpu"})


@settings(max_examples=200, deadline=None)
@given(placed=st.lists(st.tuples(st.integers(0, 3), resources,
                                 st.sampled_from(["used", "releasing", "pipelined"])), max_size=12))
def test_add_many_is_add_in_order(placed) -> None:
    one, bulk = _table(), _table()
    vecs = bulk.vectors([r for _, r, _ in placed])
    for (row, r, kind), v in zip(placed, vecs):
        assert np.array_equal(one.vector(r), v)
        one.add(row, one.vector(r), kind)
    bulk.add_many([row for row, _, _ in placed], vecs, [kind for _, _, kind in placed])
    for name in ("idle", "used", "releasing", "pipelined", "future", "pod_count"):
        assert getattr(one, name).tobytes() == getattr(bulk, name).tobytes(), name
    assert one.touched == bulk.touched
