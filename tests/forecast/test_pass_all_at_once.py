"""allocate's run sessions that try one job and pass over the others without the queue loop
(actions/allocate.py `PASS_ALL_AT_ONCE`, docs/semantics.md K39): each session ends as the queue loop
ends it (explanations per job, the jobs passed over, FutureIdle, the tasks' statuses), and the forecast
is the same; under the self-check the loop runs and is compared with the prediction."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_pass_over import _sim
from test_quiet import _answer, _bench_objects, _without_reclaim

from apportion.actions import allocate
from apportion.actions.pass_over import PASS_OVER, PassOver
from apportion.framework.interface import FunctionAction, register_action
from apportion.framework.session import Session
from apportion.state.check import ENV

#: per session, what allocate left: explanations per key, the jobs still to pass over, the counts,
#: FutureIdle's bytes and every task's status and node
Seen = list[tuple[Any, ...]]


@pytest.fixture
def recording() -> Iterator[Seen]:
    """allocate registered through a wrapper that records what each session's allocate left."""
    seen: Seen = []

    def run(ssn: Session) -> None:
        allocate.execute(ssn)
        hand = ssn.shared.get(PASS_OVER)
        held = (sorted(hand.jobs), hand.passed, hand.tried) if isinstance(hand, PassOver) else None
        tasks = sorted((t.key, t.status.value, t.node_name) for j in ssn.jobs.values() for t in j.tasks.values())
        seen.append((ssn.uid, sorted((k, tuple(v)) for k, v in ssn.explanations.items()), held,
                     ssn.table.future.tobytes(), tasks))

    register_action(FunctionAction("allocate", run))
    try:
        yield seen
    finally:
        register_action(FunctionAction("allocate", allocate.execute))


def _compare(objs: list[dict[str, Any]], conf_text: str | None, horizon: float, seen: Seen,
             mp: pytest.MonkeyPatch) -> int:
    """The forecast with the shortcut and with the queue loop: session by session the same; the number
    of sessions the shortcut took."""
    taken = 0
    seen.clear()  # an example that failed leaves its records
    real = allocate._run_lone

    def counting(*args: Any) -> None:
        nonlocal taken
        taken += 1
        real(*args)

    mp.setattr(allocate, "_run_lone", counting)
    mp.setattr(allocate, "PASS_ALL_AT_ONCE", True)
    fast = _sim(objs, conf_text, True, horizon)
    fast.run()
    got = list(seen)
    seen.clear()
    mp.setattr(allocate, "PASS_ALL_AT_ONCE", False)
    plain = _sim(objs, conf_text, True, horizon)
    plain.run()
    assert [s[0] for s in got] == [s[0] for s in seen]
    for a, b in zip(got, seen, strict=True):
        assert a == b, _first_difference(a, b)
    assert _answer(fast) == _answer(plain)
    assert (fast.quiet.passed, fast.quiet.tried) == (plain.quiet.passed, plain.quiet.tried)  # type: ignore[attr-defined]
    seen.clear()
    return taken


def _first_difference(a: tuple[Any, ...], b: tuple[Any, ...]) -> str:
    """Where one session's records differ, in short."""
    if a[1] != b[1]:
        x, y = dict(a[1]), dict(b[1])
        return f"{a[0]}: explanations " + repr([(k, x.get(k), y.get(k)) for k in sorted(set(x) | set(y))
                                                if x.get(k) != y.get(k)][:3])
    if a[2] != b[2]:
        return f"{a[0]}: the jobs to pass over {a[2]} != {b[2]}"
    if a[3] != b[3]:
        return f"{a[0]}: FutureIdle"
    return f"{a[0]}: tasks " + repr([(x, y) for x, y in zip(a[4], b[4], strict=True) if x != y][:3])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(busy_dumps(), st.booleans())
def test_passing_all_at_once_is_the_queue_loop(recording: Seen, case: tuple[list[dict[str, Any]], str | None],
                                               drop: bool) -> None:
    """Random GPU dumps (flat or tree capacity, Volcano's default conf with proportion, whose overused
    keeps the loop; with reclaim, under which no set is handed over, and without)."""
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        _compare(objs, _without_reclaim(conf_text, drop), 4 * 3600.0, recording, mp)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10_000), st.sampled_from([(4, 20), (10, 40)]))
def test_passing_all_at_once_on_the_benchmark_shape(recording: Seen, seed: int, shape: tuple[int, int]) -> None:
    nodes, gangs = shape
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        _compare(_bench_objects(seed, nodes=nodes, gangs=gangs), None, 3 * 3600.0, recording, mp)


def test_the_benchmark_shape_takes_the_shortcut(recording: Seen, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert _compare(_bench_objects(0, nodes=10, gangs=40), None, 3 * 3600.0, recording, monkeypatch) > 0


def test_the_self_check_compares_the_loop_with_the_prediction(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under the self-check the queue loop runs and `_check_lone` compares it with the prediction."""
    monkeypatch.setenv(ENV, "1")
    checked = 0
    real = allocate._check_lone

    def counting(*args: Any) -> None:
        nonlocal checked
        checked += 1
        real(*args)

    monkeypatch.setattr(allocate, "_check_lone", counting)
    _sim(_bench_objects(0, nodes=10, gangs=40), None, True, 3600.0).run()
    assert checked > 0
