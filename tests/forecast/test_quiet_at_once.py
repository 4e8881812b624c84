"""The early quiet test's checks written for speed (forecast/quiet_anchor.py `ROWS_AT_ONCE`,
forecast/quiet_whole.py `WHOLE_AT_ONCE`) answer as their references: whether FutureIdle's moved rows are
whole, judged in one numpy pass, and whether a request is whole, judged written out rather than
looked up per amounts, over amounts chosen to sit on every edge (whole, fractions, 2**50 and just
below, negative zero, NaN, the infinities)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_quiet_first import _resource

from apportion.cluster.node_table import NodeTable
from apportion.forecast import quiet_anchor, quiet_whole
from apportion.forecast.quiet_anchor import _Anchor
from apportion.forecast.quiet_whole import WholeRequests, whole_request, whole_table
from apportion.resources import Resource
from apportion.state.check import ENV, StateCheckError

_AMOUNT = st.one_of(
    st.integers(-(2**51), 2**51).map(float),
    st.sampled_from([0.0, -0.0, 0.5, -1.5, float(2**50), float(2**50 - 1), -float(2**50), -float(2**50 - 1),
                     math.nan, math.inf, -math.inf]),
    st.floats(allow_nan=True, allow_infinity=True),
)
_ROWS = 12


def _anchor(future: np.ndarray) -> _Anchor:
    table = NodeTable([f"n{i}" for i in range(_ROWS)], [Resource(1, 1)] * _ROWS, set())
    return _Anchor([], None, False, False, {}, table, future, None)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, _ROWS - 1), st.lists(_AMOUNT, min_size=3, max_size=3)), max_size=40),
       st.lists(st.integers(0, 30), max_size=6), st.booleans())
def test_rows_judged_at_once_are_those_judged_one_by_one(moves: list[tuple[int, list[float]]], asks: list[int],
                                                         checking: bool) -> None:
    """Rows changed at random between asks (few and many at a time, so both the Python and the numpy
    pass answer): the anchor with `ROWS_AT_ONCE` answers as without it and as `whole_table`, and keeps
    the same rows marked not whole; under the self-check it compares and stays quiet."""
    start = np.array([[4000.0, 2.0**40, 8.0]] * _ROWS)
    fast, reference = _anchor(start.copy()), _anchor(start.copy())
    with pytest.MonkeyPatch.context() as mp:
        if checking:
            mp.setenv(ENV, "1")
        else:
            mp.delenv(ENV, raising=False)

        def ask(anchor: _Anchor, at_once: bool) -> bool:
            mp.setattr(quiet_anchor, "ROWS_AT_ONCE", at_once)
            return anchor.future_whole()

        for i, (row, values) in enumerate(moves):
            for anchor in (fast, reference):
                anchor.future[row] = values
                anchor.unchecked.add(row)
            if i in asks or i == len(moves) - 1:
                got, want = ask(fast, True), ask(reference, False)
                assert got == want == whole_table(fast.future)
                assert fast.not_whole == reference.not_whole and not fast.unchecked


def test_the_self_check_catches_rows_judged_wrongly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A numpy pass that answered otherwise than the rows one by one fails loudly under the self-check."""
    future = np.array([[4000.0, 2.0**40, 8.0]] * _ROWS)
    anchor = _anchor(future)
    future[3, 1] = 0.5
    anchor.unchecked.update(range(_ROWS))
    monkeypatch.setenv(ENV, "1")
    monkeypatch.setattr(quiet_anchor, "_row_whole", lambda row: True)
    with pytest.raises(StateCheckError):
        anchor.future_whole()


class _Task:
    """What `WholeRequests` reads of a task: its request."""

    def __init__(self, resreq: Resource) -> None:
        self.resreq = resreq


_REQUESTS = st.builds(_resource, _AMOUNT, _AMOUNT,
                      st.dictionaries(st.sampled_from(["nvidia.com/gpu", "pods", "x"]), _AMOUNT, max_size=3))


@settings(max_examples=300, deadline=None)
@given(st.lists(_REQUESTS, min_size=1, max_size=10), st.lists(st.lists(st.integers(0, 30), max_size=8),
                                                                min_size=1, max_size=6), st.booleans())
def test_requests_judged_written_out_are_those_looked_up(requests: list[Resource], asks: list[list[int]],
                                                         checking: bool) -> None:
    """Task lists drawn from a pool of request objects (shared, and equal by value as copies), asked
    again: `WholeRequests` with `WHOLE_AT_ONCE` answers as with the lookup per amounts and as
    `whole_request` per task, and keeps the same request objects whole."""
    pool = requests + [r.clone() for r in requests]
    tasks = [_Task(r) for r in pool]
    fast, reference = WholeRequests(), WholeRequests()
    with pytest.MonkeyPatch.context() as mp:
        if checking:
            mp.setenv(ENV, "1")
        else:
            mp.delenv(ENV, raising=False)
        for ask in asks:
            chosen: list[Any] = [tasks[i % len(tasks)] for i in ask]
            want = all(whole_request(t.resreq) for t in chosen)
            mp.setattr(quiet_whole, "WHOLE_AT_ONCE", True)
            got = fast(chosen)
            mp.setattr(quiet_whole, "WHOLE_AT_ONCE", False)
            assert got == reference(chosen) == want
            assert fast.whole == reference.whole and fast.seen.keys() == reference.seen.keys()
