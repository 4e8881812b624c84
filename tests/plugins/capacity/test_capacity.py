"""The capacity plugin in flat mode: every extension point, directly on an open session and end to end."""

from __future__ import annotations

from typing import Any

import pytest

from apportion.framework import extension as ep
from apportion.framework.session import Session
from apportion.plugins.capacity import STATE_KEY, CapacityPlugin, CapacityState
from apportion.resources import Resource

from k8s import conf, cycle, node, pod, podgroup, queue, session

GI = 2**30


def cap_conf(actions: str = "enqueue, allocate, reclaim", **args: Any) -> Any:
    entry: dict[str, Any] = {"name": "capacity"}
    if args:
        entry["arguments"] = {k.replace("_", "."): v for k, v in args.items()}
    return conf(actions, ["priority", "gang"], [entry])


def plugin_of(ssn: Session) -> CapacityPlugin:
    return next(p for _, p in ssn.plugins if isinstance(p, CapacityPlugin))


def task(ssn: Session, key: str) -> Any:
    ns, name = key.split("/")
    for j in ssn.jobs.values():
        for t in j.tasks.values():
            if t.name == name and t.namespace == ns:
                return t
    raise KeyError(key)


def ten_nodes() -> list[dict]:
    return [node(f"n{i}", cpu=10, memory="64Gi") for i in range(1, 11)]


def three_queues() -> list[dict]:
    """The capacity-realcapability example: 100 CPU, 10-CPU guarantees, a cap 60, b none, c cap 50."""
    return [
        queue("a", deserved={"cpu": "40"}, guarantee={"cpu": "10"}, capability={"cpu": "60"}),
        queue("b", deserved={"cpu": "30"}, guarantee={"cpu": "10"}),
        queue("c", deserved={"cpu": "30"}, guarantee={"cpu": "10"}, capability={"cpu": "50"}),
    ]


def running(name: str, q: str, cpu: float, n: int = 1, node_name: str = "n1", min_res: dict | None = None,
            **kw: Any) -> list[dict]:
    objs = [podgroup(name, q, phase="Running", min_resources=min_res)]
    objs += [pod(f"{name}-{i}", name, cpu=cpu, node_name=node_name, **kw) for i in range(n)]
    return objs


# ============================================================================ session-open computation
def test_real_capability_deserved_and_share_flat() -> None:
    ssn = session(ten_nodes() + three_queues() + running("a-run", "a", 10) + running("b-run", "b", 10)
                  + running("c-run", "c", 10), cap_conf())
    p = plugin_of(ssn)
    assert not p.hierarchical
    assert p.total_guarantee.cpu == 30_000
    real = {n: p.attrs[n].real_capability.cpu for n in "abc"}  # type: ignore[union-attr]
    assert real == {"a": 60_000, "b": 80_000, "c": 50_000}
    assert {n: p.attrs[n].deserved.cpu for n in "abc"} == {"a": 40_000, "b": 30_000, "c": 30_000}
    assert p.attrs["a"].share == pytest.approx(0.25)
    # attributes only for queues with jobs (default has none)
    assert set(p.attrs) == {"a", "b", "c"}
    # memory: capability lists cpu only -> memory unlimited -> realCapability memory = total
    assert p.attrs["a"].real_capability.memory == 640 * GI  # type: ignore[union-attr]
    assert p.attrs["a"].terms is not None and p.attrs["a"].terms.why()["cpu"]["won"] == "capability"
    assert p.attrs["b"].terms is not None and p.attrs["b"].terms.why()["cpu"]["won"] == "headroom"


def test_deserved_capped_by_real_capability_then_raised_to_guarantee() -> None:
    objs = [node("n1", cpu=10), queue("x", deserved={"cpu": "50"}, capability={"cpu": "4"}),
            queue("y", deserved={"cpu": "1"}, guarantee={"cpu": "3"})]
    objs += running("jx", "x", 1) + running("jy", "y", 1)
    p = plugin_of(session(objs, cap_conf()))
    assert p.attrs["x"].deserved.cpu == 4_000  # capped by realCapability (min(4, 10 - 3))
    assert p.attrs["y"].deserved.cpu == 3_000  # raised to the guarantee


def test_best_effort_queue_share_is_one_and_sorts_after_a_queue_with_deserved() -> None:
    objs = [node("n1", cpu=10), queue("be"), queue("full", deserved={"cpu": "1"})]
    objs += running("j-be", "be", 1) + running("j-full", "full", 1)
    ssn = session(objs, cap_conf())
    p = plugin_of(ssn)
    assert p.attrs["be"].share == 1.0 and p.attrs["full"].share == 1.0
    assert p.queue_order(ssn.queues["full"], ssn.queues["be"]) < 0
    assert p.queue_order(ssn.queues["be"], ssn.queues["full"]) > 0


def test_queue_order_priority_then_share() -> None:
    objs = [node("n1", cpu=10), queue("lo", deserved={"cpu": "10"}), queue("hi", deserved={"cpu": "10"}, priority=5),
            queue("busy", deserved={"cpu": "2"})]
    objs += running("j1", "lo", 1) + running("j2", "hi", 5) + running("j3", "busy", 1)
    ssn = session(objs, cap_conf())
    p = plugin_of(ssn)
    q = ssn.queues
    assert p.queue_order(q["hi"], q["lo"]) < 0  # priority wins over share (0.5 vs 0.1)
    assert p.queue_order(q["lo"], q["busy"]) < 0  # 0.1 < 0.5


# ============================================================================ allocatable
def test_allocatable_checks_real_capability_on_requested_dimensions_only() -> None:
    objs = ten_nodes() + three_queues() + running("a-run", "a", 10, n=5)
    objs += [podgroup("a-new", "a"), pod("a-new-0", "a-new", cpu=11, memory="1000Gi"),
             pod("a-new-1", "a-new", cpu=10, memory="")]
    ssn = session(objs, cap_conf())
    p = plugin_of(ssn)
    t0, t1 = task(ssn, "ns/a-new-0"), task(ssn, "ns/a-new-1")
    assert not p.allocatable(ssn.queues["a"], t0)
    msgs = ssn.explanations[t0.key]
    assert "queue a: cpu 61 > realCapability 60 (short by 1)" in msgs[0]
    assert "memory" in msgs[0]  # 1005Gi > 640Gi too
    assert p.allocatable(ssn.queues["a"], t1)  # exactly at 60


def test_allocatable_refuses_a_closed_queue() -> None:
    objs = [node("n1"), queue("q", deserved={"cpu": "4"}, state="Closed")] + running("r", "q", 1)
    objs += [podgroup("p", "q"), pod("p-0", "p", cpu=1)]
    ssn = session(objs, cap_conf())
    t = task(ssn, "ns/p-0")
    assert not plugin_of(ssn).allocatable(ssn.queues["q"], t)
    assert "not Open" in ssn.explanations[t.key][0]


# ============================================================================ enqueue
def test_job_enqueueable_and_enqueued_flat_example() -> None:
    objs = ten_nodes() + three_queues()
    for q in "abc":
        objs += running(f"{q}-run", q, 10, min_res={"cpu": "10", "memory": "1Gi"}, memory="1Gi")
    objs += [podgroup("b-big", "b", min_member=5, phase="Pending", min_resources={"cpu": "45", "memory": "5Gi"}),
             podgroup("c-big", "c", min_member=5, phase="Pending", min_resources={"cpu": "45", "memory": "5Gi"})]
    objs += [pod(f"b-big-{i}", "b-big", cpu=9) for i in range(5)] + [pod(f"c-big-{i}", "c-big", cpu=9) for i in range(5)]
    ssn = session(objs, cap_conf("enqueue"))
    p = plugin_of(ssn)
    assert p.job_enqueueable(ssn.jobs["ns/b-big"]) == ep.PERMIT
    assert p.job_enqueueable(ssn.jobs["ns/c-big"]) == ep.REJECT
    msg = ssn.explanations["ns/c-big"][0]
    assert msg.startswith("queue c: queue resource quota insufficient")
    assert "cpu 55 > realCapability 50 (short by 5)" in msg
    p.job_enqueued(ssn.jobs["ns/b-big"])
    assert p.attrs["b"].inqueue.cpu == 45_000 and p.attrs["b"].inqueue.memory == 5 * GI
    # end to end
    res = cycle(objs, cap_conf("enqueue"))
    assert res.podgroups["ns/b-big"] == "Inqueue" and res.podgroups["ns/c-big"] == "Pending"
    assert any(e.object == "ns/c-big" and "short by 5" in e.message for e in res.events)


def test_elastic_enable_switch() -> None:
    """README note: without minResources on the running gangs their 10 CPU is elastic, so c-big fits;
    with capacity.ElasticEnable false nothing is elastic and it does not."""
    objs = ten_nodes() + three_queues()
    for q in "abc":
        objs += running(f"{q}-run", q, 10)
    objs += [podgroup("c-big", "c", min_member=5, phase="Pending", min_resources={"cpu": "45"})]
    objs += [pod(f"c-big-{i}", "c-big", cpu=9) for i in range(5)]
    on = session(objs, cap_conf("enqueue"))
    assert plugin_of(on).attrs["c"].elastic.cpu == 10_000
    assert plugin_of(on).job_enqueueable(on.jobs["ns/c-big"]) == ep.PERMIT
    off = session(objs, cap_conf("enqueue", capacity_ElasticEnable=False))
    assert plugin_of(off).attrs["c"].elastic.is_empty()
    assert plugin_of(off).job_enqueueable(off.jobs["ns/c-big"]) == ep.REJECT


def test_guarantee_enable_switch() -> None:
    objs = ten_nodes() + three_queues() + running("a-run", "a", 10) + running("b-run", "b", 10)
    off = plugin_of(session(objs, cap_conf(capacity_GuaranteeEnable=False)))
    assert off.total_guarantee.is_empty()
    assert off.attrs["b"].real_capability.cpu == 100_000  # type: ignore[union-attr]  # no guarantees held back
    assert off.attrs["a"].guarantee.is_empty()
    objs2 = [node("n1", cpu=10), queue("y", deserved={"cpu": "1"}, guarantee={"cpu": "3"})] + running("jy", "y", 1)
    assert plugin_of(session(objs2, cap_conf())).attrs["y"].deserved.cpu == 3_000
    assert plugin_of(session(objs2, cap_conf(capacity_GuaranteeEnable=False))).attrs["y"].deserved.cpu == 1_000


# ============================================================================ preemptive and reclaimable
def reclaim_world(**kw: Any) -> list[dict]:
    """Queue `big` (deserved 4, guarantee 2) runs 6 one-CPU pods; `small` (deserved 6) wants 4."""
    objs = [node("n1", cpu=10, memory="100Gi"),
            queue("big", deserved={"cpu": "4"}, guarantee={"cpu": "2"}, **kw),
            queue("small", deserved={"cpu": "6"})]
    objs += running("big-job", "big", 1, n=6, node_name="n1", memory="")
    objs += [podgroup("small-job", "small", min_member=1), pod("small-job-0", "small-job", cpu=4, memory="")]
    return objs


def test_preemptive_any_dimension_under_deserved() -> None:
    ssn = session(reclaim_world(), cap_conf())
    p = plugin_of(ssn)
    t = task(ssn, "ns/small-job-0")
    assert p.preemptive(ssn.queues["small"], t)  # 0 + 4 <= 6
    big_task = task(ssn, "ns/big-job-0")
    assert not p.preemptive(ssn.queues["big"], big_task)  # 6 + 1 > 4 on its only dimension
    assert "would exceed deserved" in ssn.explanations[big_task.key][-1]


def test_preemptive_best_effort_queue_never_reclaims() -> None:
    objs = [node("n1", cpu=10), queue("be")] + running("r", "be", 1)
    objs += [podgroup("p", "be"), pod("p-0", "p", cpu=1)]
    ssn = session(objs, cap_conf())
    assert not plugin_of(ssn).preemptive(ssn.queues["be"], task(ssn, "ns/p-0"))


def test_reclaimable_triple_check_with_running_allocated_and_guarantee() -> None:
    ssn = session(reclaim_world(), cap_conf())
    p = plugin_of(ssn)
    reclaimer = task(ssn, "ns/small-job-0")
    cands = [task(ssn, f"ns/big-job-{i}") for i in range(6)]
    victims, vote = p.reclaimable(reclaimer, cands)
    assert vote == ep.PERMIT
    # allocated 6 > deserved 4: victims while the working allocated stays above deserved -> two (6->5->4);
    # the guarantee (2) is not what stops it here
    assert len(victims) == 2
    assert {v.key for v in victims} == {"ns/big-job-5", "ns/big-job-4"}  # victim order: largest index first


def test_reclaimable_guarantee_protection() -> None:
    # deserved 0-cpu-listed? no: deserved lists only memory -> every cpu-only pod is an immediate victim,
    # so only the guarantee can stop the eviction
    objs = [node("n1", cpu=10, memory="100Gi"),
            queue("big", deserved={"memory": "1Gi"}, guarantee={"cpu": "4"}),
            queue("small", deserved={"cpu": "6"})]
    objs += running("big-job", "big", 1, n=6, node_name="n1", memory="")
    objs += [podgroup("small-job", "small"), pod("small-job-0", "small-job", cpu=4, memory="")]
    ssn = session(objs, cap_conf())
    p = plugin_of(ssn)
    victims, _ = p.reclaimable(task(ssn, "ns/small-job-0"), [task(ssn, f"ns/big-job-{i}") for i in range(6)])
    assert len(victims) == 2  # 6 -> 4 = guarantee; a third would breach it
    # with the design doc's GuaranteeEnable off the guarantee does not protect
    ssn2 = session(objs, cap_conf(capacity_GuaranteeEnable=False))
    victims2, _ = plugin_of(ssn2).reclaimable(task(ssn2, "ns/small-job-0"),
                                              [task(ssn2, f"ns/big-job-{i}") for i in range(6)])
    assert len(victims2) == 6


def test_reclaimable_skips_tasks_sharing_no_dimension_with_the_reclaimer() -> None:
    objs = [node("n1", cpu=10, memory="100Gi", scalars={"nvidia.com/gpu": "4"}),
            queue("big", deserved={"cpu": "1"}), queue("gpu", deserved={"nvidia.com/gpu": "4"})]
    objs += running("cpu-job", "big", 2, n=3, node_name="n1", memory="")
    objs += [podgroup("g", "gpu"), pod("g-0", "g", cpu=0, memory="", scalars={"nvidia.com/gpu": "1"})]
    ssn = session(objs, cap_conf())
    p = plugin_of(ssn)
    victims, vote = p.reclaimable(task(ssn, "ns/g-0"), [task(ssn, f"ns/cpu-job-{i}") for i in range(3)])
    assert victims == [] and vote == ep.PERMIT


def test_reclaimable_immediate_victim_and_relevant_dimensions() -> None:
    """A queue whose deserved lists only GPUs is never 'over' on cpu: its GPU pods are protected while its
    GPU use is within deserved, but its cpu-only pods are immediate victims."""
    objs = [node("n1", cpu=40, memory="100Gi", scalars={"nvidia.com/gpu": "8"}),
            queue("gq", deserved={"nvidia.com/gpu": "4"}), queue("cq", deserved={"cpu": "20"})]
    objs += running("gpu-job", "gq", 10, n=2, node_name="n1", memory="", scalars={"nvidia.com/gpu": "1"})
    objs += running("cpu-only", "gq", 10, n=1, node_name="n1", memory="")
    objs += [podgroup("c", "cq"), pod("c-0", "c", cpu=10, memory="")]
    ssn = session(objs, cap_conf())
    p = plugin_of(ssn)
    cands = [task(ssn, k) for k in ("ns/gpu-job-0", "ns/gpu-job-1", "ns/cpu-only-0")]
    victims, _ = p.reclaimable(task(ssn, "ns/c-0"), cands)
    assert [v.key for v in victims] == ["ns/cpu-only-0"]


def test_reclaim_end_to_end_respects_guarantee() -> None:
    objs = [node("n1", cpu=6, memory="100Gi"),
            queue("big", deserved={"cpu": "1"}, guarantee={"cpu": "3"}), queue("small", deserved={"cpu": "6"})]
    objs += running("big-job", "big", 1, n=6, node_name="n1", memory="")
    objs += [podgroup("s", "small"), pod("s-0", "s", cpu=4, memory="")]
    res = cycle(objs, cap_conf("enqueue, allocate, reclaim"))
    # 3 CPU may go (6 -> 3 = guarantee), not the 4 the pod needs: validate_victims fails, nothing is evicted
    assert res.evictions == []
    objs[-1] = pod("s-0", "s", cpu=3, memory="")
    res = cycle(objs, cap_conf("enqueue, allocate, reclaim"))
    assert len(res.evictions) == 3 and res.pipelined == {"ns/s-0": "n1"}
    assert res.queues["big"]["allocated"]["cpu"] == 3


# ============================================================================ pre-predicate, simulate, events
def test_pre_predicate_snapshot_and_simulate_points_flat() -> None:
    ssn = session(reclaim_world(), cap_conf())
    p = plugin_of(ssn)
    t = task(ssn, "ns/small-job-0")
    ssn.simulation_state_needed = True  # as with enableTopologyAwarePreemption
    assert p.pre_predicate(t) is None
    state = ssn.cycle_states[t.uid]
    cs = state[STATE_KEY]
    assert isinstance(cs, CapacityState)
    victim = task(ssn, "ns/big-job-0")
    p.simulate_remove_task(state, victim, 0)
    assert cs.attrs["big"].allocated.cpu == 5_000
    assert p.attrs["big"].allocated.cpu == 6_000  # the live attributes are untouched
    clone = cs.clone()
    p.simulate_add_task(state, t, 0)
    assert cs.attrs["small"].allocated.cpu == 4_000 and clone.attrs["small"].allocated.cpu == 0
    assert cs.attrs["small"].share == pytest.approx(4 / 6)
    assert p.simulate_allocatable(ssn.queues["small"], t, state)  # 4 + 4 <= 10
    big = task(ssn, "ns/small-job-0")
    big.resreq = Resource(7_000, 0, {"pods": 1})
    assert not p.simulate_allocatable(ssn.queues["small"], big, state)  # 4 + 7 > 10
    assert not p.simulate_allocatable(ssn.queues["small"], t, {})  # no snapshot: not allocatable


def test_event_handlers_move_allocated_and_share() -> None:
    ssn = session(reclaim_world(), cap_conf())
    p = plugin_of(ssn)
    t = task(ssn, "ns/small-job-0")
    p.on_allocate(t)
    assert p.attrs["small"].allocated.cpu == 4_000 and p.attrs["small"].share == pytest.approx(4 / 6)
    p.on_deallocate(t)
    assert p.attrs["small"].allocated.cpu == 0 and p.attrs["small"].share == 0


def test_queue_report_fields() -> None:
    res = cycle(ten_nodes() + three_queues() + running("a-run", "a", 10), cap_conf())
    rep = res.queues["a"]
    assert set(rep) == {"deserved", "allocated", "request", "inqueue", "elastic", "capability", "realCapability",
                        "guarantee", "share", "parent", "state"}
    assert rep["capability"] == {"cpu": 60, "memory": "unlimited"}
    assert rep["realCapability"]["cpu"] == 60 and rep["parent"] == "" and rep["state"] == "Open"


def test_bad_arguments_warn_and_fall_back() -> None:
    ssn = session(ten_nodes() + three_queues() + running("a-run", "a", 10),
                  conf("allocate", [{"name": "capacity", "arguments": {"ancestorReclaimLevel": -2,
                                                                        "capacity.rootCapability": "nope"}}]))
    p = plugin_of(ssn)
    assert p.ancestor_reclaim_level == 0 and p.root_mode == "cluster"
    assert any("ancestorReclaimLevel" in w for w in ssn.warnings)
    assert any("rootCapability" in w for w in ssn.warnings)
