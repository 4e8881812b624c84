"""enqueue's work carried from one session to the next or left out (docs/semantics.md K33): the first
quiet job per queue kept with its set (actions/enqueue.py `quiet_firsts`) and the drain's units listed
without a tree picker, which is built only for an open group at root (DrainPicker.direct). Over random
events and sessions on one cache (jobs added, changed, admitted, deleted; pods placed and finished),
every session decides and explains as the same sessions with both off, and the self-check passes
throughout."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.actions import enqueue
from apportion.framework.conf import parse_conf
from apportion.plugins.capacity.drain_subset import DrainPicker
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent
from session_steps import decided, play

import k8s

CONF = parse_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
""")
LEAVES = ["pa-1", "pa-2", "pb-1", "pb-2", "solo"]
GROUPS = [f"g{i}" for i in range(16)]


def _base(cache: SchedulerCache) -> None:
    objs = [k8s.node("n0", cpu=8), k8s.node("n1", cpu=4), k8s.queue("root"),
            k8s.queue("pa", parent="root", deserved={"cpu": "6"}, capability={"cpu": "4"}),
            k8s.queue("pb", parent="root", deserved={"cpu": "4"}, capability={"cpu": "3"}),
            k8s.queue("solo", parent="root", deserved={"cpu": "2"}, capability={"cpu": "4"})]
    for leaf in LEAVES[:4]:
        objs.append(k8s.queue(leaf, parent=leaf[:2], deserved={"cpu": "3"}, capability={"cpu": "4"}))
    for o in objs:
        cache.apply(WatchEvent(ADDED, o))


@st.composite
def a_step(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict]]]:
    """A session, or the events of one change: one to three gangs of one pod submitted Pending
    (minResources of 2-3 cpu, in any leaf), a pod finished, or a PodGroup deleted."""
    kind = draw(st.sampled_from(["SESSION", "SESSION", "SESSION", "submit", "submit", "finish", "delete"]))
    if kind == "SESSION":
        return kind, []
    if kind == "submit":
        events: list[tuple[str, dict]] = []
        for group in draw(st.lists(st.sampled_from(GROUPS), min_size=1, max_size=3, unique=True)):
            events += [(ADDED, k8s.podgroup(group, queue=draw(st.sampled_from(LEAVES)), phase="Pending",
                                            min_resources={"cpu": str(draw(st.integers(2, 3)))})),
                       (ADDED, k8s.pod(f"{group}-0", group, cpu=draw(st.integers(1, 2))))]
        return kind, events
    group = draw(st.sampled_from(GROUPS))
    if kind == "finish":
        return kind, [(MODIFIED, k8s.pod(f"{group}-0", group, cpu=1, node_name="n0", phase="Succeeded"))]
    return kind, [(DELETED, k8s.podgroup(group))]


def _sessions(steps: list, carried: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setattr(enqueue, "carry_firsts", carried)
    monkeypatch.setattr(DrainPicker, "direct", carried)
    return play(steps, _base, CONF, decided)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(a_step(), min_size=1, max_size=60))
def test_carried_enqueue_decides_as_the_plain_one(monkeypatch: pytest.MonkeyPatch, steps: list) -> None:
    monkeypatch.setenv(check.ENV, "1")
    assert _sessions(steps, True, monkeypatch) == _sessions(steps, False, monkeypatch)
