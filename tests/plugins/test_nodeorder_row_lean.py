"""nodeorder's one-node score written out (`NodeOrderPlugin._row_lean`, docs/semantics.md K58) against its
definition (`node_order_row_reference`) bit for bit, on any floats the node view and the facts can hold
(negative, -0.0, huge, NaN and infinite sums included: a NaN that makes `math.floor` refuse it makes both
refuse it), under every weight set the plain-float path serves and one it leaves to the array code."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_nodeorder import _plugin, _session, _task, _used_node, _View

from apportion.cluster.model import TaskInfo
from apportion.plugins.nodeorder import NodeOrderPlugin

_WIDE = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1.0, 100.0, 2.0**41]),
                  st.integers(0, 2**41).map(float))
_REQUEST = st.one_of(st.integers(0, 2**41).map(float), st.sampled_from([0.0, 1.0, 0.1, 8.0]))
#: cpu and memory allocatable are above 0 on every node whenever the plain-float path is taken (`_row_plain`)
_CAP = st.one_of(st.integers(1, 2**41).map(float), st.floats(1e-3, 1e13))


_OPENED: dict[tuple[int, int, int, int], tuple[NodeOrderPlugin, TaskInfo]] = {}


def _opened(weights: tuple[int, int, int, int]) -> tuple[NodeOrderPlugin, TaskInfo]:
    """The plugin of a session opened under the weights, and its pending pod (one session per weight set:
    each example sets the facts and the view it reads)."""
    if weights not in _OPENED:
        ssn = _session(_used_node(), **{"leastrequested.weight": weights[0], "balancedresource.weight": weights[1],
                                        "tainttoleration.weight": weights[2], "mostrequested.weight": weights[3]})
        _OPENED[weights] = (_plugin(ssn), _task(ssn, "p"))
    return _OPENED[weights]


def _outcome(fn: Any, *args: Any) -> tuple[str, bytes | str]:
    try:
        return "value", np.float64(fn(*args)).tobytes()
    except (ValueError, OverflowError) as err:  # math.floor / math.trunc of NaN or infinity
        return "error", type(err).__name__


@settings(max_examples=80, deadline=None)
@given(caps=st.lists(st.tuples(_CAP, _CAP, st.one_of(st.just(0.0), st.just(-0.0), _CAP)), min_size=1, max_size=6),
       sums=st.lists(st.tuples(_WIDE, _WIDE, _WIDE, _WIDE, _WIDE), min_size=6, max_size=6),
       request=st.tuples(_REQUEST, _REQUEST, _REQUEST, _REQUEST, st.one_of(st.just(0.0), _REQUEST)),
       weights=st.sampled_from([(1, 1, 3, 0), (1, 0, 0, 0), (0, 1, 0, 0), (2, 3, 3, 0), (0, 1, 3, 0), (0, 0, 3, 0),
                                (1, 1, 3, 1)]))
def test_lean_row_score_is_the_reference_bit_for_bit(caps: list[tuple[float, float, float]],
                                                     sums: list[tuple[float, ...]],
                                                     request: tuple[float, float, float, float, float],
                                                     weights: tuple[int, int, int, int]) -> None:
    plugin, task = _opened(weights)
    alloc = np.array(caps, dtype=float)
    plugin.alloc, plugin._alloc_rows = alloc, alloc.tolist()
    plugin.view = _View(np.array(sums[:len(caps)], dtype=float), request)  # type: ignore[assignment]
    assert (plugin._row_plain is None) == bool(weights[3])
    # the drawn floats reach infinities and NaNs: numpy's warnings about them are not the test's subject
    with np.errstate(all="ignore"):
        for row in range(len(caps)):
            want = _outcome(plugin.node_order_row_reference, task, row)
            # (without the plain weights, `_row_lean` is the array code on one row either way)
            assert _outcome(plugin._row_lean, task, row) == want, (row, caps[row], sums[row], request)


def test_lean_row_score_keeps_negative_zero_and_nan_as_max_and_min_do() -> None:
    """The written-out `max(x, 0.0)` and `min(x, 1.0)` return x itself unless the bound is strictly past it."""
    for x in (-0.0, 0.0, math.nan, -1.0, 2.0):
        lean_max = 0.0 if x < 0.0 else x
        lean_min = 1.0 if x > 1.0 else x
        assert np.float64(lean_max).tobytes() == np.float64(max(x, 0.0)).tobytes()
        assert np.float64(lean_min).tobytes() == np.float64(min(x, 1.0)).tobytes()
