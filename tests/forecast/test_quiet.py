"""Quiet sessions (forecast/quiet.py, semantics F1): a forecast that skips the sessions its test shows to
change nothing gives the answer of the forecast that runs them all."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from test_fit import start_of
from test_forecast_sim import busy_dumps

from apportion.cluster.model import PodGroupPhase
from apportion.forecast.quiet import (
    least_request,
    least_request_reference,
    places_at_most,
    places_at_most_reference,
    session_verdict,
)
from apportion.forecast.quiet_kept import QuietTest
from apportion.forecast.sim import forecast_simulator
from apportion.framework.session import Session
from apportion.simulation.engine import Simulator
from apportion.state import check
from apportion.state.check import ENV, StateCheckError

SMALL = dict(nodes=4, gangs=20, pods_per_gang=4, queues=4)
RECLAIM = """actions: "enqueue, allocate, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: capacity
  - name: nodeorder
"""


def _bench_objects(seed: int, **shape: int) -> list[dict[str, Any]]:
    from benchmarks.bench_forecast import busy_objects

    return busy_objects({**SMALL, **shape}, seed=seed)


def _simulator(objs: list[dict[str, Any]], conf_text: str | None, skip: bool, horizon: float | None) -> Simulator:
    return forecast_simulator(start_of(objs, conf_text), horizon=horizon, skip_quiet=skip)


def _answer(sim: Simulator) -> tuple[Any, ...]:
    """Everything a forecast reads or reports of a run, and what the next decision would read."""
    jobs = {u: (j.first_start, j.last_start, j.finish, j.phase, j.state, j.evictions, j.done_tasks,
                tuple((t.status, t.node, t.start, t.attempt) for t in j.tasks)) for u, j in sim.jobs.items()}
    return jobs, sim.sessions, sim.events, sim.now, sim.stopped_at_limit, list(sim.warnings)


def _both(objs: list[dict[str, Any]], conf_text: str | None, horizon: float | None = 4 * 3600.0,
          ) -> tuple[Simulator, Simulator]:
    skipping = _simulator(objs, conf_text, True, horizon)
    skipping.run()
    every = _simulator(objs, conf_text, False, horizon)
    every.run()
    assert _answer(skipping) == _answer(every)
    assert every.sessions_skipped == 0 and every.quiet is None
    return skipping, every


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 3)),
                  elements=st.one_of(st.integers(-4000, 64000).map(float), st.floats(-4, 64))),
       hnp.arrays(np.float64, st.integers(1, 3), elements=st.one_of(st.integers(0, 9000).map(float),
                                                                      st.floats(0, 16))))
def test_the_bound_never_counts_fewer_tasks_than_fit(future: np.ndarray, least: np.ndarray) -> None:
    least = least[: future.shape[1]]
    future = future[:, : len(least)]
    with np.errstate(over="ignore"):
        if (least > 0).any() and float(((future + 0.2).clip(0) / np.where(least > 0, least, np.inf)).max()) > 5000:
            return  # the reference counts one task at a time
        assert places_at_most(future, least) >= places_at_most_reference(future, least)


class _Rows:
    """What `least_request` reads of a session: a row per task, from a few shared rows."""

    def __init__(self, rows: list[np.ndarray], of: dict[str, int]) -> None:
        self.rows, self.of = rows, of

    def task_vec(self, t: Any) -> np.ndarray:
        return self.rows[self.of[t.uid]]


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(hnp.arrays(np.float64, 3, elements=st.one_of(st.integers(0, 9000).map(float),
                                                                    st.floats(-1, 16), st.just(-0.0))),
                     min_size=1, max_size=3),
       tasks=st.lists(st.tuples(st.integers(0, 2), st.booleans(), st.booleans(), st.booleans()), max_size=6))
def test_the_least_request_is_the_stacked_minimum(rows: list[np.ndarray], tasks: list[Any]) -> None:
    """The smallest request of a job's tasks, taken as their shared row when every task has the same
    one, is the stacked minimum bit for bit (its bytes are the bound's key)."""
    from apportion.cluster.model import JobInfo, TaskInfo, TaskStatus
    from apportion.resources import Resource
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    of: dict[str, int] = {}
    for i, (row, pending, best_effort, gated) in enumerate(tasks):
        t = TaskInfo(uid=f"u{i}", name=f"t{i}", namespace="ns", job="ns/j",
                     resreq=Resource() if best_effort else Resource(1, 1),
                     status=TaskStatus.PENDING if pending else TaskStatus.RUNNING, gated=gated)
        job.add_task(t)
        of[t.uid] = min(row, len(rows) - 1)
    ssn = _Rows(rows, of)
    n, least = least_request(ssn, job)
    n_ref, least_ref = least_request_reference(ssn, job)
    assert n == n_ref
    assert (least is None) == (least_ref is None)
    if least is not None and least_ref is not None:
        assert least.dtype == least_ref.dtype and least.tobytes() == least_ref.tobytes()


def test_the_bound_is_the_count_on_whole_amounts() -> None:
    future = np.array([[32000.0, 128.0, 110.0], [3999.0, 64.0, 110.0], [-1000.0, 8.0, 3.0]])
    least = np.array([4000.0, 16.0, 0.0])
    assert places_at_most(future, least) == places_at_most_reference(future, least) == 8 + 0 + 0


def _without_reclaim(conf_text: str | None, drop: bool) -> str | None:
    """The dump's conf, or the same without reclaim (the test holds for enqueue, allocate, backfill)."""
    return conf_text.replace("reclaim, ", "") if conf_text and drop else conf_text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_skipping_quiet_sessions_changes_no_forecast(case: tuple[list[dict[str, Any]], str | None], drop: bool) -> None:
    """Random GPU dumps (flat or tree capacity, or Volcano's default conf with proportion)."""
    objs, conf_text = case
    _both(objs, _without_reclaim(conf_text, drop))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([4, 6]), st.booleans())
def test_skipping_changes_no_forecast_on_the_benchmark_shape(seed: int, nodes: int, reclaim: bool) -> None:
    """The benchmark's dump, small (capacity over a queue tree, enqueue and allocate; or with reclaim)."""
    skipping, _ = _both(_bench_objects(seed, nodes=nodes), RECLAIM if reclaim else None, horizon=3 * 3600.0)
    test = skipping.quiet
    assert isinstance(test, QuietTest) and test.asked == skipping.sessions
    if reclaim:
        assert test.quiet == skipping.sessions_skipped == 0 and set(test.reasons) == {"action"}
    else:
        # under the self-check (APPORTION_CHECK_STATE=1 for the whole suite) each is run and compared
        assert skipping.sessions_skipped == (0 if check.enabled() else test.quiet + test.phases_only)


def test_sessions_are_skipped_where_completions_free_too_little(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the benchmark's dump (small) most completions free room no waiting gang can use: those
    sessions are skipped, and the forecast is the one that runs them."""
    monkeypatch.delenv(ENV, raising=False)
    skipping, every = _both(_bench_objects(0), None, horizon=3 * 3600.0)
    assert skipping.sessions_skipped >= skipping.sessions // 4 > 0
    test = skipping.quiet
    assert isinstance(test, QuietTest) and test.quiet + test.phases_only == skipping.sessions_skipped
    # sessions that only move a phase (a gang bound in the last one turns Running) are not run either
    assert test.phases_only > 0 and "phase" not in test.reasons
    assert test.reasons.get("admission", 0) + test.reasons.get("placement", 0) > 0


def _plain_and_checked(monkeypatch: pytest.MonkeyPatch, objs: list[Any]) -> tuple[Simulator, Simulator]:
    """The same hour's forecast run without the self-check, then with it."""
    monkeypatch.delenv(ENV, raising=False)
    plain = _simulator(objs, None, True, 3600.0)
    plain.run()
    monkeypatch.setenv(ENV, "1")
    checked = _simulator(objs, None, True, 3600.0)
    checked.run()
    return plain, checked


def test_the_self_check_runs_quiet_sessions_and_compares(monkeypatch: pytest.MonkeyPatch) -> None:
    plain, checked = _plain_and_checked(monkeypatch, _bench_objects(1))
    test = checked.quiet
    assert isinstance(test, QuietTest) and test.quiet + test.phases_only == plain.sessions_skipped > 0
    assert test.quiet > 0 and test.phases_only > 0
    assert checked.sessions_skipped == 0  # each was run, and changed nothing but the phases foretold
    assert _answer(checked) == _answer(plain)


def test_the_self_check_fails_loudly_on_a_wrong_quiet_test(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1")
    sim = _simulator(_bench_objects(2), None, True, 3600.0)
    sim.quiet = lambda ssn: {}  # calls the first session, which binds, quiet
    with pytest.raises(StateCheckError, match="called quiet"):
        sim.run()


def test_the_self_check_fails_loudly_on_wrong_phases(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session whose close moves phases called quiet with none, or with a phase it does not write."""
    monkeypatch.setenv(ENV, "1")
    sim = _simulator(_bench_objects(1), None, True, 3600.0)
    test = sim.quiet
    assert isinstance(test, QuietTest)
    sim.quiet = lambda ssn: {} if test(ssn) else None  # the phases the test foretold left out
    with pytest.raises(StateCheckError, match="moves the phases"):
        sim.run()
    sim = _simulator(_bench_objects(1), None, True, 3600.0)
    test = sim.quiet
    assert isinstance(test, QuietTest)
    sim.quiet = lambda ssn: None if (v := test(ssn)) is None else {**v, "bench/no-such-job": PodGroupPhase.RUNNING}
    with pytest.raises(StateCheckError, match="moves the phases"):
        sim.run()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_every_quiet_session_of_random_dumps_changes_nothing(case: tuple[list[dict[str, Any]], str | None],
                                                              drop: bool) -> None:
    """Under the self-check each session called quiet is run and must change nothing (binds,
    pipelines, evictions, phases, warnings): the engine raises otherwise."""
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV, "1")
        sim = _simulator(objs, _without_reclaim(conf_text, drop), True, 4 * 3600.0)
        sim.run()
    assert sim.sessions_skipped == 0


def _compared(sim: Simulator) -> QuietTest:
    """The simulator's kept test, each answer compared with the test over every job."""
    test = sim.quiet
    assert isinstance(test, QuietTest)

    def compare(ssn: Session) -> dict[str, PodGroupPhase] | None:
        got = test(ssn)
        why, phases = session_verdict(ssn)
        assert got == (None if why else phases)
        return got

    sim.quiet = compare
    return test


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_the_kept_test_answers_as_the_test_over_every_job(case: tuple[list[dict[str, Any]], str | None],
                                                          drop: bool) -> None:
    """forecast/quiet_kept.py against `session_verdict`, session by session, on random GPU dumps."""
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        sim = _simulator(objs, _without_reclaim(conf_text, drop), True, 4 * 3600.0)
        test = _compared(sim)
        sim.run()
    assert test.asked == sim.sessions


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([(4, 20), (10, 20), (20, 60)]))
def test_the_kept_test_answers_as_the_test_over_every_job_on_the_benchmark_shape(seed: int,
                                                                                 shape: tuple[int, int]) -> None:
    nodes, gangs = shape
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        sim = _simulator(_bench_objects(seed, nodes=nodes, gangs=gangs), None, True, 3 * 3600.0)
        test = _compared(sim)
        sim.run()
    # the facts are carried over the jobs' delta, not worked out again every session
    assert test.asked == sim.sessions and test.rebuilt < max(2, test.asked // 4)
    assert test.quiet + test.phases_only == sim.sessions_skipped > 0
