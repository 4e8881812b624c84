"""The early quiet test looks only at the dirty jobs changed since the last early test was handed a view
(`EarlyView.since`, simulation/skipping.py; forecast/quiet_early.py `DIRTY_SINCE`, semantics F11): each
early test's answer and everything it keeps are those of the reference, which looks at every job dirty
since the last snapshot, and so is the forecast. (The self-check opens every session, whose snapshot
leaves dirty only the jobs changed since: it cannot tell the two apart, these tests do.)"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_quiet import _bench_objects, _simulator, _without_reclaim
from test_quiet_shared import _kept_by_value, same_as_reference

from apportion.forecast.quiet_early import EarlyQuietTest
from apportion.simulation.skipping import EarlyView
from apportion.state.check import ENV


def _facts_by_value(test: EarlyQuietTest) -> dict[str, tuple[Any, ...]]:
    return {uid: (f.moved, f.unschedulable, f.best_effort, f.pending, f.admission, f.no_min_resources, f.key,
                  f.need, f.version, f.phase, f.job.uid)
            for uid, f in sorted(test._facts.items())}


def _observe(test: EarlyQuietTest, view: EarlyView, got: Any) -> tuple[Any, ...]:
    """Per early test the jobs it was handed, its answer and what the test keeps after it."""
    told = test._told
    return (view.session_uid, sorted(view.dirty), None if got is None else dict(got),
            None if told is None else told[:2], _kept_by_value(test), _facts_by_value(test), test.early,
            test.carried)


def _handed_since(view: EarlyView) -> None:
    assert view.since is not None and view.since <= view.dirty


def _same_as_reference(objs: list[dict[str, Any]], conf_text: str | None, horizon: float) -> EarlyQuietTest:
    """The forecast with `DIRTY_SINCE` on and off traces every early test alike."""
    return same_as_reference(objs, conf_text, horizon, {"DIRTY_SINCE": True}, _observe, _handed_since)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_the_jobs_changed_since_keep_what_every_dirty_job_keeps(case: tuple[list[dict[str, Any]], str | None],
                                                                drop: bool) -> None:
    """Random GPU dumps (flat or tree capacity, with and without reclaim)."""
    objs, conf_text = case
    _same_as_reference(objs, _without_reclaim(conf_text, drop), 4 * 3600.0)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([(4, 20), (10, 40)]))
def test_the_jobs_changed_since_on_the_benchmark_shape(seed: int, shape: tuple[int, int]) -> None:
    """The benchmark's dump, small: runs of early tests, each after tasks finished or phases were written
    by the last, so that jobs dirty since the snapshot pile up."""
    nodes, gangs = shape
    test = _same_as_reference(_bench_objects(seed, nodes=nodes, gangs=gangs), None, 3 * 3600.0)
    assert test.early > 1


def test_an_early_test_is_handed_only_what_changed_since_the_last() -> None:
    """On the benchmark's dump, small: the early tests after the first of a run are handed fewer jobs
    than are dirty since the snapshot."""
    fewer = []
    before_open = EarlyQuietTest.before_open

    def spy(self: EarlyQuietTest, view: EarlyView) -> Any:
        assert view.since is not None
        fewer.append(len(view.since) < len(view.dirty))
        return before_open(self, view)

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        mp.setattr(EarlyQuietTest, "before_open", spy)
        sim = _simulator(_bench_objects(1, nodes=10, gangs=40), None, True, 3 * 3600.0)
        test = sim.quiet
        assert isinstance(test, EarlyQuietTest)
        sim.early = test.before_open
        sim.run()
    assert any(fewer)
