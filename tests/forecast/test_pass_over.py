"""Jobs allocate passes over in a forecast's run sessions (actions/pass_over.py, semantics F4): the
forecast passing them over is the forecast trying them, the set is the one a walk over every job
finds, and each job in it, tried, keeps nothing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fit import start_of
from test_forecast_sim import busy_dumps
from test_quiet import RECLAIM, _answer, _bench_objects, _without_reclaim

from apportion.actions.allocate import allocate_for_job
from apportion.actions.common import sorted_tasks
from apportion.actions.pass_over import PASS_OVER, PassOver, lacking
from apportion.cluster.model import TaskStatus
from apportion.engine import open_session
from apportion.forecast.quiet import gang_decides, least_request_reference, places_at_most, proof_blocker
from apportion.forecast.quiet_kept import QuietTest, hopeless_jobs
from apportion.forecast.sim import ForecastQuietTest, forecast_simulator
from apportion.framework.session import Session
from apportion.simulation.engine import Simulator
from apportion.state.check import ENV, StateCheckError


def _sim(objs: list[dict[str, Any]], conf_text: str | None, pass_over: bool, horizon: float) -> Simulator:
    return forecast_simulator(start_of(objs, conf_text), horizon=horizon, pass_over=pass_over)


def _both(objs: list[dict[str, Any]], conf_text: str | None, horizon: float) -> ForecastQuietTest:
    """The forecast passing jobs over and the one trying every job: the same run, job by job and
    task by task (starts, finishes, phases, states, nodes, attempts), sessions, events, warnings."""
    passing = _sim(objs, conf_text, True, horizon)
    passing.run()
    trying = _sim(objs, conf_text, False, horizon)
    trying.run()
    assert _answer(passing) == _answer(trying)
    assert passing.sessions_skipped == trying.sessions_skipped
    a, b = passing.quiet, trying.quiet
    assert isinstance(a, ForecastQuietTest) and isinstance(b, ForecastQuietTest)
    assert b.handed == b.passed == 0
    assert (a.asked, a.quiet, a.phases_only, a.early) == (b.asked, b.quiet, b.phases_only, b.early)
    assert a.passed + a.tried <= a.handed_jobs
    return a


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_passing_over_changes_no_forecast(case: tuple[list[dict[str, Any]], str | None], drop: bool) -> None:
    """Random GPU dumps (flat or tree capacity, Volcano's default conf with proportion; with reclaim,
    under which no set is handed over, and without)."""
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        _both(objs, _without_reclaim(conf_text, drop), 4 * 3600.0)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([(4, 20), (10, 40)]), st.booleans())
def test_passing_over_changes_no_forecast_on_the_benchmark_shape(seed: int, shape: tuple[int, int],
                                                                 reclaim: bool) -> None:
    nodes, gangs = shape
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        test = _both(_bench_objects(seed, nodes=nodes, gangs=gangs), RECLAIM if reclaim else None, 3 * 3600.0)
    if reclaim:
        assert test.handed == 0  # reclaim may run: no proof, no set


def test_the_benchmark_shape_passes_jobs_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the benchmark's dump (small) gangs too big for what is free wait session after session:
    they are passed over, and the forecast is the one that tries them."""
    monkeypatch.delenv(ENV, raising=False)
    test = _both(_bench_objects(0, nodes=10, gangs=40), None, 3 * 3600.0)
    assert test.handed > 0 and test.passed > 0


def _reference(ssn: Session) -> dict[str, tuple[int, int]]:
    """The jobs that cannot keep a placement, from a walk over every job of the opened session (what
    allocate would try: admitted, in a known queue, with tasks to try)."""
    unproven, gang = proof_blocker(ssn)
    actions = ssn.conf.actions
    if unproven or gang is None or not gang_decides(ssn) or actions.count("allocate") != 1:
        return {}
    if set(actions[: actions.index("allocate")]) - {"enqueue"}:
        return {}  # another action before allocate might move what it reads
    future = ssn.table.future_idle()
    if not np.array_equal(future, np.floor(future)) or float(np.abs(future).max(initial=0)) >= 2**50:
        return {}
    enqueue = "enqueue" in ssn.enabled_actions
    out = {}
    for uid, job in ssn.jobs.items():
        if (job.is_pending() and enqueue) or job.queue not in ssn.queues:
            continue
        n, least = least_request_reference(ssn, job)
        need = lacking(job)
        if least is None or need < 1 or n < need:
            continue
        bound = places_at_most(future, least)
        if bound < need:
            out[uid] = (need, bound)
    return out


def _sessions_tried_one_by_one(sim: Simulator, limit: int) -> int:
    """Run the forecast; at each session that runs, compare the set handed over with the walk over
    every job, and try each job in it on the session as opened: it keeps nothing and gives back every
    amount it took. The jobs so tried."""
    test = sim.quiet
    assert isinstance(test, ForecastQuietTest)
    tried = 0

    def ask(ssn: Session) -> Any:
        nonlocal tried
        verdict = test(ssn)
        if verdict is not None:
            return verdict
        hand = ssn.shared.pop(PASS_OVER, None)
        assert hand is None or isinstance(hand, PassOver)
        got = {} if hand is None else dict(hand.jobs)
        assert got == _reference(ssn)
        assert hopeless_jobs(test, ssn) is None or dict(hopeless_jobs(test, ssn).jobs) == got  # type: ignore[union-attr]
        if tried < limit:
            for uid in sorted(got):
                job = ssn.jobs[uid]
                queue = ssn.queues[job.queue]
                tasks = [t for t in job.tasks.values()
                         if t.status is TaskStatus.PENDING and not t.best_effort and not t.gated]
                future = ssn.table.future_idle().copy()
                counts = {s: n for s, n in job.counts.items() if n}
                assert allocate_for_job(ssn, queue, job, sorted_tasks(ssn, job, tasks)) is None
                assert np.array_equal(ssn.table.future_idle(), future)
                assert {s: n for s, n in job.counts.items() if n} == counts
                tried += 1
        # the session then runs as the plain path runs it (its jobs tried, the set not handed)
        return None

    sim.quiet = ask
    sim.run()
    return tried


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_the_set_is_the_walk_and_each_job_tried_keeps_nothing(case: tuple[list[dict[str, Any]], str | None],
                                                             drop: bool) -> None:
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        _sessions_tried_one_by_one(_sim(objs, _without_reclaim(conf_text, drop), True, 4 * 3600.0), 200)


def test_the_set_on_the_benchmark_shape_keeps_nothing_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    for seed in (0, 3):
        assert _sessions_tried_one_by_one(_sim(_bench_objects(seed, nodes=10, gangs=40), None, True, 3 * 3600.0),
                                          400) > 0


def test_a_job_is_tried_when_the_table_grew_or_it_lacks_less() -> None:
    """`PassOver.why` refuses when FutureIdle rose above its open value anywhere, or the job lacks
    fewer tasks than when it was handed over."""
    objs = _bench_objects(0, nodes=10, gangs=40)
    sim = _sim(objs, None, True, 3600.0)
    ssn = open_session(sim.snapshot(), sim.conf, session_id="session-x")
    test = QuietTest()
    test(ssn)
    hand = hopeless_jobs(test, ssn)
    assert hand is not None and hand.jobs
    uid = min(hand.jobs)
    job = ssn.jobs[uid]
    assert hand.why(ssn, job) is not None and "at most" in str(hand.why(ssn, job))
    need, bound = hand.jobs[uid]
    hand.jobs[uid] = (need + 1, bound)
    assert hand.why(ssn, job) is None  # it lacks fewer than it should
    hand.jobs[uid] = (need, bound)
    row = int(np.argmax(ssn.table.future[:, 0]))
    ssn.table.future[row, 0] += 1.0
    try:
        assert hand.why(ssn, job) is not None  # no change logged: nothing compared
        ssn.table.touched.append(row)
        assert hand.why(ssn, job) is None
    finally:
        ssn.table.future[row, 0] -= 1.0
    ssn.release()


def test_the_self_check_tries_every_job_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1")
    sim = _sim(_bench_objects(0, nodes=10, gangs=40), None, True, 3600.0)
    sim.run()
    test = sim.quiet
    assert isinstance(test, ForecastQuietTest)
    assert test.handed > 0 and test.passed == 0 and test.tried > 0


def test_the_self_check_fails_loudly_on_a_job_that_can_keep_a_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    """A set naming a job allocate places and keeps: the self-check tries it and raises."""
    monkeypatch.setenv(ENV, "1")
    sim = _sim(_bench_objects(2), None, True, 3600.0)
    test = sim.quiet
    assert isinstance(test, ForecastQuietTest)

    def wrong(ssn: Session) -> Any:
        verdict = test(ssn)
        if verdict is None:
            # every job allocate may try, said to be hopeless
            ssn.shared[PASS_OVER] = PassOver(ssn.table.future_idle().copy() + 1e9, {
                uid: (1, 0) for uid, j in ssn.jobs.items()
                if j.counts.get(TaskStatus.PENDING) and lacking(j) >= 1})
        return verdict

    sim.quiet = wrong
    with pytest.raises(StateCheckError, match="kept a placement"):
        sim.run()


def _tried_after_all(objs: list[dict[str, Any]], conf_text: str | None) -> ForecastQuietTest:
    """`_both` with every handed-over job tried (`why` None): allocate builds such a job's task list when
    it tries the job, not at the visit, and the forecast must be the one that hands none over."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        mp.setattr(PassOver, "why", lambda self, ssn, job: None)
        test = _both(objs, conf_text, 3 * 3600.0)
    assert test.passed == 0
    return test


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps())
def test_a_job_handed_over_but_tried_gets_the_task_list_of_the_visit(case: tuple[list[dict[str, Any]], str | None],
                                                                     ) -> None:
    objs, conf_text = case
    _tried_after_all(objs, _without_reclaim(conf_text, True))


def test_every_job_handed_over_tried_on_the_benchmark_shape() -> None:
    test = _tried_after_all(_bench_objects(0, nodes=10, gangs=40), None)
    assert test.handed > 0 and test.tried > 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(list(TaskStatus)), st.booleans(), st.booleans()), max_size=8))
def test_has_tasks_to_try_is_the_list_not_empty(shape: list[tuple[TaskStatus, bool, bool]]) -> None:
    """`has_tasks_to_try` answers as `tasks_to_try` built (pending, not best-effort, not gated)."""
    from types import SimpleNamespace

    from apportion.actions.allocate import has_tasks_to_try, tasks_to_try

    tasks = {str(i): SimpleNamespace(status=status, best_effort=empty, gated=gated)
             for i, (status, empty, gated) in enumerate(shape)}
    job: Any = SimpleNamespace(tasks=tasks)
    assert has_tasks_to_try(job) == bool(tasks_to_try(job))
