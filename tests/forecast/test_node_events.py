"""The forecast's nodes per session (`DumpObjects.adjust`): compared only after a node event of the
simulator (its count passed in) against the reference that compares the live nodes every session."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_quiet import _answer, _bench_objects, _simulator

from apportion.cluster.snapshot import Snapshot
from apportion.forecast.sim import DumpObjects
from apportion.state.check import ENV, StateCheckError


def _objects(seed: int) -> tuple[DumpObjects, dict[str, Any]]:
    sim = _simulator(_bench_objects(seed, nodes=10, gangs=4), None, True, 3600.0)
    objects = sim.objects
    assert isinstance(objects, DumpObjects)
    return objects, sim.nodes


def _seen(objects: DumpObjects, live: dict[str, Any], events: int | None) -> tuple[Any, ...]:
    snap = Snapshot()
    objects.adjust(snap, 0.0, live, events)
    # the nodes themselves too, so that no id is reused while the test compares them
    return tuple(n.name for n in snap.nodes), tuple(id(n) for n in snap.nodes), snap.nodes_key, snap.nodes


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 100), st.lists(st.tuples(st.booleans(), st.integers(0, 9)), max_size=12))
def test_nodes_with_the_count_of_node_events_are_the_reference(seed: int, steps: list[tuple[bool, int]]) -> None:
    """Random node failures and recoveries, each counted, between sessions (and sessions with none):
    the same nodes, the same objects and the same key as when the live nodes are compared every time."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(ENV, raising=False)
        fast, live = _objects(seed)
        plain, _ = _objects(seed)
        failed: dict[str, Any] = {}
        events = 0
        names = sorted(live)
        plain_ids: dict[int, int] = {}
        fast_ids: dict[int, int] = {}
        kept: list[Any] = []
        for fail, i in [(False, -1), *steps]:
            name = names[i] if names and i >= 0 else None
            if name is not None and fail and name in live:
                failed[name] = live.pop(name)
                events += 1
            elif name is not None and not fail and name in failed:
                live[name] = failed.pop(name)
                events += 1
            for _ in range(2):
                f, p = _seen(fast, live, events), _seen(plain, live, None)
                kept += [f, p]
                # the objects are each DumpObjects' own: the same one where the reference keeps one
                assert f[0] == p[0]
                assert [fast_ids.setdefault(x, len(fast_ids)) for x in f[1]] == \
                    [plain_ids.setdefault(x, len(plain_ids)) for x in p[1]]
                assert f[2][2] == p[2][2]


def test_a_forecast_with_the_count_is_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    fast = _simulator(_bench_objects(3, nodes=10, gangs=40), None, True, 3 * 3600.0)
    fast.run()
    plain_adjust = DumpObjects.adjust
    monkeypatch.setattr(DumpObjects, "adjust", lambda self, snap, now, live, events=None:
                        plain_adjust(self, snap, now, live, None))
    plain = _simulator(_bench_objects(3, nodes=10, gangs=40), None, True, 3 * 3600.0)
    plain.run()
    assert _answer(fast) == _answer(plain)


def test_the_self_check_fails_loudly_on_nodes_changed_uncounted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1")
    objects, live = _objects(1)
    objects.checking = True
    _seen(objects, live, 0)
    live.pop(sorted(live)[0])
    with pytest.raises(StateCheckError, match="no node event"):
        _seen(objects, live, 0)
