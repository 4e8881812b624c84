"""enqueue's backlog carried from open to open (docs/semantics.md K47): the queues by first uid and their
Pending jobs kept in the memo and moved by the jobs the open delta names (actions/enqueue_backlog.py),
with their keys in capacity's numbering, and capacity's bucket plans taken whole from the last session
over the same queues (plugins/capacity/kept_plans.py `shared_plans`). Over random events and sessions on
one cache (jobs added, moved to another queue or to one the cluster lacks, admitted, finished, deleted;
queues added), every session decides and explains as the same sessions with all three off, and the
self-checks (the carried backlog against the pass over every job, the keys against the test's, the
plans against those worked out now) pass throughout."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.actions import enqueue
from apportion.framework.conf import parse_conf
from apportion.plugins.capacity import kept_plans
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent
from session_steps import play_texts

import k8s

CONF = parse_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
""")
LEAVES = ["pa-1", "pa-2", "pb-1", "solo", "nosuch"]
GROUPS = [f"g{i}" for i in range(12)]


def _base(cache: SchedulerCache) -> None:
    # a default queue of the cluster's own: a snapshot otherwise makes one afresh each time, and the
    # backlog is carried only while the queues are the last open's objects
    objs = [k8s.node("n0", cpu=8), k8s.node("n1", cpu=4), k8s.queue("root"),
            k8s.queue("default", parent="root", deserved={"cpu": "1"}),
            k8s.queue("pa", parent="root", deserved={"cpu": "6"}, capability={"cpu": "5"}),
            k8s.queue("pb", parent="root", deserved={"cpu": "4"}, capability={"cpu": "3"}),
            k8s.queue("solo", parent="root", deserved={"cpu": "2"}, capability={"cpu": "4"}),
            k8s.queue("pa-1", parent="pa", deserved={"cpu": "3"}, capability={"cpu": "4"}),
            k8s.queue("pa-2", parent="pa", deserved={"cpu": "3"}, capability={"cpu": "4"}),
            k8s.queue("pb-1", parent="pb", deserved={"cpu": "3"}, capability={"cpu": "3"})]
    for o in objs:
        cache.apply(WatchEvent(ADDED, o))


@st.composite
def a_step(draw: st.DrawFn) -> tuple[str, list[tuple[str, dict]]]:
    """A session, or the events of one change: gangs of one pod submitted Pending (minResources of 1-3
    cpu or none, in any leaf or in a queue the cluster lacks), a PodGroup moved to another queue, a
    pod finished, a PodGroup deleted, or the queue the cluster lacked added (again)."""
    kind = draw(st.sampled_from(["SESSION", "SESSION", "SESSION", "submit", "submit", "move", "finish",
                                 "delete", "queue"]))
    if kind == "SESSION":
        return kind, []
    if kind == "queue":
        return kind, [(ADDED, k8s.queue("nosuch", parent="root", deserved={"cpu": "1"}))]
    if kind == "submit":
        events: list[tuple[str, dict]] = []
        for group in draw(st.lists(st.sampled_from(GROUPS), min_size=1, max_size=3, unique=True)):
            cpu = draw(st.integers(0, 3))
            events += [(ADDED, k8s.podgroup(group, queue=draw(st.sampled_from(LEAVES)), phase="Pending",
                                            min_resources={"cpu": str(cpu)} if cpu else None)),
                       (ADDED, k8s.pod(f"{group}-0", group, cpu=draw(st.integers(1, 2))))]
        return kind, events
    group = draw(st.sampled_from(GROUPS))
    if kind == "move":
        return kind, [(MODIFIED, k8s.podgroup(group, queue=draw(st.sampled_from(LEAVES)), phase="Pending",
                                              min_resources={"cpu": str(draw(st.integers(1, 3)))}))]
    if kind == "finish":
        return kind, [(MODIFIED, k8s.pod(f"{group}-0", group, cpu=1, node_name="n0", phase="Succeeded"))]
    return kind, [(DELETED, k8s.podgroup(group))]


def _sessions(steps: list, carried: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setattr(enqueue, "carry_backlog", carried)
    monkeypatch.setattr(enqueue, "carry_keys", carried)
    monkeypatch.setattr(kept_plans, "share_plans", carried)
    return play_texts(steps, _base, CONF, [True, False])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(a_step(), min_size=1, max_size=60))
def test_carried_backlog_decides_as_the_pass_over_every_job(monkeypatch: pytest.MonkeyPatch, steps: list) -> None:
    monkeypatch.setenv(check.ENV, "1")
    assert _sessions(steps, True, monkeypatch) == _sessions(steps, False, monkeypatch)
