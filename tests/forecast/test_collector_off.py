"""A forecast runs with Python's cycle collector off (simulation/collector.py) and reads its dump with it
paused (apportion/collection.py): the collector is back as it was after either, nothing frozen stays
frozen, the run's answers are those of a run with the collector on, and the self-check fails a run
with it off that leaves cyclic garbage."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from dumps import two_queues
from test_fit import start_of

from apportion.collection import collection_paused
from apportion.forecast.sim import forecast_simulator
from apportion.simulation.collector import GC_THRESHOLD, collector_for_long_runs
from apportion.state import check


def _cycles(n: int) -> None:
    for _ in range(n):
        a: list[Any] = []
        a.append(a)


def test_the_collector_is_back_as_it_was_after_a_run_either_way() -> None:
    before = gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()
    for collect in (True, False):
        with collector_for_long_runs(collect):
            assert gc.isenabled() is collect
            assert gc.get_threshold()[0] == (max(before[0][0], GC_THRESHOLD) if collect else before[0][0])
        assert (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()) == before


def test_a_heap_frozen_before_a_run_stays_frozen_with_what_the_run_left() -> None:
    """The service freezes its heap between ticks and forecasts in its process: a run must not hand
    the next full collection all of it."""
    held = [[] for _ in range(1000)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        for collect in (True, False):
            with collector_for_long_runs(collect):
                made = [[] for _ in range(1000)]
            assert gc.get_freeze_count() >= frozen + len(made)
    finally:
        gc.unfreeze()
    assert len(held) == 1000


def test_a_run_with_the_collector_off_collects_nothing(passes: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    # the cycles are made on purpose: the self-check (the test below) would fail the run for them
    monkeypatch.delenv(check.ENV, raising=False)
    with collector_for_long_runs(collect=False):
        _cycles(5_000)
        kept = [[] for _ in range(50_000)]
    assert passes == [] and len(kept) == 50_000
    gc.collect()  # the cycles made meanwhile are freed once it is back


def test_the_self_check_fails_a_run_with_the_collector_off_that_left_cycles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")
    with collector_for_long_runs(collect=False):
        kept = [[1] for _ in range(100)]  # garbage-free work passes
    with pytest.raises(check.StateCheckError, match="cyclic garbage: 3 list"), collector_for_long_runs(collect=False):
        _cycles(3)
    assert gc.isenabled() and gc.get_freeze_count() == 0 and kept
    # with the collector on, cycles are the collector's to free, as ever
    with collector_for_long_runs(collect=True):
        _cycles(3)
    monkeypatch.setenv(check.ENV, "0")
    with collector_for_long_runs(collect=False):
        _cycles(3)
    gc.collect()


def test_paused_collection_leaves_frozen_objects_frozen_and_nests(passes: list[int]) -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with collection_paused():
            with collection_paused():
                kept = [[] for _ in range(20_000)]
            assert not gc.isenabled() and passes == []
        assert gc.isenabled() and gc.get_freeze_count() == frozen and kept
    finally:
        gc.unfreeze()
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_forecast_runs_with_the_collector_off_and_answers_as_with_it_on(monkeypatch: pytest.MonkeyPatch,
                                                                          passes: list[int]) -> None:
    monkeypatch.setenv(check.ENV, "1")  # every run with the collector off is checked for cyclic garbage
    answers = []
    for collect in (False, True):
        sim = forecast_simulator(start_of(two_queues()))
        assert sim.collect_cycles is False
        sim.collect_cycles = collect
        del passes[:]
        sim.run()
        if not collect:
            assert passes == [2]  # the self-check's own, over what the run made
        answers.append(({u: (j.first_start, j.finish, j.phase) for u, j in sim.jobs.items()}, sim.sessions))
    assert answers[0] == answers[1] and answers[0][0]["ns/train"][0] is not None


def test_off_the_main_thread_the_collector_is_left_alone() -> None:
    """The service forecasts in a worker thread: the collector is the process's, not the forecast's."""
    import threading

    seen: list[tuple[bool, int]] = []

    def work() -> None:
        with collector_for_long_runs(collect=False), collection_paused():
            seen.append((gc.isenabled(), gc.get_freeze_count()))

    before = gc.isenabled(), gc.get_freeze_count()
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == [before] and (gc.isenabled(), gc.get_freeze_count()) == before
