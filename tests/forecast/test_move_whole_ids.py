"""The early quiet test's FutureIdle moves (`_Anchor.move`, forecast/quiet_anchor.py) taking whether a
request is whole from the request objects `WholeRequests` found whole (`WHOLE_BY_ID`): the same
answer and the same FutureIdle as asking `whole_request` of every request moved (the reference),
whatever the requests (whole, fractions, 2**50, NaN, infinities), which of them the test has seen, and
which keys the caller says may differ."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.node_table import NodeTable
from apportion.forecast import quiet_anchor
from apportion.forecast.quiet_early import _Anchor
from apportion.forecast.quiet_whole import WholeRequests
from apportion.resources import Resource
from apportion.state.check import ENV

_ROWS = 4
_AMOUNT = st.one_of(st.integers(0, 2**20).map(float),
                    st.sampled_from([0.5, float(2**50), float(2**50 - 1), -0.0, math.nan, math.inf]))


class _Task:
    """What `WholeRequests` reads of a task: its request."""

    def __init__(self, resreq: Resource) -> None:
        self.resreq = resreq


def _anchor() -> _Anchor:
    future = np.array([[2.0**40, 2.0**40, 64.0]] * _ROWS)
    table = NodeTable([f"n{i}" for i in range(_ROWS)], [Resource(1, 1)] * _ROWS, set())
    return _Anchor([], None, False, False, {}, table, future, None)


def _move(anchor: _Anchor, old: dict[str, Any], new: dict[str, Any], keys: list[str] | None,
          whole_ids: Any, by_id: bool, checking: bool = True) -> bool:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(quiet_anchor, "WHOLE_BY_ID", by_id)
        return anchor.move(old, new, keys, whole_ids, checking=checking)


_PLACED = st.dictionaries(st.sampled_from([f"t{i}" for i in range(6)]),
                          st.tuples(st.integers(0, _ROWS - 1), st.integers(0, 5)), max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_AMOUNT, _AMOUNT, _AMOUNT), min_size=6, max_size=6), _PLACED, _PLACED,
       st.lists(st.integers(0, 5), max_size=6), st.one_of(st.none(), st.lists(st.sampled_from(
           [f"t{i}" for i in range(6)]), unique=True)), st.booleans())
def test_moves_taken_by_id_are_those_asked_of_every_request(amounts: list[tuple[float, float, float]],
                                                            old_at: dict[str, tuple[int, int]],
                                                            new_at: dict[str, tuple[int, int]],
                                                            seen: list[int], keys: list[str] | None,
                                                            checking: bool) -> None:
    requests = [Resource(cpu, memory, {"nvidia.com/gpu": gpu}) for cpu, memory, gpu in amounts]
    vecs = [np.array([r.cpu, r.memory, r.scalars["nvidia.com/gpu"]]) for r in requests]
    whole = WholeRequests()
    whole([_Task(requests[i]) for i in seen])  # the requests the test has seen, whole or not
    old = {k: (row, requests[i], vecs[i]) for k, (row, i) in old_at.items()}
    new = {k: (row, requests[i], vecs[i]) for k, (row, i) in new_at.items()}
    if keys is not None:
        # the caller names every key whose entry may differ: the others are one entry in both
        for k in set(old) | set(new):
            if k not in keys:
                if k in old:
                    new[k] = old[k]
                else:
                    old[k] = new[k]
    fast, reference = _anchor(), _anchor()
    got = _move(fast, old, new, keys, whole.whole, True, checking)
    want = _move(reference, old, new, keys, whole.whole, False)
    assert got == want
    if want:
        assert np.array_equal(fast.future, reference.future, equal_nan=True)
        assert fast.unchecked == reference.unchecked
        assert fast.bound.stale == reference.bound.stale


def test_a_request_known_whole_by_id_is_checked_under_the_self_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the self-check a request taken as whole by its id is asked all the same, and one that
    is not whole (an id the test never found whole) fails the run."""
    monkeypatch.setenv(ENV, "1")
    r = Resource(0.5, 1.0)
    vec = np.array([0.5, 1.0, 0.0])
    with pytest.raises(Exception, match="known whole by its id"):
        _anchor().move({}, {"t": (0, r, vec)}, None, {id(r)}, checking=True)
    assert _anchor().move({}, {"t": (0, r, vec)}, None, frozenset(), checking=True) is False
