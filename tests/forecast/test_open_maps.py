"""Session open hands the nodes' task maps out by looking only at the rows it or the last session gave a
new map, when the forecast's snapshot maker vouches that it wrote none (`Snapshot.node_maps_as_left`,
framework/open_rows.py `hand_maps`, docs/semantics.md K46). Every session opens with every node holding
the map a look at every node gives it (`WRITE_REMAPPED` off, the reference), and the forecast answers
alike; a map written behind the open's back is caught by the self-check."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_forecast_sim import busy_dumps
from test_quiet import _answer, _bench_objects, _simulator, _without_reclaim

from apportion.framework import open_rows, session
from apportion.state.check import ENV, StateCheckError


def _traced(objs: list[dict[str, Any]], conf_text: str | None, horizon: float, fast: bool,
            mp: pytest.MonkeyPatch, other_open: bool = False) -> tuple[Any, list[Any], int]:
    """The forecast with `WRITE_REMAPPED` as given (self-check off); per session opened, each node's map
    as a list of (key, task) (the trace keeps the tasks alive: no later one takes an identity over), and
    how many opens looked at some rows only. `other_open`: before each incremental open, another open
    (of another memo) is counted as having handed out maps."""
    trace: list[Any] = []
    looked = [0]
    init = session.Session.__init__
    hand = open_rows.hand_maps

    def spy_init(self: session.Session, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        trace.append([list(n.tasks.items()) for n in self.nodes])

    def spy_hand(ssn: Any, base: Any, nxt: Any) -> None:
        if other_open:
            open_rows.MapTurns.take()
        looked[0] += (open_rows.WRITE_REMAPPED and base.written is not None and ssn.snapshot.node_maps_as_left
                      and base.node_map is ssn.node_by_name and base.map_turn == open_rows.MapTurns.count)
        hand(ssn, base, nxt)

    mp.delenv(ENV, raising=False)
    mp.setattr(open_rows, "WRITE_REMAPPED", fast)
    mp.setattr(session.Session, "__init__", spy_init)
    from apportion.framework import open_state
    mp.setattr(open_state, "hand_maps", spy_hand)
    sim = _simulator(objs, conf_text, True, horizon)
    sim.run()
    return _answer(sim), trace, looked[0]


def _same_either_way(objs: list[dict[str, Any]], conf_text: str | None, horizon: float) -> int:
    with pytest.MonkeyPatch.context() as mp:
        fast = _traced(objs, conf_text, horizon, True, mp)
    with pytest.MonkeyPatch.context() as mp:
        ref = _traced(objs, conf_text, horizon, False, mp)
    assert ref[2] == 0
    # keys in order, and each task's identity within its run: the runs make their own objects, so a task
    # is named by where it first appears in its run's trace
    assert fast[0] == ref[0]
    assert _shape(fast[1]) == _shape(ref[1])
    return fast[2]


def _shape(trace: list[Any]) -> list[Any]:
    """Each session's maps with the tasks numbered in order of first appearance in the run."""
    seen: dict[int, int] = {}
    return [[[(k, seen.setdefault(id(t), len(seen))) for k, t in node] for node in maps] for maps in trace]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_maps_handed_out_by_the_rows_that_moved_are_every_nodes(case: tuple[list[dict[str, Any]], str | None],
                                                                drop: bool) -> None:
    """Random GPU dumps (flat or tree capacity, with and without reclaim)."""
    objs, conf_text = case
    _same_either_way(objs, _without_reclaim(conf_text, drop), 4 * 3600.0)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_maps_on_the_benchmark_shape(seed: int) -> None:
    """The benchmark's dump, small: gangs bound and pods finishing session after session; the rows-only
    look is the one taken."""
    assert _same_either_way(_bench_objects(seed, nodes=10, gangs=40), None, 3 * 3600.0) > 0


def test_a_map_written_behind_the_opens_back_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A maker that vouches for the maps but wrote one: the self-check, which looks at every node after
    the rows-only look, refuses the open."""
    objs = _bench_objects(3, nodes=10, gangs=40)
    monkeypatch.setenv(ENV, "1")
    sim = _simulator(objs, None, True, 3600.0)
    snapshot = sim._snapshot
    calls = [0]

    def meddled() -> Any:
        snap = snapshot()
        calls[0] += 1
        if calls[0] >= 3:  # every node's map copied: some node is not among the rows an open looks at
            for node in snap.nodes:
                node.tasks = dict(node.tasks)
        return snap

    monkeypatch.setattr(sim, "_snapshot", meddled)
    with pytest.raises(StateCheckError, match="hold another map"):
        sim.run()


def test_an_open_of_another_memo_in_between_turns_the_rows_only_look_off() -> None:
    """Another open between two of the forecast's (which may have written the maps of the same node
    objects): every node is looked at, and the forecast answers alike."""
    objs = _bench_objects(4, nodes=10, gangs=40)
    with pytest.MonkeyPatch.context() as mp:
        ref = _traced(objs, None, 3 * 3600.0, False, mp)
    with pytest.MonkeyPatch.context() as mp:
        other = _traced(objs, None, 3 * 3600.0, True, mp, other_open=True)
    assert other[2] == 0
    assert other[0] == ref[0] and _shape(other[1]) == _shape(ref[1])
