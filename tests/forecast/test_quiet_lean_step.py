"""The early quiet test's lean step for a job built again (forecast/quiet_early.py `_step_again`,
`LEAN_STEP`; semantics F15): facts in no sum replaced in place, FutureIdle moved by the fresh keys
(`_Anchor.move_keys`), the backlog watch charged by the held records' kept sums (`charge_kept`).
Each early test's answer and everything the test keeps (its sums and maps in their order, the held
records, FutureIdle, the watch's levels) are the reference's, which drops, adds, moves and charges."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_quiet import _bench_objects, _without_reclaim
from test_quiet_shared import _kept_by_value, same_as_reference

from apportion.cluster.node_table import NodeTable
from apportion.forecast import quiet_held
from apportion.forecast.quiet_early import EarlyQuietTest, _Anchor
from apportion.forecast.quiet_held import _Held, charge_kept
from apportion.plugins.capacity.backlog_watch import _delta
from apportion.resources import Resource
from apportion.simulation.skipping import EarlyView
from apportion.state.check import ENV, StateCheckError


def _sums(test: EarlyQuietTest) -> tuple[Any, ...]:
    """The test's facts and sums, with their maps' orders."""
    facts = [(uid, f.moved, f.unschedulable, f.best_effort, f.pending, f.admission, f.no_min_resources, f.key,
              f.need, f.version, f.phase) for uid, f in test._facts.items()]
    return (facts, list(test._held), list(test._moved.items()), sorted(test._unschedulable),
            sorted(test._best_effort), sorted(test._pending), {k: sorted(v) for k, v in test._backlog.items()},
            sorted(test._no_min), [(k, list(v.items())) for k, v in test._needs.items()], sorted(test._inexact),
            sorted(map(repr, test._pairs_moved)))


def _levels(test: EarlyQuietTest) -> Any:
    anchor = test._anchor
    watch = anchor.watch if anchor is not None else None
    if watch is None:
        return None
    return ({name: sorted((d, v) for d, v in level.acc.items() if v) for name, level in sorted(watch.levels.items())},
            {name: sorted((d, v) for d, v in acc.items() if v) for name, acc in sorted(watch.unread.items())})


def _observe(test: EarlyQuietTest, view: EarlyView, got: Any) -> tuple[Any, ...]:
    told = test._told
    return (view.session_uid, None if got is None else dict(got), None if told is None else told[:2],
            _kept_by_value(test), _sums(test), _levels(test))


def _same(objs: list[dict[str, Any]], conf_text: str | None, horizon: float) -> EarlyQuietTest:
    return same_as_reference(objs, conf_text, horizon, {"LEAN_STEP": True}, _observe)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_the_lean_step_keeps_what_the_reference_keeps(case: tuple[list[dict[str, Any]], str | None],
                                                     drop: bool) -> None:
    """Random GPU dumps (flat or tree capacity, with and without reclaim)."""
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        _same(objs, _without_reclaim(conf_text, drop), 4 * 3600.0)


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_the_lean_step_on_the_benchmark_shape(seed: int) -> None:
    """The benchmark's dump, small: gangs whose tasks finish one by one (facts in no sum, the watch
    charged by kept sums) and phases written by skipped sessions."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        test = _same(_bench_objects(seed, nodes=6, gangs=24), None, 3 * 3600.0)
    assert test.early > 0


def _amount(draw: Any, names: list[str]) -> Any:
    """One amount: cpu, memory and some of the scalar names in some order, as integers."""
    ints = st.integers(-(2**40), 2**40)
    listed = draw(st.permutations(names))[:draw(st.integers(0, len(names)))]
    return (draw(ints), draw(ints), tuple((n, draw(ints)) for n in listed))


@st.composite
def _charged(draw: Any) -> tuple[Any, ...]:
    """Charged amounts (allocated, request, inqueue or None, elastic or None) over a few scalar names,
    cpu among them at times."""
    names = draw(st.lists(st.sampled_from(["pods", "nvidia.com/gpu", "ephemeral-storage", "cpu", "x"]),
                          unique=True, max_size=3))
    fields = [_amount(draw, names), _amount(draw, names)]
    for _ in range(2):
        fields.append(_amount(draw, names) if draw(st.booleans()) else None)
    return tuple(fields)


class _Watch:
    def __init__(self) -> None:
        self.got: list[Any] = []

    def charge(self, queue: str, old: Any, new: Any) -> None:
        self.got.append(("charge", queue, old, new))

    def charge_delta(self, queue: str, delta: dict[str, int]) -> None:
        self.got.append(("delta", queue, list(delta.items())))


@settings(max_examples=80, deadline=None)
@given(st.lists(_charged(), min_size=2, max_size=5))
def test_charge_kept_is_the_watch_charge(amounts: list[tuple[Any, ...]]) -> None:
    """A chain of held records charged one after the other: the difference handed to the watch is
    `_delta`'s, dimension for dimension in its order; with a scalar named cpu or memory, `charge`."""
    held = [_Held("q", a, {}) for a in amounts]
    for old, now in zip(held, held[1:]):
        watch = _Watch()
        charge_kept(watch, old, now, True)  # type: ignore[arg-type]
        want = _delta(old.amounts, now.amounts)
        assert watch.got == ([("charge", "q", old.amounts, now.amounts)] if want is None
                             else [("delta", "q", list(want.items()))])


def test_the_self_check_fails_loudly_on_a_wrong_kept_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept sum off by one: the difference handed to the watch is not the charged amounts'."""
    monkeypatch.setenv(ENV, "1")
    right = quiet_held._watched

    def wrong(held: _Held, checking: bool = False) -> Any:
        got = right(held)
        return None if got is None else (got[0] + 1, got[1], got[2])

    monkeypatch.setattr(quiet_held, "_watched", wrong)
    old = _Held("q", ((4, 8, ()), (4, 8, ()), None, None), {})
    now = _Held("q", ((2, 8, ()), (2, 8, ()), None, None), {})
    now.watched = None
    old.watched = (3, 8, {})
    with pytest.raises(StateCheckError, match="kept sums"):
        charge_kept(_Watch(), old, now, True)  # type: ignore[arg-type]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True),
       st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.tuples(st.integers(0, 3), st.integers(0, 2))),
       st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.tuples(st.integers(0, 3), st.integers(0, 2))),
       st.booleans())
def test_move_keys_is_move(keys: list[str], old: dict[str, tuple[int, int]], new: dict[str, tuple[int, int]],
                           fraction: bool) -> None:
    """Placements by key (row, one of three requests, one of them a fraction or not) moved by some
    keys: the same answer, FutureIdle bit for bit and rows marked as `move`'s."""
    requests = [Resource(1000.0, 2.0), Resource(500.0, 1.5 if fraction else 1.0), Resource(2000.0, 4.0)]
    vecs = [np.array([r.cpu, r.memory]) for r in requests]

    def placed(m: dict[str, tuple[int, int]]) -> dict[str, Any]:
        return {k: (row, requests[i], vecs[i]) for k, (row, i) in m.items()}

    table = NodeTable([f"n{i}" for i in range(4)], [Resource(8000, 32)] * 4, set())
    out = []
    for lean in (True, False):
        anchor = _Anchor([], None, False, False, {}, table, np.full((4, 2), 16000.0), None)
        ok = anchor.move_keys(placed(old), placed(new), keys) if lean else anchor.move(placed(old), placed(new), keys)
        out.append((ok, anchor.future.tobytes(), sorted(anchor.unchecked), sorted(anchor.bound.stale)))
    assert out[0] == out[1]
