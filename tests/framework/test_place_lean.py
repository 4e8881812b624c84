"""allocate's per-placement steps written leaner (docs/semantics.md K58) against their references: over
random events and sessions on one cache (test_placement_carry's rounds, both confs, the self-check on),
sessions with every switch on decide, explain, bind, pipeline, evict, record unresolvable nodes, charge
the queues and leave the node views as sessions with every switch off, bit for bit; `same_rows`' test
of the rows at once keeps the rows its row-by-row test keeps (NaN and -0.0 states included); and the node
view's shared request arrays leave the sums an array per task leaves (a -0.0 GPU amount included)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_placement_carry import CONFS, _base, _observe, rounds

from apportion.engine import CycleResult
from apportion.framework import node_choice, placement_carry
from apportion.framework.session import Session
from apportion.plugins import k8s_view, nodeorder
from apportion.plugins.capacity import simulate
from apportion.plugins.k8s_view import NodeView
from apportion.state import check
from apportion.state.events import ADDED
from session_steps import play

import k8s

SWITCHES = [(placement_carry, "SAME_AT_ONCE"), (nodeorder, "LEAN_ROW_SCORE"), (k8s_view, "SHARED_VECTORS"),
            (simulate, "LEAN_CHARGE"), (node_choice, "CARRIED_COLUMNS"), (nodeorder, "KEEP_WEIGHTS")]


def _bits(x: float) -> bytes:
    return np.float64(x).tobytes()


def _observe_more(i: int, ssn: Session, result: CycleResult) -> Any:
    """`_observe`, and every queue's charged amounts and share (capacity) and the node view's arrays."""
    queues = []
    for _, plugin in ssn.plugins:
        attrs = getattr(plugin, "attrs", None)
        if plugin.name == "capacity" and attrs:
            queues = [(n, _bits(a.allocated.cpu), _bits(a.allocated.memory),
                       sorted((k, _bits(v)) for k, v in a.allocated.scalars.items()), _bits(a.share))
                      for n, a in sorted(attrs.items())]
    view = ssn.shared.get("node_view")
    sums = (view.count.tobytes(), view.sums.tobytes()) if isinstance(view, NodeView) else None
    return _observe(i, ssn, result), queues, sums


def _sessions(steps: list, lean: bool, conf: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    for module, name in SWITCHES:
        monkeypatch.setattr(module, name, lean)
    return play(steps, _base, conf, _observe_more)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(rounds(), st.sampled_from(CONFS))
def test_lean_steps_decide_as_the_references(monkeypatch: pytest.MonkeyPatch, steps: list, conf: Any) -> None:
    monkeypatch.setenv(check.ENV, "1")
    assert _sessions(steps, True, conf, monkeypatch) == _sessions(steps, False, conf, monkeypatch)


_STATES = st.sampled_from([0.0, -0.0, 1.0, 2.5, float("nan"), 1e300])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 8), width=st.integers(1, 3),
       changes=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 3), st.integers(0, 2), _STATES), max_size=4),
       rows=st.sets(st.integers(0, 7)), data=st.data())
def test_rows_compared_at_once_are_those_compared_one_by_one(n: int, width: int, changes: list[tuple[int, int, int, float]],
                                                            rows: set[int], data: st.DataObject) -> None:
    """Four pairs of arrays as `same_rows` compares them (two tables' FutureIdle and Idle, a plugin's
    count and sums), the current ones changed at a few places: the rows kept are the same either way."""
    base = [data.draw(st.lists(_STATES, min_size=n * width, max_size=n * width)) for _ in range(3)]
    then = [np.array(base[0]).reshape(n, width), np.array(base[1]).reshape(n, width),
            np.arange(n, dtype=np.int64), np.array(base[2]).reshape(n, width)]
    now = [a.copy() for a in then]
    for row, which, col, value in changes:
        if row < n:
            if which == 2:
                now[2][row] += 1
            else:
                now[which][row, min(col, width - 1)] = value
    at = frozenset(r for r in rows if r < n)
    table = SimpleNamespace(future=now[0], idle=now[1])
    last = SimpleNamespace(future=then[0], idle=then[1])
    owner = SimpleNamespace(since=(last, {"p": (then[2], then[3])}), row_states={"p": (now[2], now[3])})
    plugins = [("nodeOrder", "p", None)]
    got = placement_carry.same_rows(owner, table, plugins, at)  # type: ignore[arg-type]
    pairs = list(zip(now, then, strict=True))
    assert got == placement_carry.same_rows_each(pairs, sorted(at))


class _View(NodeView):
    """A node view whose tasks' requests are given (what `_apply` reads of a task)."""

    given: dict[str, tuple[float, float, float, float, float]]

    def requests(self, t: Any) -> tuple[float, float, float, float, float]:
        return self.given[t.uid]


_AMOUNT = st.sampled_from([0.0, 1.0, 100.0, 2.0**40, 3.0])
_GPU = st.sampled_from([0.0, -0.0, 1.0, 1000.0, float("nan")])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tasks=st.lists(st.tuples(st.integers(0, 2), st.tuples(_AMOUNT, _AMOUNT, _AMOUNT, _AMOUNT, _GPU)),
                      min_size=1, max_size=10),
       undo=st.lists(st.booleans(), min_size=10, max_size=10))
def test_shared_request_arrays_leave_the_sums_of_arrays_per_task(
        monkeypatch: pytest.MonkeyPatch, tasks: list[tuple[int, tuple[float, float, float, float, float]]],
        undo: list[bool]) -> None:
    monkeypatch.setenv(check.ENV, "1")
    nodes = [SimpleNamespace(name=f"n{i}", tasks={}) for i in range(3)]
    out = []
    for shared in (True, False):
        monkeypatch.setattr(k8s_view, "SHARED_VECTORS", shared)
        # start from -0.0 sums: adding 0.0 and adding -0.0 to them differ
        view = _View(nodes, start=(np.zeros(3, dtype=np.int64), np.full((3, 5), -0.0)))  # type: ignore[arg-type]
        view.given = {}
        placed = []
        for i, (node, req) in enumerate(tasks):
            t = SimpleNamespace(uid=f"t{i}", key=f"ns/t{i}", node_name=f"n{node}")
            view.given[t.uid] = req
            view.on_allocate(t)  # type: ignore[arg-type]
            placed.append(t)
        for t, back in zip(placed, undo, strict=False):
            if back:
                view.on_deallocate(t)  # type: ignore[arg-type]
        out.append((view.count.tobytes(), view.sums.tobytes()))
    assert out[0] == out[1]


def test_a_negative_zero_gpu_amount_gets_an_array_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests equal but for a -0.0 GPU amount: on a node whose GPU sum is -0.0, adding 0.0 gives 0.0 and
    adding -0.0 keeps -0.0, so the second task must not take the first one's array."""
    nodes = [SimpleNamespace(name=f"n{i}", tasks={}) for i in range(2)]
    view = _View(nodes, start=(np.zeros(2, dtype=np.int64), np.full((2, 5), -0.0)))  # type: ignore[arg-type]
    view.given = {"a": (1.0, 1.0, 1.0, 1.0, 0.0), "b": (1.0, 1.0, 1.0, 1.0, -0.0)}
    view.on_allocate(SimpleNamespace(uid="a", key="ns/a", node_name="n0"))  # type: ignore[arg-type]
    view.on_allocate(SimpleNamespace(uid="b", key="ns/b", node_name="n1"))  # type: ignore[arg-type]
    assert _bits(view.sums[0, 4]) == _bits(0.0)
    assert _bits(view.sums[1, 4]) == _bits(-0.0)


def _weights_steps() -> list[tuple[str, list[tuple[str, dict]]]]:
    steps: list[tuple[str, list[tuple[str, dict]]]] = []
    for g in range(3):
        group = f"w{g}"
        steps.append(("submit", [(ADDED, k8s.podgroup(group, queue="qa", min_member=1)),
                                 (ADDED, k8s.pod(f"{group}-0", group, cpu=1))]))
        steps.append(("SESSION", []))
    return steps


@pytest.mark.parametrize("args", [{"leastrequested.weight": 3, "tainttoleration.weight": 0},
                                  {"leastrequested.weight": True}, {"balancedresource.weight": "2"}])
def test_weights_kept_across_sessions_are_read_again_where_they_warn(monkeypatch: pytest.MonkeyPatch,
                                                                     args: dict[str, Any]) -> None:
    """nodeorder's weights kept in the memo (`KEEP_WEIGHTS`): the same weights, decisions and warnings
    session after session as weights read at every open; arguments that warn are read (and warn) again."""
    monkeypatch.setenv(check.ENV, "1")
    conf = k8s.conf("enqueue, allocate", ["priority", "gang"], ["predicates", {"name": "nodeorder", "arguments": args}])

    def observe(i: int, ssn: Session, result: CycleResult) -> Any:
        plugin = next(p for _, p in ssn.plugins if p.name == "nodeorder")
        return _observe(i, ssn, result), plugin.w, list(ssn.warnings)  # type: ignore[attr-defined]

    runs = []
    for keep in (True, False):
        monkeypatch.setattr(nodeorder, "KEEP_WEIGHTS", keep)
        runs.append(play(_weights_steps(), _base, conf, observe))
    assert runs[0] == runs[1]
