"""allocate's bound kept row by row (forecast/quiet_bound.py) is `places_at_most` over every row, at
every ask, whatever rows moved in between."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from apportion.forecast.quiet import places_at_most
from apportion.forecast.quiet_bound import KeptBound, row_count, row_counts

_AMOUNTS = st.one_of(st.integers(-4000, 64000).map(float), st.floats(-4, 64), st.just(0.0),
                     st.sampled_from([1e15, 3e12, 2.0**41]))
_REQUESTS = st.one_of(st.integers(0, 9000).map(float), st.floats(0, 16), st.sampled_from([1e-3, 5e-324]))


@settings(max_examples=300, deadline=None)
@given(future=hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.just(3)), elements=_AMOUNTS),
       requests=st.lists(hnp.arrays(np.float64, 3, elements=_REQUESTS), min_size=1, max_size=3),
       steps=st.lists(st.tuples(st.integers(0, 5), hnp.arrays(np.float64, 3, elements=_AMOUNTS),
                                st.integers(0, 2), st.booleans()), max_size=12))
def test_the_kept_bound_is_the_bound_over_every_row(future: np.ndarray, requests: list[np.ndarray],
                                                    steps: list[tuple[int, np.ndarray, int, bool]]) -> None:
    """Rows move (one at a time, several between two asks, or none), keys are asked in any order."""
    with np.errstate(over="ignore"):
        _moves(future, requests, steps)


def _moves(future: np.ndarray, requests: list[np.ndarray], steps: list[tuple[int, np.ndarray, int, bool]]) -> None:
    kept = KeptBound(future)
    for least in requests:
        assert kept.places_at_most(least.tobytes(), least) == places_at_most(future, least)
    for row, by, which, ask in steps:
        row %= len(future)
        future[row] += by
        kept.stale.add(row)
        if ask:
            least = requests[which % len(requests)]
            assert kept.places_at_most(least.tobytes(), least) == places_at_most(future, least)
    for least in requests:
        assert kept.places_at_most(least.tobytes(), least) == places_at_most(future, least)


@settings(max_examples=300, deadline=None)
@given(row=hnp.arrays(np.float64, 3, elements=st.one_of(_AMOUNTS, st.sampled_from([np.inf, -np.inf]))),
       least=hnp.arrays(np.float64, 3, elements=_REQUESTS))
def test_a_row_counted_alone_is_counted_as_over_every_row(row: np.ndarray, least: np.ndarray) -> None:
    """Python's floats against numpy's, infinities and the 2**40 cap included."""
    if not (least > 0).any():
        return
    dims = [(int(d), float(least[d])) for d in np.nonzero(least > 0)[0]]
    with np.errstate(invalid="ignore", over="ignore"):
        assert row_count(row.tolist(), dims) == row_counts(row[None, :], least)[0]


def test_rows_moved_are_worked_out_again_and_no_other() -> None:
    """The point of keeping it: after a move, one row per kept key is worked out again."""
    future = np.array([[32000.0, 128.0], [4000.0, 16.0], [0.0, 0.0]])
    least = np.array([4000.0, 16.0])
    kept = KeptBound(future)
    assert kept.places_at_most(least.tobytes(), least) == 8 + 1 + 0
    future[2] += least
    kept.stale.add(2)
    assert kept.places_at_most(least.tobytes(), least) == places_at_most(future, least) == 8 + 1 + 1
    assert (kept.full, kept.patched) == (1, 1)
