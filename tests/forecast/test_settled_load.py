"""A paused step (apportion/collection.py `collection_paused`) moves what it made into the oldest
generation without a pass when nothing is frozen (`SETTLE`; False is the reference, which leaves it
to the next young collection): no collection runs after it, the collector is back as it was, a
frozen heap or a step that raises is left as the reference leaves it, the self-check fails a settling
step that left cyclic garbage, and forecasts read with either answer alike."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from test_fit import start_of
from test_forecast_sim import busy_dumps

from apportion import collection
from apportion.collection import CyclicGarbageError, collection_paused
from apportion.forecast.sim import forecast_simulator
from apportion.state import check


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation))


def _step(n: int = 20_000) -> list[list[int]]:
    with collection_paused():
        return [[i] for i in range(n)]


def test_a_settled_step_leaves_nothing_young_and_no_pass_follows(passes: list[int],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "0")
    gc.collect()
    del passes[:]
    kept = _step()
    after = [[] for _ in range(100)]  # allocations after the step
    assert passes == [] and gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.get_count()[0] < len(kept) and _in_generation(kept[0], 2) and after


def test_the_reference_leaves_the_step_to_a_young_collection(passes: list[int],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collection, "SETTLE", False)
    gc.collect()
    del passes[:]
    kept = _step()
    after = [[] for _ in range(100)]
    assert passes[:1] == [0] and gc.isenabled() and after and kept


def test_a_frozen_heap_is_left_frozen_and_the_step_young(passes: list[int]) -> None:
    held = [[] for _ in range(1000)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        kept = _step()
        assert gc.get_freeze_count() == frozen and gc.isenabled()
        assert not _in_generation(kept[0], 2)
    finally:
        gc.unfreeze()
    assert len(held) == 1000


def test_a_step_that_raises_settles_nothing_and_turns_the_collector_back_on() -> None:
    with pytest.raises(ValueError), collection_paused():
        kept = [[i] for i in range(5_000)]
        raise ValueError("bad dump")
    assert gc.isenabled() and gc.get_freeze_count() == 0 and not _in_generation(kept[0], 2)
    # a collector already off stays off: test_collector_off.py's paused-step test


def _cycles(n: int) -> None:
    for _ in range(n):
        a: list[Any] = []
        a.append(a)


def test_the_self_check_fails_a_settling_step_that_left_cycles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")
    held = [[] for _ in range(100)]  # older objects are not the step's (frozen while it is checked)
    kept = _step(1000)
    with pytest.raises(CyclicGarbageError, match="cyclic garbage: 3 list"), collection_paused():
        _cycles(3)
    assert gc.isenabled() and gc.get_freeze_count() == 0 and kept and held
    gc.collect()


def _forecast(objs: list[dict[str, Any]], conf_text: str | None) -> tuple[Any, int]:
    sim = forecast_simulator(start_of(objs, conf_text), horizon=4 * 3600.0)
    sim.run()
    return {u: (j.first_start, j.finish, j.phase) for u, j in sim.jobs.items()}, sim.sessions


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps())
def test_forecasts_read_settled_answer_as_the_reference(case: tuple[list[dict[str, Any]], str | None]) -> None:
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(check.ENV, "1")  # every settling step checked for cyclic garbage
        settled = _forecast(objs, conf_text)
        mp.setattr(collection, "SETTLE", False)
        reference = _forecast(objs, conf_text)
    assert settled == reference


@pytest.mark.parametrize("checking", ["0", "1"])
def test_a_step_that_freezes_the_heap_itself_leaves_it_frozen(monkeypatch: pytest.MonkeyPatch,
                                                              checking: str) -> None:
    """`engine.cycle_files` freezes the heap inside a paused step: the freeze outlives the step, with the
    self-check on as without it (the check's own freeze is undone only when the step froze nothing)."""
    monkeypatch.setenv(check.ENV, checking)
    assert gc.get_freeze_count() == 0
    try:
        held = [[] for _ in range(1000)]
        with collection_paused():
            made = [[] for _ in range(1000)]  # as cycle_files reads its dumps before freezing them
            gc.freeze()
            frozen = gc.get_freeze_count()
        assert frozen >= len(held) + len(made) and gc.get_freeze_count() >= len(held) + len(made)
    finally:
        gc.unfreeze()
