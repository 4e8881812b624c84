"""Every queue-state gate of the two queue plugins, action by action, against Volcano (issue 14 item 1).

Volcano (`plugins/capacity/capacity.go`, `plugins/proportion/proportion.go` at the guide's commit)
compares `status.state` with `Open` in exactly these places:

| action | extension point | capacity | proportion |
|---|---|---|---|
| enqueue | JobEnqueueable | not Open -> Reject | not Open -> Reject |
| allocate | Allocatable | not Open -> false | not Open -> false (`queueAllocatable`) |
| reclaim | Preemptive (the reclaimer's queue) | not Open -> false | not Open -> false (`queueAllocatable` again) |
| preempt (normal) | Allocatable, in `preemptorFitsOnNode` | not Open -> false | not Open -> false |
| preempt (topology-aware) | SimulateAllocatable | no state check | no state check |
| backfill | none (no queue plugin is asked) | - | - |

A victim's queue state is never read (reclaimable and preemptable look at allocations only), and a
PodGroup without minResources is admitted without asking any plugin (Keep, quirk 6). Closing, Closed
and Unknown are all "not Open". Before issue 14, proportion's preemptive skipped the state, so a
Closed, Closing or Unknown queue reclaimed under proportion: the reclaim rows below failed for it.
"""

from __future__ import annotations

from typing import Any

import pytest

from apportion.framework.conf import SchedulerConf

from k8s import conf, cycle, node, pod, podgroup, queue

NOT_OPEN = ["Closing", "Closed", "Unknown"]
STATES = ["Open", *NOT_OPEN]
PLUGINS = ["capacity", "proportion"]


def cfg(plugin: str, actions: str, **preempt_args: Any) -> SchedulerConf:
    entry: dict[str, Any] = {"name": plugin}
    tiers = [["priority", "gang", "conformance"], ["predicates", entry, "nodeorder"]]
    if not preempt_args:
        return conf(actions, *tiers)
    from apportion.framework.conf import conf_from_dict

    return conf_from_dict({
        "actions": actions,
        "tiers": [{"plugins": [p if isinstance(p, dict) else {"name": p} for p in t]} for t in tiers],
        "configurations": [{"name": "preempt", "arguments": preempt_args}],
    }, source="test")


def q(name: str, state: str, **spec: Any) -> dict:
    return queue(name, state=state, deserved={"cpu": "8", "memory": "64Gi"}, **spec)


@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("state", STATES)
def test_enqueue_admits_only_into_an_open_queue(plugin: str, state: str) -> None:
    objs = [node("n1", cpu=8, memory="64Gi"), q("q", state),
            podgroup("with", "q", phase="Pending", min_resources={"cpu": "1"}), pod("with-0", "with"),
            podgroup("without", "q", phase="Pending"), pod("without-0", "without")]
    r = cycle(objs, cfg(plugin, "enqueue"))
    assert r.podgroups["ns/with"] == ("Inqueue" if state == "Open" else "Pending")
    assert r.podgroups["ns/without"] == "Inqueue"  # Keep (quirk 6): no minResources, no plugin asked


@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("state", STATES)
def test_allocate_places_only_in_an_open_queue(plugin: str, state: str) -> None:
    objs = [node("n1", cpu=8, memory="64Gi"), q("q", state), podgroup("pg", "q"), pod("pg-0", "pg")]
    r = cycle(objs, cfg(plugin, "enqueue, allocate"))
    assert r.binds == ({"ns/pg-0": "n1"} if state == "Open" else {})


def reclaim_world(state: str) -> list[dict]:
    """`big` runs ten 1-cpu pods on the only node (deserved 4); `small` (in `state`) wants 4 cpu."""
    objs = [node("n1", cpu=10, memory="100Gi"),
            queue("big", deserved={"cpu": "4"}, guarantee={"cpu": "2"}),
            queue("small", deserved={"cpu": "6"}, state=state),
            podgroup("big-job", "big", phase="Running")]
    objs += [pod(f"big-job-{i}", "big-job", cpu=1, memory="", node_name="n1") for i in range(10)]
    objs += [podgroup("small-job", "small"), pod("small-job-0", "small-job", cpu=4, memory="")]
    return objs


@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("state", STATES)
def test_reclaim_only_for_an_open_queue(plugin: str, state: str) -> None:
    r = cycle(reclaim_world(state), cfg(plugin, "enqueue, allocate, reclaim"))
    if state == "Open":
        assert len(r.evictions) == 4 and r.pipelined == {"ns/small-job-0": "n1"}
    else:
        assert r.evictions == [] and r.pipelined == {}
        (ev,) = [e for e in r.events if e.object == "ns/small-job"]
        assert f"queue small is {state}, not Open" in ev.message


@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("state", NOT_OPEN)
def test_a_victim_queue_that_is_not_open_is_still_reclaimed_from(plugin: str, state: str) -> None:
    objs = reclaim_world("Open")
    objs[1] = queue("big", deserved={"cpu": "4"}, guarantee={"cpu": "2"}, state=state)
    r = cycle(objs, cfg(plugin, "enqueue, allocate, reclaim"))
    assert len(r.evictions) == 4


def preempt_world(state: str) -> list[dict]:
    """One queue: a low-priority job fills the node; a high-priority job of the same queue waits."""
    from k8s import priority_class

    objs = [node("n1", cpu=4, memory="32Gi"), q("q", state),
            priority_class("low", 1), priority_class("high", 100),
            podgroup("low", "q", phase="Running", priority_class="low")]
    objs += [pod(f"low-{i}", "low", cpu=1, node_name="n1", priorityClassName="low") for i in range(4)]
    objs += [podgroup("high", "q", priority_class="high"), pod("high-0", "high", cpu=2, priorityClassName="high")]
    return objs


@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("state", STATES)
def test_normal_preempt_only_in_an_open_queue(plugin: str, state: str) -> None:
    r = cycle(preempt_world(state), cfg(plugin, "enqueue, allocate, preempt"))
    if state == "Open":
        assert len(r.evictions) == 2 and r.pipelined == {"ns/high-0": "n1"}
    else:
        assert r.evictions == [] and r.pipelined == {}


@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("state", STATES)
def test_topology_aware_preempt_does_not_read_the_state(plugin: str, state: str) -> None:
    """Keep: SimulateAllocatable has no Open check in either plugin, so the dry run preempts."""
    r = cycle(preempt_world(state), cfg(plugin, "enqueue, allocate, preempt", enableTopologyAwarePreemption=True))
    assert len(r.evictions) == 2 and r.pipelined == {"ns/high-0": "n1"}


@pytest.mark.parametrize("plugin", PLUGINS)
@pytest.mark.parametrize("state", STATES)
def test_backfill_asks_no_queue_plugin(plugin: str, state: str) -> None:
    objs = [node("n1", cpu=8, memory="64Gi"), q("q", state), podgroup("be", "q"),
            pod("be-0", "be", cpu=0, memory="")]
    r = cycle(objs, cfg(plugin, "enqueue, allocate, backfill"))
    assert r.binds == {"ns/be-0": "n1"}


def test_proportion_reads_the_state_before_the_attributes() -> None:
    """`queueAllocatable` checks the state before it looks the queue's attributes up: a Closed queue
    that has no job (and so no attributes) is refused, not waved through (issue 14)."""
    from apportion.plugins.proportion import ProportionPlugin

    from k8s import session

    objs = [node("n1"), q("open", "Open"), q("shut", "Closed"), podgroup("pg", "open"), pod("pg-0", "pg")]
    ssn = session(objs, cfg("proportion", "allocate"))
    p = next(p for _, p in ssn.plugins if isinstance(p, ProportionPlugin))
    t = next(iter(ssn.jobs["ns/pg"].tasks.values()))
    assert "shut" not in p.attrs
    assert not p.allocatable(ssn.queues["shut"], t)
    assert not p.preemptive(ssn.queues["shut"], t)
