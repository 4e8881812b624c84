"""A forecast's forward run makes no why-pending texts (semantics F6): its sessions close with the
phases and conditions, binds, evictions and session counts of the run that makes them (the reference,
`Simulator.why_pending` on), and no job event or pending task's explanation is made."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_quiet import RECLAIM, _answer, _bench_objects, _simulator, _without_reclaim

import apportion.simulation.engine as engine_mod
from apportion.engine import CycleResult
from apportion.framework.closing import CLOSE_MEMO, Closes
from apportion.framework.session import Session
from apportion.simulation.engine import Simulator
from apportion.state.check import ENV

Record = tuple[Any, ...]


def _session_record(result: CycleResult) -> Record:
    """What a session that ran decided, texts aside: binds, pipelines, evictions, every PodGroup phase
    and every condition (with its message), and the events that are not why-pending texts."""
    conditions = {uid: [(c.type, c.status, c.reason, c.message, c.transition_id) for c in result.conditions[uid]]
                  for uid in sorted(result.conditions)}
    return (result.session.uid, dict(result.binds), dict(result.pipelined), list(result.evictions),
            dict(sorted(result.podgroups.items())), conditions,
            [(e.object, e.reason, e.message) for e in result.events if e.reason != "Unschedulable"])


@contextmanager
def _recording() -> Iterator[tuple[list[Record], list[tuple[bool, list[Any]]]]]:
    """Every session the simulator runs while inside: its record, and whether it made the texts with
    its why-pending events."""
    records: list[Record] = []
    events: list[tuple[bool, list[Any]]] = []
    real = engine_mod.run_session

    def run(ssn: Session, **kw: Any) -> CycleResult:
        result = real(ssn, **kw)
        records.append(_session_record(result))
        events.append((ssn.why_pending, [(e.object, e.message) for e in result.events if e.reason == "Unschedulable"]))
        return result

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine_mod, "run_session", run)
        yield records, events


def _run(objs: list[dict[str, Any]], conf_text: str | None, why_pending: bool, horizon: float,
         ) -> tuple[Simulator, list[Record], list[tuple[bool, list[Any]]]]:
    sim = _simulator(objs, conf_text, True, horizon)
    assert sim.why_pending is False  # the forecast's default
    sim.why_pending = why_pending
    with _recording() as (records, events):
        sim.run()
    return sim, records, events


def _both(objs: list[dict[str, Any]], conf_text: str | None, horizon: float = 4 * 3600.0) -> tuple[Simulator, Simulator]:
    """The forecast without the texts and the reference with them: the same answer, session by session."""
    quiet, q_records, q_events = _run(objs, conf_text, False, horizon)
    texts, t_records, t_events = _run(objs, conf_text, True, horizon)
    assert _answer(quiet) == _answer(texts)
    assert quiet.sessions_skipped == texts.sessions_skipped
    assert q_records == t_records
    # no job event made, no job given a message by a close (a rejected job's message is not close's)
    assert not any(evs for _, evs in q_events)
    assert all(not j.message for j in quiet.jobs.values() if j.state != "rejected")
    memo_closes = quiet._memo.get(CLOSE_MEMO)
    if isinstance(memo_closes, Closes):
        assert not memo_closes.texts and not memo_closes.events
        assert all(not e.explained and not e.tasks_explained and e.event is None for e in memo_closes.jobs.values())
    return quiet, texts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_a_forecast_without_the_texts_decides_as_with_them(case: tuple[list[dict[str, Any]], str | None],
                                                          drop: bool) -> None:
    """Random GPU dumps (flat or tree capacity, Volcano's default conf with proportion; with and without
    reclaim)."""
    objs, conf_text = case
    _both(objs, _without_reclaim(conf_text, drop))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([(4, 20), (10, 40)]), st.booleans())
def test_a_forecast_without_the_texts_decides_as_with_them_on_the_benchmark_shape(
        seed: int, shape: tuple[int, int], reclaim: bool) -> None:
    """The benchmark's dump, small (capacity over a queue tree; with reclaim too)."""
    nodes, gangs = shape
    _, texts = _both(_bench_objects(seed, nodes=nodes, gangs=gangs), RECLAIM if reclaim else None, 3 * 3600.0)
    if texts.sessions > texts.sessions_skipped:
        # the reference did make texts: some waiting job has a message
        assert any(j.message for j in texts.jobs.values())


def test_the_benchmark_dump_waits_with_texts_only_in_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's dump (small): its run sessions leave jobs waiting, whose texts only the
    reference makes; the forecast is the same."""
    monkeypatch.delenv(ENV, raising=False)
    quiet, texts = _both(_bench_objects(0), None, 3 * 3600.0)
    assert quiet.sessions > quiet.sessions_skipped > 0
    assert sum(1 for j in texts.jobs.values() if j.message) > 0


class _Flip:
    """An observer that switches the texts on and off from session to session."""

    def __init__(self, pattern: list[bool]) -> None:
        self.pattern = pattern
        self.n = 0

    def before_session(self, sim: Simulator) -> None:
        sim.why_pending = self.pattern[self.n % len(self.pattern)]
        self.n += 1

    def after_session(self, sim: Simulator) -> None:
        pass


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.lists(st.booleans(), min_size=1, max_size=4))
def test_closes_with_and_without_texts_do_not_carry_each_other(case: tuple[list[dict[str, Any]], str | None],
                                                               pattern: list[bool]) -> None:
    """Over one memo, sessions with texts after sessions without (and the other way round) close as the
    reference does, events included: a close carries only closes made as it makes its own."""
    objs, conf_text = case
    ref, r_records, r_events = _run(objs, conf_text, True, 4 * 3600.0)
    sim = _simulator(objs, conf_text, True, 4 * 3600.0)
    sim.observers.append(_Flip(pattern))
    with _recording() as (records, events):
        sim.run()
    assert _answer(sim) == _answer(ref)
    assert records == r_records
    for (mode, evs), (_, ref_evs) in zip(events, r_events, strict=True):
        assert evs == (ref_evs if mode else [])


def test_the_self_check_passes_with_texts_switched_session_by_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the self-check every carried close is computed in full and compared (its event only where
    the closes make texts)."""
    monkeypatch.setenv(ENV, "1")
    sim = _simulator(_bench_objects(3), None, True, 3600.0)
    sim.observers.append(_Flip([False, False, True]))
    sim.run()
    ref = _simulator(_bench_objects(3), None, True, 3600.0)
    ref.run()
    assert _answer(sim) == _answer(ref)
