"""The quiet test's first sessions and the pieces it keeps cheaply (forecast/quiet_kept.py,
forecast/quiet_early.py): the first snapshot's jobs' delta numbers it (simulation/start.py,
`objects_delta`), so the second session's facts are carried from the first instead of worked out for
every job again; `WholeRequests` answers per object and per amounts as `whole_request` per task;
F4's set taken with the early test's kept bound is the one over the session's FutureIdle."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_quiet import _answer, _bench_objects, _simulator

from apportion.cluster.model import JobInfo
from apportion.cluster.snapshot import JobDelta
from apportion.forecast.quiet_early import EarlyQuietTest
from apportion.forecast.quiet_kept import hopeless_jobs
from apportion.forecast.quiet_whole import WholeRequests, whole_requests_reference
from apportion.framework.session import Session
from apportion.resources import Resource
from apportion.simulation.start import objects_delta
from apportion.state.check import ENV

_AMOUNTS = st.one_of(
    st.integers(-(2**52), 2**52).map(float),
    st.sampled_from([0.0, -0.0, 0.5, 1.5, math.nan, math.inf, -math.inf, float(2**50), float(2**50 - 1),
                     -float(2**50), 4e9, 1e-9]),
    st.floats(allow_nan=True, allow_infinity=True),
)


def _resource(cpu: float, memory: float, scalars: dict[str, float]) -> Resource:
    r = Resource(cpu, memory)
    r.scalars.update(scalars)
    return r


_REQUESTS = st.builds(_resource, _AMOUNTS, _AMOUNTS,
                      st.dictionaries(st.sampled_from(["nvidia.com/gpu", "pods", "x"]), _AMOUNTS, max_size=2))


class _Task:
    """What `WholeRequests` reads of a task: its request."""

    def __init__(self, resreq: Resource) -> None:
        self.resreq = resreq


@settings(max_examples=300, deadline=None)
@given(st.lists(_REQUESTS, min_size=1, max_size=12),
       st.lists(st.lists(st.integers(0, 30), max_size=10), min_size=1, max_size=8))
def test_whole_requests_is_the_test_per_task(requests: list[Resource], asks: list[list[int]]) -> None:
    """Asked of task lists drawn from a pool of request objects (shared, equal by value as copies, and
    asked again), kept answers are `whole_request`'s over every task."""
    pool = requests + [r.clone() for r in requests]  # equal amounts in separate objects
    tasks = [_Task(r) for r in pool]
    kept = WholeRequests()
    for ask in asks:
        chosen: list[Any] = [tasks[i % len(tasks)] for i in ask]
        assert kept(chosen) == whole_requests_reference(chosen)
        # again, from what it kept
        assert kept(chosen) == whole_requests_reference(chosen)


def _job(uid: str) -> JobInfo:
    return JobInfo(uid=uid, name=uid, namespace="ns", queue="q")


def test_the_first_snapshot_delta_numbers_it() -> None:
    """A cache's delta from no snapshot gives the objects' snapshot a delta from none (every job to be
    looked at) that still numbers it; the next delta is from it and names what changed."""
    log: set[str] = set()
    notes: set[str] = set()
    a, b = _job("a"), _job("b")
    first = objects_delta({"a": a, "b": b}, {}, JobDelta(1, None, set(), set(), log, notes))
    assert first is not None and first.snapshot == 1 and first.since is None
    assert first.since_last(None) is None and first.since_last(1) is None
    assert a.log is log and b.log is log
    b2 = _job("b")
    second = objects_delta({"a": a, "b": b2}, {"a": a, "b": b}, JobDelta(2, 1, set(), set(), log, notes))
    assert second is not None and second.since_last(first.snapshot) == {"b"}
    assert objects_delta({"a": a}, {}, None) is None


def test_the_second_session_carries_the_first_sessions_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the benchmark's dump (small) the facts of every job are worked out once, at the first
    session; the forecast is the one that runs every session."""
    monkeypatch.delenv(ENV, raising=False)
    objs = _bench_objects(2, nodes=10, gangs=40)
    sim = _simulator(objs, None, True, 3 * 3600.0)
    test = sim.quiet
    assert isinstance(test, EarlyQuietTest)
    added: list[int] = []
    add, add_again = test.add, test._add_again

    def counting(uid: str, facts: Any) -> None:
        added.append(sim.sessions)
        add(uid, facts)

    def counting_again(uid: str, facts: Any, *rest: Any) -> None:
        added.append(sim.sessions)  # a job given a phase keeps its held record (F8)
        add_again(uid, facts, *rest)

    test.add = counting  # type: ignore[method-assign]
    test._add_again = counting_again  # type: ignore[method-assign]
    sim.run()
    every = _simulator(objs, None, False, 3 * 3600.0)
    every.run()
    assert _answer(sim) == _answer(every)
    assert test.rebuilt == 1
    # the second session works out the jobs its delta names, not every job again
    assert 0 < added.count(2) < added.count(1) == len(sim.jobs)


@pytest.mark.parametrize("checking", [False, True])
def test_the_set_with_the_kept_bound_is_the_set_over_future_idle(monkeypatch: pytest.MonkeyPatch,
                                                                 checking: bool) -> None:
    """F4's set as the forecast's test hands it (the early test's kept bound, the inputs it kept for
    the session) against `hopeless_jobs` working the bound and the inputs out over the opened
    session, at every session that runs; under the self-check the kept ones are compared too."""
    if checking:
        monkeypatch.setenv(ENV, "1")
    else:
        monkeypatch.delenv(ENV, raising=False)
    sim = _simulator(_bench_objects(0, nodes=10, gangs=40), None, True, 3 * 3600.0)
    test = sim.quiet
    assert isinstance(test, EarlyQuietTest)
    compared = 0

    def ask(ssn: Session) -> Any:
        nonlocal compared
        verdict = test(ssn)
        if verdict is None:
            kept, plain = test.passed_over(ssn), hopeless_jobs(test, ssn)
            assert (kept is None) == (plain is None)
            if kept is not None and plain is not None:
                assert kept.jobs == plain.jobs
                compared += 1
        return verdict

    sim.quiet = ask
    sim.run()
    assert compared > 0


def test_a_task_list_with_one_inexact_request_is_not_whole() -> None:
    whole = WholeRequests()
    good = _Task(Resource(1000.0, 2.0**30))
    bad = _Task(Resource(0.5, 1.0))
    tasks: list[Any] = [good, bad]
    assert whole(tasks[:1]) and not whole(tasks) and not whole(tasks[::-1]) and whole(tasks[:1])
