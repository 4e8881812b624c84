"""The quiet test asked before the snapshot and the open (forecast/quiet_early.py, semantics F3): a
forecast that decides sessions early gives the answer of the forecast that opens each of them and of
the one that runs them all; capacity's backlog watch answers as capacity's own backlog test."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_quiet import RECLAIM, _answer, _bench_objects, _plain_and_checked, _simulator, _without_reclaim

from apportion.cluster.model import PodGroupPhase
from apportion.cluster.node_table import NodeTable
from apportion.forecast.quiet_bound import RowsMade
from apportion.forecast.quiet_early import EarlyQuietTest, _Anchor
from apportion.forecast.quiet_kept import QuietTest
from apportion.framework.session import Session
from apportion.plugins.capacity.backlog_watch import BacklogWatch
from apportion.resources import Resource
from apportion.simulation.engine import Simulator
from apportion.state.check import ENV, StateCheckError


def _three(objs: list[dict[str, Any]], conf_text: str | None, horizon: float) -> tuple[Simulator, Simulator]:
    """The forecast deciding early, opening every session it skips (the seventh and eighth sessions'
    reference) and running every session: the same answer, the same sessions skipped."""
    early = _simulator(objs, conf_text, True, horizon)
    early.run()
    opened = _simulator(objs, conf_text, True, horizon)
    opened.early = None
    opened.run()
    every = _simulator(objs, conf_text, False, horizon)
    every.run()
    assert _answer(early) == _answer(opened) == _answer(every)
    assert early.sessions_skipped == opened.sessions_skipped
    a, b = early.quiet, opened.quiet
    assert isinstance(a, EarlyQuietTest) and isinstance(b, QuietTest) and b.early == 0
    assert (a.asked, a.quiet, a.phases_only) == (b.asked, b.quiet, b.phases_only)
    return early, opened


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_deciding_early_changes_no_forecast(case: tuple[list[dict[str, Any]], str | None], drop: bool) -> None:
    """Random GPU dumps (flat or tree capacity, Volcano's default conf with proportion; with and
    without reclaim, which no session is skipped under)."""
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        _three(objs, _without_reclaim(conf_text, drop), 4 * 3600.0)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([(4, 20), (10, 40)]), st.booleans())
def test_deciding_early_changes_no_forecast_on_the_benchmark_shape(seed: int, shape: tuple[int, int],
                                                                   reclaim: bool) -> None:
    nodes, gangs = shape
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        early, _ = _three(_bench_objects(seed, nodes=nodes, gangs=gangs), RECLAIM if reclaim else None, 3 * 3600.0)
    test = early.quiet
    assert isinstance(test, EarlyQuietTest)
    if reclaim:
        assert test.early == early.sessions_skipped == 0
    else:
        # every skipped session but one before which no session was opened yet is decided early, and
        # most sessions that run are opened with the early test's answer
        assert 0 < test.early >= early.sessions_skipped - 1
        assert test.carried > 0


def test_the_self_check_opens_early_sessions_and_compares(monkeypatch: pytest.MonkeyPatch) -> None:
    plain, checked = _plain_and_checked(monkeypatch, _bench_objects(1, nodes=10, gangs=40))
    a, b = plain.quiet, checked.quiet
    assert isinstance(a, EarlyQuietTest) and isinstance(b, EarlyQuietTest)
    assert b.early == a.early > 0 and b.phases_only > 0
    assert checked.sessions_skipped == 0  # each was opened, compared, run and changed nothing else
    assert _answer(checked) == _answer(plain)


def test_the_self_check_fails_loudly_on_a_wrong_early_admission(monkeypatch: pytest.MonkeyPatch) -> None:
    """A watch that never admits: the first session in which a completion lets a job in is decided
    quiet before its open, and opened it is not."""
    monkeypatch.setenv(ENV, "1")
    monkeypatch.setattr(BacklogWatch, "admits_any", lambda self: False)
    sim = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3 * 3600.0)
    with pytest.raises(StateCheckError, match="decided before its open"):
        sim.run()


def test_the_self_check_fails_loudly_on_a_wrong_future_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """FutureIdle not moved by the tasks that finished: a session decided early sees other rows than
    its open does (or, with more room than it thinks, is quiet when it is not)."""
    monkeypatch.setenv(ENV, "1")
    monkeypatch.setattr(_Anchor, "move", lambda self, old, new, *rest, **kw: True)
    sim = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3 * 3600.0)
    with pytest.raises(StateCheckError, match="decided before its open"):
        sim.run()


def _watch_against_capacity(objs: list[dict[str, Any]], conf_text: str | None) -> int:
    """Run the forecast; whenever an early test asks the watch whether the backlog test would admit a
    job (whatever it answers: the self-check compares only the sessions decided quiet), the session
    opened next must answer the same with capacity's own test. Returns how many were compared."""
    asked: dict[str, bool] = {}
    compared = 0
    decide, before_open, call = QuietTest.decide, EarlyQuietTest.before_open, EarlyQuietTest.__call__
    at: list[str] = [""]

    def spy_decide(self: QuietTest, actions: list[str], future: Any, admits: Any, places: Any = None,
                   checking: bool | None = None) -> Any:
        if not isinstance(getattr(admits, "__self__", None), BacklogWatch):
            return decide(self, actions, future, admits, places, checking)

        def recorded() -> bool:
            asked[at[0]] = got = admits()
            return bool(got)

        return decide(self, actions, future, recorded, places, checking)

    def spy_before_open(self: EarlyQuietTest, view: Any) -> Any:
        at[0] = view.session_uid
        return before_open(self, view)

    def spy_call(self: EarlyQuietTest, ssn: Session) -> dict[str, PodGroupPhase] | None:
        nonlocal compared
        got = call(self, ssn)
        want = asked.pop(ssn.uid, None)
        if want is not None:
            jobs = ssn.jobs
            reps = [jobs[uid] for uid in sorted(min(uids) for uids in self._backlog.values())]
            assert reps and (ssn.enqueue_admissible(reps) != []) == want
            compared += 1
        return got

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        mp.setattr(QuietTest, "decide", spy_decide)
        mp.setattr(EarlyQuietTest, "before_open", spy_before_open)
        mp.setattr(EarlyQuietTest, "__call__", spy_call)
        sim = _simulator(objs, conf_text, True, 4 * 3600.0)
        test = sim.quiet
        assert isinstance(test, EarlyQuietTest)
        sim.early = test.before_open
        sim.run()
    # a watch that was asked and after which no session was opened said no: the session was skipped
    assert not any(asked.values())
    return compared


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps())
def test_the_backlog_watch_answers_as_capacity(case: tuple[list[dict[str, Any]], str | None]) -> None:
    objs, conf_text = case
    _watch_against_capacity(objs, _without_reclaim(conf_text, True))


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_the_backlog_watch_answers_as_capacity_on_the_benchmark_shape(seed: int) -> None:
    """Here completions do let waiting jobs in: the watch's yes is compared too."""
    assert _watch_against_capacity(_bench_objects(seed, nodes=10, gangs=40), None) > 0


_AMOUNT = st.one_of(st.sampled_from([0.0, -0.0, 1.0, 4000.0, float("nan")]), st.floats(allow_nan=True))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_AMOUNT, _AMOUNT, st.dictionaries(st.sampled_from(["nvidia.com/gpu", "pods", "x/other"]),
                                                             _AMOUNT, max_size=2)), min_size=1, max_size=8))
def test_rows_made_are_the_table_vectors_bit_for_bit(requests: list[tuple[float, float, dict[str, float]]]) -> None:
    """Kept per request object, per amounts and per value: each is `NodeTable.vector` bit for bit
    (zeros of either sign and NaNs included), equal amounts share one read-only array."""
    table = NodeTable(["n0"], [Resource(1, 1, {"nvidia.com/gpu": 1.0, "pods": 1.0})], set())
    made = RowsMade()
    seen: dict[bytes, np.ndarray] = {}
    for cpu, memory, scalars in requests * 2:
        r = Resource(cpu, memory, scalars)
        row, want = made.row(table, r), table.vector(r)
        assert row.tobytes() == want.tobytes() and not row.flags.writeable
        assert seen.setdefault(row.tobytes(), row) is row
