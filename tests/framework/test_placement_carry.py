"""Placement answers carried from session to session (framework/placement_carry.py, docs/semantics.md
K44): over random events and sessions on one cache (gangs of a few shapes and constraints submitted,
pods ending or moved, groups deleted, a node relabelled), sessions that carry the last session's
answers decide, explain, bind, pipeline, evict and record unresolvable nodes as sessions that work
every answer out afresh, with the self-check (carried answers against fresh ones at every first use)
on throughout; and a gang of one shape placed session after session is worked out over every node once."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.engine import CycleResult
from apportion.framework import placement
from apportion.framework.conf import parse_conf
from apportion.framework.placement import PlacementCache
from apportion.framework.session import Session
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent
from session_steps import decided, play

import k8s

CONFS = [parse_conf(text) for text in ("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
""", """
actions: "enqueue, allocate, reclaim, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity}, {name: nodeorder}, {name: binpack}]
""")]
N_NODES = 6
GROUPS = [f"g{i}" for i in range(8)]
SHAPES = [(1, "1Gi"), (2, "2Gi"), (2, "6Gi")]


def _node(i: int, zone: str | None = None) -> dict:
    return k8s.node(f"n{i}", cpu=4 + 2 * (i % 3), memory="12Gi", labels={"zone": zone or f"z{i % 2}"},
                    **({"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]} if i == 5 else {}))


def _base(cache: SchedulerCache) -> None:
    objs = [_node(i) for i in range(N_NODES)]
    objs += [k8s.queue("qa", weight=2), k8s.queue("qb", weight=1)]
    for o in objs:
        cache.apply(WatchEvent(ADDED, o))


@st.composite
def a_change(draw: st.DrawFn) -> list[tuple[str, dict]]:
    """The events of one change."""
    kind = draw(st.sampled_from(["submit", "submit", "end", "end", "delete", "relabel"]))
    group = draw(st.sampled_from(GROUPS))
    size = 1 + GROUPS.index(group) % 4
    if kind == "submit":
        cpu, mem = draw(st.sampled_from(SHAPES))
        extra: dict[str, Any] = {}
        if draw(st.integers(0, 3)) == 0:
            extra["nodeSelector"] = {"zone": draw(st.sampled_from(["z0", "z1"]))}
        if draw(st.integers(0, 3)) == 0:
            extra["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        events = [(ADDED, k8s.podgroup(group, queue=draw(st.sampled_from(["qa", "qb"])), min_member=size,
                                       phase="Inqueue"))]
        return events + [(ADDED, k8s.pod(f"{group}-{t}", group, cpu=cpu, memory=mem, **extra)) for t in range(size)]
    if kind == "end":
        # a pod ends (or is moved) on some node, whatever the session did with it
        t = draw(st.integers(0, size - 1))
        phase = draw(st.sampled_from(["Succeeded", "Running"]))
        where = f"n{draw(st.integers(0, N_NODES - 1))}"
        return [(MODIFIED, k8s.pod(f"{group}-{t}", group, cpu=1, node_name=where, phase=phase))]
    if kind == "relabel":  # the nodes change: nothing is carried over that open
        i = draw(st.integers(0, N_NODES - 1))
        return [(MODIFIED, _node(i, draw(st.sampled_from(["z0", "z1", "z2"]))))]
    return [(DELETED, k8s.podgroup(group))] + [(DELETED, k8s.pod(f"{group}-{t}", group)) for t in range(size)]


@st.composite
def rounds(draw: st.DrawFn) -> list[tuple[str, list[tuple[str, dict]]]]:
    """Rounds of a few changes (none at times) and a session."""
    steps: list[tuple[str, list[tuple[str, dict]]]] = []
    for _ in range(draw(st.integers(1, 12))):
        steps += [("change", events) for events in draw(st.lists(a_change(), max_size=3))]
        steps.append(("SESSION", []))
    return steps


def _observe(i: int, ssn: Session, result: CycleResult) -> Any:
    return (decided(i, ssn, result), sorted(result.binds.items()), sorted(result.pipelined.items()),
            result.evictions, sorted((uid, sorted(rows)) for uid, rows in ssn.unresolvable_nodes.items()))


def _sessions(steps: list, carry: bool, conf: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setattr(placement, "CARRY_ANSWERS", carry)
    return play(steps, _base, conf, _observe)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(rounds(), st.sampled_from(CONFS), st.sampled_from([0, 12]))
def test_carried_answers_decide_as_answers_worked_out_afresh(monkeypatch: pytest.MonkeyPatch, steps: list,
                                                            conf: Any, row_refresh: int) -> None:
    # row_refresh 0: carried rows are worked out with the array functions; 12: one node at a time
    monkeypatch.setenv(check.ENV, "1")
    monkeypatch.setattr(placement, "ROW_REFRESH", row_refresh)
    assert _sessions(steps, True, conf, monkeypatch) == _sessions(steps, False, conf, monkeypatch)


#: the method itself (a spy made from the attribute as it stands would count through an earlier spy)
_COMPUTE = PlacementCache._compute


def _one_shape_sessions(carry: bool, monkeypatch: pytest.MonkeyPatch) -> int:
    """Five sessions each placing a new gang of one shape (the last one's pods ending in between):
    how many times answers were worked out over every node."""
    monkeypatch.setattr(placement, "CARRY_ANSWERS", carry)
    computed = []

    def counted(self: PlacementCache, *args: Any, **kwargs: Any) -> Any:
        computed.append(1)
        return _COMPUTE(self, *args, **kwargs)

    monkeypatch.setattr(PlacementCache, "_compute", counted)
    steps: list[tuple[str, list[tuple[str, dict]]]] = []
    for g in range(5):
        group = f"w{g}"
        steps.append(("submit", [(ADDED, k8s.podgroup(group, queue="qa", min_member=2))]
                      + [(ADDED, k8s.pod(f"{group}-{t}", group, cpu=1)) for t in range(2)]))
        steps.append(("SESSION", []))
        steps.append(("end", [(MODIFIED, k8s.pod(f"{group}-0", group, cpu=1, node_name="n0", phase="Succeeded"))]))
    play(steps, _base, CONFS[0], _observe)
    return len(computed)


def test_a_gang_of_one_shape_is_worked_out_over_every_node_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # (without the self-check, which works carried answers out afresh too)
    assert _one_shape_sessions(False, monkeypatch) == 5
    assert _one_shape_sessions(True, monkeypatch) == 1


def test_carried_answers_that_differ_fail_the_self_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A carried score changed behind the cache's back is caught at its first use."""
    monkeypatch.setenv(check.ENV, "1")
    spoiled: list[bool] = []

    def before(i: int, ssn: Session) -> None:
        for got in ssn.placement.answers.values():
            kept = [row for row in range(len(got.scores)) if row not in got.pending]
            if not spoiled and kept:
                got.scores[kept[0]] += 1.0
                spoiled.append(True)

    steps = [("submit", [(ADDED, k8s.podgroup(f"w{g}", queue="qa")), (ADDED, k8s.pod(f"w{g}-0", f"w{g}", cpu=1))])
             for g in range(2)]
    steps.insert(1, ("SESSION", []))
    steps.append(("SESSION", []))
    with pytest.raises(check.StateCheckError, match="carried from the last session"):
        play(steps, _base, CONFS[0], _observe, before)
    assert spoiled
