"""The early quiet test in proportion to what changed (forecast/quiet_early.py, semantics F8): a job built
again keeps its held record for the tasks the new object shares with the one its facts were worked out
on (`fresh_tasks`, `HELD_BY_SHARED`), and the backlog watch is told only the pairs of the jobs whose
facts moved (`PAIRS_BY_MOVE`). Each early test's answer and everything it keeps are those of the
reference, which looks at every task and compares the watch with the whole backlog."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_quiet import _answer, _bench_objects, _simulator, _without_reclaim

from apportion.cluster.model import JobInfo, PodGroupPhase, TaskInfo, TaskStatus
from apportion.cluster.node_table import NodeTable
from apportion.forecast import quiet_early
from apportion.forecast.quiet_early import EarlyQuietTest, _Anchor
from apportion.forecast.quiet_kept import Facts, fresh_tasks
from apportion.forecast.quiet_whole import whole_table
from apportion.plugins.capacity.backlog_watch import BacklogWatch
from apportion.resources import Resource
from apportion.simulation.engine import Simulator
from apportion.simulation.skipping import EarlyView
from apportion.state.check import ENV, StateCheckError


def _kept_by_value(test: EarlyQuietTest) -> tuple[Any, ...]:
    """What the early test keeps between sessions, by value: the held records (placements by row,
    request amounts and table row), the inexact jobs, and the anchor's watch pairs."""
    held = {uid: (h.queue, h.amounts, {k: (row, r.cpu, r.memory, tuple(r.scalars.items()), vec.tobytes())
                                       for k, (row, r, vec) in sorted(h.placed.items())})
            for uid, h in sorted(test._held.items())}
    anchor = test._anchor
    watch = anchor.watch if anchor is not None else None
    pairs = None if watch is None else (sorted(map(repr, watch.pairs)), sorted(map(repr, watch.refused)))
    future = None if anchor is None else anchor.future.tobytes()
    return held, sorted(test._inexact), pairs, future


def traced_forecast(objs: list[dict[str, Any]], conf_text: str | None, horizon: float, switches: dict[str, bool],
                    observe: Callable[[EarlyQuietTest, EarlyView, Any], tuple[Any, ...]],
                    before: Callable[[EarlyView], None] | None = None) -> tuple[Simulator, list[tuple[Any, ...]]]:
    """The forecast with quiet_early's `switches` set and the self-check off (it opens every session),
    and per early test what `observe` makes of it after its answer (`before` looks at the view first)."""
    trace: list[tuple[Any, ...]] = []
    before_open = EarlyQuietTest.before_open

    def spy(self: EarlyQuietTest, view: EarlyView) -> Any:
        if before is not None:
            before(view)
        got = before_open(self, view)
        trace.append(observe(self, view, got))
        return got

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        for name, on in switches.items():
            mp.setattr(quiet_early, name, on)
        mp.setattr(EarlyQuietTest, "before_open", spy)
        sim = _simulator(objs, conf_text, True, horizon)
        test = sim.quiet
        assert isinstance(test, EarlyQuietTest)
        sim.early = test.before_open
        sim.run()
    return sim, trace


def same_as_reference(objs: list[dict[str, Any]], conf_text: str | None, horizon: float, switches: dict[str, bool],
                      observe: Callable[[EarlyQuietTest, EarlyView, Any], tuple[Any, ...]],
                      before: Callable[[EarlyView], None] | None = None) -> EarlyQuietTest:
    """The forecast with `switches` as given and each of them flipped (the reference) traces every early
    test alike and answers alike; the first run's early test."""
    fast, fast_trace = traced_forecast(objs, conf_text, horizon, switches, observe, before)
    ref, ref_trace = traced_forecast(objs, conf_text, horizon, {k: not on for k, on in switches.items()}, observe,
                                     before)
    assert fast_trace == ref_trace
    assert _answer(fast) == _answer(ref) and fast.sessions_skipped == ref.sessions_skipped
    test = fast.quiet
    assert isinstance(test, EarlyQuietTest)
    return test


def _observe(test: EarlyQuietTest, view: EarlyView, got: Any) -> tuple[Any, ...]:
    told = test._told
    return (view.session_uid, None if got is None else dict(got), None if told is None else told[:2],
            _kept_by_value(test))


def _same_as_reference(objs: list[dict[str, Any]], conf_text: str | None, horizon: float) -> EarlyQuietTest:
    return same_as_reference(objs, conf_text, horizon, {"HELD_BY_SHARED": True, "PAIRS_BY_MOVE": True}, _observe)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_shared_tasks_and_moved_pairs_keep_what_the_reference_keeps(case: tuple[list[dict[str, Any]], str | None],
                                                                    drop: bool) -> None:
    """Random GPU dumps (flat or tree capacity, with and without reclaim)."""
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        _same_as_reference(objs, _without_reclaim(conf_text, drop), 4 * 3600.0)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([(4, 20), (10, 40)]))
def test_shared_tasks_and_moved_pairs_on_the_benchmark_shape(seed: int, shape: tuple[int, int]) -> None:
    """The benchmark's dump, small: jobs built again as their tasks finish, one by one, and phases
    written by skipped sessions, with waiting jobs let into the backlog and out of it."""
    nodes, gangs = shape
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        test = _same_as_reference(_bench_objects(seed, nodes=nodes, gangs=gangs), None, 3 * 3600.0)
    assert test.early > 0


def test_the_self_check_compares_the_held_records_and_the_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the self-check every held record taken from shared tasks is made anew and compared, and
    the watch's pairs with the backlog's, at every early test: the run passes and its answer is the
    plain run's."""
    objs = _bench_objects(1, nodes=10, gangs=40)
    monkeypatch.delenv(ENV, raising=False)
    plain = _simulator(objs, None, True, 3600.0)
    plain.run()
    monkeypatch.setenv(ENV, "1")
    again = EarlyQuietTest._add_again
    calls = [0, 0]

    def counted(self: EarlyQuietTest, uid: str, facts: Facts, held: Any, fresh: list[tuple[str, TaskInfo]],
                checking: bool, replacing: bool = False) -> None:
        calls[0] += 1
        calls[1] += not fresh
        again(self, uid, facts, held, fresh, checking, replacing)

    monkeypatch.setattr(EarlyQuietTest, "_add_again", counted)
    checked = _simulator(objs, None, True, 3600.0)
    checked.run()
    assert _answer(checked) == _answer(plain)
    assert calls[0] > calls[1] > 0  # jobs built again, and jobs given a phase


def test_the_self_check_fails_loudly_on_a_wrong_shared_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every task taken as shared, the finished ones too: the held record made anew differs."""
    monkeypatch.setenv(ENV, "1")
    monkeypatch.setattr(quiet_early, "fresh_tasks", lambda job, was: [])
    sim = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3 * 3600.0)
    with pytest.raises(StateCheckError, match="held record"):
        sim.run()


def test_the_self_check_fails_loudly_on_a_pair_the_watch_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A watch that never lets a pair go: once a waiting job is admitted, its pair stays watched."""
    monkeypatch.setenv(ENV, "1")
    monkeypatch.setattr(BacklogWatch, "drop_pair", lambda self, key: None)
    sim = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3 * 3600.0)
    with pytest.raises(StateCheckError, match="pairs told by the moved jobs"):
        sim.run()


def _task(name: str, status: TaskStatus, node: str = "") -> TaskInfo:
    return TaskInfo(uid=name, name=name, namespace="ns", job="ns/j", resreq=Resource(1000.0, 1.0),
                    status=status, node_name=node)


def _facts_of(job: JobInfo) -> Facts:
    return Facts(moved=None, unschedulable=False, best_effort=False, pending=False, admission=None,
                 no_min_resources=False, key=None, least=None, need=0, job=job, version=job.version,
                 phase=job.phase)


def test_fresh_tasks_are_those_not_shared_with_an_unchanged_object() -> None:
    a, b, c = _task("a", TaskStatus.RUNNING, "n0"), _task("b", TaskStatus.RUNNING, "n1"), _task("c", TaskStatus.PENDING)
    was = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", phase=PodGroupPhase.RUNNING)
    for t in (a, b, c):
        was.add_task(t)
    facts = _facts_of(was)
    assert fresh_tasks(was, facts) == []  # the same object (given a phase): every task shared
    done = _task("b", TaskStatus.SUCCEEDED)
    again = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", phase=PodGroupPhase.RUNNING)
    for t in (a, done, c):
        again.add_task(t)
    assert fresh_tasks(again, facts) == [("b", done)]
    other = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", phase=PodGroupPhase.RUNNING)
    for t in (a, _task("d", TaskStatus.PENDING), c):
        other.add_task(t)
    assert fresh_tasks(other, facts) is None  # another task key
    fewer = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", phase=PodGroupPhase.RUNNING)
    fewer.add_task(a)
    assert fresh_tasks(fewer, facts) is None
    was.set_status(c, TaskStatus.ALLOCATED)  # the object the facts were worked out on changed since
    assert fresh_tasks(again, facts) is None and fresh_tasks(was, facts) is None


_AMOUNT = st.one_of(st.integers(-(2**51), 2**51).map(float),
                    st.sampled_from([0.0, -0.0, 0.5, float(2**50), float(2**50 - 1), -float(2**50), math.nan,
                                     math.inf, -math.inf]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.lists(_AMOUNT, min_size=3, max_size=3)), max_size=12),
       st.lists(st.integers(0, 12), max_size=4))
def test_future_kept_whole_row_by_row_is_the_whole_table(moves: list[tuple[int, list[float]]], asks: list[int]) -> None:
    """Rows changed at random between asks (whole amounts, fractions, 2**50, NaN, infinities): the
    anchor's answer, looking only at the rows moved since its last one, is `whole_table`'s."""
    future = np.array([[4000.0, 2.0**40, 8.0]] * 4)
    anchor = _Anchor([], None, False, False, {}, NodeTable([f"n{i}" for i in range(4)], [Resource(1, 1)] * 4, set()),
                     future, None)
    for i, (row, values) in enumerate(moves):
        future[row] = values
        anchor.unchecked.add(row)
        if i in asks:
            assert anchor.future_whole() == whole_table(future)
    assert anchor.future_whole() == whole_table(future)
