"""The proportion plugin: every extension point, directly on an open session and through the engine."""

from __future__ import annotations

import math
from typing import Any

import pytest

from apportion.cluster.model import TaskInfo, TaskStatus
from apportion.engine import CycleResult, open_session, run_cycle
from apportion.framework import extension as ep
from apportion.framework.conf import SchedulerConf, build_conf, parse_conf
from apportion.framework.session import Session
from apportion.kube import build_snapshot
from apportion.plugins.fairshare import FairShareQueue, water_fill
from apportion.plugins.proportion import STATE_KEY, ProportionPlugin, ProportionState
from apportion.resources import Resource

GI = 2**30


# ----------------------------------------------------------------------------- builders
def node(name: str, cpu: float = 10, memory: str = "1000Gi", scalars: dict[str, str] | None = None) -> dict[str, Any]:
    alloc = {"cpu": str(cpu), "memory": memory, "pods": "110", **(scalars or {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": alloc}}


def queue(name: str, weight: int = 1, *, capability: dict | None = None, guarantee: dict | None = None,
          priority: int | None = None, state: str = "Open", deserved: dict | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight}
    if capability is not None:
        spec["capability"] = capability
    if guarantee is not None:
        spec["guarantee"] = {"resource": guarantee}
    if priority is not None:
        spec["priority"] = priority
    if deserved is not None:
        spec["deserved"] = deserved
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": spec, "status": {"state": state}}


def podgroup(name: str, queue: str, *, min_member: int = 1, phase: str = "Inqueue",
             min_resources: dict | None = None, created: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"queue": queue, "minMember": min_member}
    if min_resources is not None:
        spec["minResources"] = min_resources
    meta: dict[str, Any] = {"name": name, "namespace": "ns"}
    if created:
        meta["creationTimestamp"] = created
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": meta,
            "spec": spec, "status": {"phase": phase}}


def pod(name: str, group: str, cpu: float = 1, memory: str = "1Gi", node_name: str = "",
        scalars: dict[str, str] | None = None, gated: bool = False) -> dict[str, Any]:
    requests = {"cpu": str(cpu), "memory": memory, **(scalars or {})}
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": requests}}]}
    if gated:
        spec["schedulingGates"] = [{"name": "example.com/wait"}]
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "annotations": {"scheduling.k8s.io/group-name": group}},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def job(name: str, q: str, n: int, cpu: float = 1, *, running_on: str = "", **pg: Any) -> list[dict[str, Any]]:
    objs = [podgroup(name, q, **pg)]
    objs += [pod(f"{name}-{i}", name, cpu, node_name=running_on) for i in range(n)]
    return objs


def conf(actions: str = "enqueue, allocate", *tiers: list[Any]) -> SchedulerConf:
    return build_conf(actions, [list(t) for t in tiers] or [["priority", "gang"], ["proportion"]])


def session(objs: list[dict[str, Any]], cfg: SchedulerConf | None = None) -> Session:
    snap = build_snapshot([(f"test: document {i}", o) for i, o in enumerate(objs)])
    return open_session(snap, cfg or conf())


def cycle(objs: list[dict[str, Any]], cfg: SchedulerConf | None = None) -> CycleResult:
    snap = build_snapshot([(f"test: document {i}", o) for i, o in enumerate(objs)])
    return run_cycle(snap, cfg or conf())


def plugin(ssn: Session) -> ProportionPlugin:
    (p,) = [p for _, p in ssn.plugins if isinstance(p, ProportionPlugin)]
    return p


def cores(r: Resource) -> float:
    return r.cpu / 1000


def task(ssn: Session, key: str) -> TaskInfo:
    for j in ssn.jobs.values():
        for t in j.tasks.values():
            if t.key == key:
                return t
    raise KeyError(key)


def ten_nodes() -> list[dict[str, Any]]:
    return [node(f"n{i}") for i in range(10)]  # 100 cpu


def weighted_example() -> list[dict[str, Any]]:
    """The seed's worked example: weights 2/3/5, requests 80/15/200 of 100 cpu."""
    return [*ten_nodes(), queue("a", 2), queue("b", 3), queue("c", 5),
            *job("pg-a", "a", 8, 10), *job("pg-b", "b", 3, 5), *job("pg-c", "c", 20, 10)]


# ----------------------------------------------------------------------------- deserved
def test_weighted_deserved_worked_example_on_an_open_session():
    p = plugin(session(weighted_example()))
    assert cores(p.attrs["a"].deserved) == pytest.approx(24.2857142857, rel=1e-9)
    assert cores(p.attrs["b"].deserved) == pytest.approx(15)
    assert cores(p.attrs["c"].deserved) == pytest.approx(60.7142857143, rel=1e-9)
    # memory and pods are water-filled too: every queue asked for less than its share, so gets its request
    for q, n in (("a", 8), ("b", 3), ("c", 20)):
        assert p.attrs[q].deserved.memory == n * GI
        assert p.attrs[q].deserved.scalars["pods"] == n


def test_weighted_deserved_direct_two_rounds():
    total = Resource.from_natural({"cpu": 100})
    res = water_fill(total, [
        FairShareQueue("a", 2, Resource.from_natural({"cpu": 80}), None, Resource()),
        FairShareQueue("b", 3, Resource.from_natural({"cpu": 15}), None, Resource()),
        FairShareQueue("c", 5, Resource.from_natural({"cpu": 200}), None, Resource()),
    ])
    assert [cores(res.deserved[q]) for q in "abc"] == pytest.approx([100 * 2 / 7 * 0.85, 15, 100 * 5 / 7 * 0.85])
    assert res.met_in_round["b"] == 1  # b is capped by its request in the first round
    assert res.rounds >= 2


def test_spec_deserved_is_ignored():
    objs = weighted_example()
    objs[10] = queue("a", 2, deserved={"cpu": "90"})
    assert cores(plugin(session(objs)).attrs["a"].deserved) == pytest.approx(24.2857142857)


def test_queues_without_jobs_get_no_attributes_but_their_guarantee_counts():
    objs = [*ten_nodes(), queue("a"), queue("idle", guarantee={"cpu": "30"}), *job("pg-a", "a", 1, 1)]
    p = plugin(session(objs))
    assert set(p.attrs) == {"a"}
    assert cores(p.attrs["a"].real_capability) == 70  # 100 - 30 + 0


def test_guarantee_raises_deserved_above_the_request():
    objs = [*ten_nodes(), queue("a", guarantee={"cpu": "30"}), queue("b"), *job("pg-a", "a", 1, 5), *job("pg-b", "b", 1, 5)]
    p = plugin(session(objs))
    assert cores(p.attrs["a"].deserved) == 30
    assert cores(p.attrs["b"].deserved) == 5


def test_guarantee_overflow_is_kept_from_volcano():
    # a's guarantee lifts it to 90 in the same round in which b takes its 50: deserved sums to 140 > 100
    res = water_fill(Resource.from_natural({"cpu": 100}), [
        FairShareQueue("a", 1, Resource.from_natural({"cpu": 10}), None, Resource.from_natural({"cpu": 90})),
        FairShareQueue("b", 1, Resource.from_natural({"cpu": 100}), None, Resource()),
    ])
    assert (cores(res.deserved["a"]), cores(res.deserved["b"])) == (90, 50)


def test_total_weight_zero_leaves_deserved_empty_and_the_queue_overused():
    objs = [*ten_nodes(), queue("z", 0, guarantee={"cpu": "5"}), *job("pg-z", "z", 1, 1, running_on="n0")]
    ssn = session(objs)
    p = plugin(ssn)
    assert p.attrs["z"].deserved.is_empty()  # not even raised to the guarantee
    assert p.overused(ssn.queues["z"])


def test_capability_caps_deserved():
    objs = [*ten_nodes(), queue("a", capability={"cpu": "20"}), queue("b"), *job("pg-a", "a", 8, 10), *job("pg-b", "b", 8, 10)]
    p = plugin(session(objs))
    assert cores(p.attrs["a"].deserved) == 20
    assert cores(p.attrs["b"].deserved) == 80


# ----------------------------------------------------------------------------- realCapability
def test_seed_real_capability_table():
    objs = [*ten_nodes(),
            queue("a", guarantee={"cpu": "10"}, capability={"cpu": "60"}),
            queue("b", guarantee={"cpu": "10"}),
            queue("c", guarantee={"cpu": "10"}, capability={"cpu": "50"}),
            *job("pg-a", "a", 1), *job("pg-b", "b", 1), *job("pg-c", "c", 1)]
    p = plugin(session(objs))
    assert [cores(p.attrs[q].real_capability) for q in "abc"] == [60, 80, 50]
    # capability lists only cpu: memory is unlimited there, so realCapability keeps the total's memory
    assert p.attrs["a"].capability is not None and math.isinf(p.attrs["a"].capability.memory)
    assert p.attrs["a"].real_capability.memory == 10 * 1000 * GI
    assert p.attrs["b"].capability is None


def test_partial_capability_rules():
    objs = [*[node(f"n{i}", scalars={"nvidia.com/gpu": "2"}) for i in range(4)],
            queue("zero", capability={"cpu": "0", "memory": "10Gi"}),
            queue("gpu", capability={"nvidia.com/gpu": "3"}),
            *job("pg-z", "zero", 1), *job("pg-g", "gpu", 1)]
    p = plugin(session(objs))
    zero, gpu = p.attrs["zero"], p.attrs["gpu"]
    assert cores(zero.real_capability) == 40 and zero.real_capability.memory == 10 * GI  # cpu 0 = unlimited
    assert gpu.real_capability.scalars["nvidia.com/gpu"] == 3000  # milli-units
    assert cores(gpu.real_capability) == 40
    assert gpu.real_capability.scalars["pods"] == 440  # not listed by the capability: kept from the total


# ----------------------------------------------------------------------------- queue order, overused
def test_queue_order_priority_then_share():
    objs = [*ten_nodes(), queue("a"), queue("b"), queue("hi", priority=5),
            *job("pg-a", "a", 4, 10, running_on="n0"), *job("pg-b", "b", 4, 10), *job("pg-hi", "hi", 4, 10, running_on="n1")]
    ssn = session(objs)
    p = plugin(ssn)
    a, b, hi = (ssn.queues[q] for q in ("a", "b", "hi"))
    assert p.attrs["a"].share > p.attrs["b"].share == 0
    assert p.queue_order(b, a) < 0 < p.queue_order(a, b)
    assert p.queue_order(hi, b) < 0  # priority wins over the higher share
    assert p.queue_order(b, b) == 0
    assert ssn.queue_compare(b, a) < 0


def test_overused_when_allocated_reaches_deserved():
    # a: 40 deserved (request 40), all running -> overused; b: 60 deserved, 10 running -> not
    objs = [*ten_nodes(), queue("a"), queue("b"),
            *job("pg-a", "a", 4, 10, running_on="n0"), *job("pg-b", "b", 1, 10, running_on="n1"),
            *job("pg-b2", "b", 5, 10)]
    ssn = session(objs)
    p = plugin(ssn)
    assert cores(p.attrs["a"].deserved) == 40
    assert p.overused(ssn.queues["a"])
    assert not p.overused(ssn.queues["b"])
    assert ssn.overused(ssn.queues["a"])


# ----------------------------------------------------------------------------- allocatable, preemptive
def test_allocatable_within_deserved_and_explains_the_shortfall():
    ssn = session(weighted_example())
    p = plugin(ssn)
    qa = ssn.queues["a"]
    t0, t1, t2 = (task(ssn, f"ns/pg-a-{i}") for i in range(3))
    assert p.allocatable(qa, t0)
    ssn.do_allocate(t0, 0)
    ssn.do_allocate(t1, 1)
    assert not p.allocatable(qa, t2)  # 30 > 24.29
    assert ssn.explanations["ns/pg-a-2"] == ["queue a: cpu 30 > deserved 24.29 (short by 5.714)"]


def test_allocatable_checks_only_the_requested_dimensions():
    # the queue is over its memory deserved, but a cpu-only task still fits on cpu
    objs = [*ten_nodes(), queue("a"), queue("b"),
            podgroup("big", "a"), pod("big-0", "big", 1, memory="900Gi", node_name="n0"),
            podgroup("pg", "a"), pod("pg-0", "pg", 1, memory="0"), pod("pg-1", "pg", 1, memory="1Gi"),
            *job("pg-b", "b", 1, 10)]
    ssn = session(objs)
    p = plugin(ssn)
    a = p.attrs["a"]
    t_cpu, t_mem = task(ssn, "ns/pg-0"), task(ssn, "ns/pg-1")
    ssn.do_allocate(task(ssn, "ns/pg-b-0"), 1)
    a.allocated.memory = a.deserved.memory + GI  # pretend the queue went over on memory
    assert t_cpu.resreq.memory == 0
    assert p.allocatable(ssn.queues["a"], t_cpu)
    assert not p.allocatable(ssn.queues["a"], t_mem)


def test_closed_queue_is_neither_allocatable_nor_preemptive():
    """Volcano registers one `queueAllocatable` closure (Open check first) for both points (issue 14)."""
    objs = [*ten_nodes(), queue("a", state="Closed"), *job("pg-a", "a", 2, 1)]
    ssn = session(objs)
    p = plugin(ssn)
    t = task(ssn, "ns/pg-a-0")
    assert not p.allocatable(ssn.queues["a"], t)
    assert "queue a is Closed" in ssn.explanations["ns/pg-a-0"][0]
    assert not p.preemptive(ssn.queues["a"], t)
    assert "cannot reclaim" in ssn.explanations["ns/pg-a-0"][-1]


def test_preemptive_stops_at_deserved():
    ssn = session(weighted_example())
    p = plugin(ssn)
    qb = ssn.queues["b"]
    tasks = [task(ssn, f"ns/pg-b-{i}") for i in range(3)]
    for i, t in enumerate(tasks):
        assert p.preemptive(qb, t)
        ssn.do_pipeline(t, i)
    extra = TaskInfo(uid="x", name="x", namespace="ns", job=tasks[0].job,
                     resreq=Resource.from_natural({"cpu": 1, "pods": 1}), status=TaskStatus.PENDING)
    assert not p.preemptive(qb, extra)  # 15 + 1 > 15


# ----------------------------------------------------------------------------- reclaimable
def reclaim_objects() -> list[dict[str, Any]]:
    """12 cpu: c holds n0 (at its deserved 4), a holds n1+n2 (8, deserved 4), b wants 8 (deserved 4)."""
    return [node("n0", 4), node("n1", 4), node("n2", 4), queue("a"), queue("b"), queue("c"),
            podgroup("pg-c", "c", phase="Running"), *[pod(f"pg-c-{i}", "pg-c", 1, node_name="n0") for i in range(4)],
            podgroup("pg-a", "a", phase="Running"),
            *[pod(f"pg-a-{i}", "pg-a", 1, node_name="n1" if i < 4 else "n2") for i in range(8)],
            *job("pg-b", "b", 8, 1)]


def test_reclaimable_stops_at_deserved():
    ssn = session(reclaim_objects(), conf("reclaim", ["priority", "proportion"]))
    p = plugin(ssn)
    assert [cores(p.attrs[q].deserved) for q in "abc"] == [4, 4, 4]
    reclaimer = task(ssn, "ns/pg-b-0")
    cands = [task(ssn, f"ns/pg-a-{i}") for i in range(8)]
    victims, vote = p.reclaimable(reclaimer, cands)
    assert vote == ep.PERMIT
    # allocated 8 -> 7 -> 6 -> 5 -> 4: the fifth candidate finds the queue back at deserved
    assert [v.key for v in victims] == [f"ns/pg-a-{i}" for i in range(4)]
    assert cores(p.attrs["a"].allocated) == 8  # the working copy is a copy


def test_reclaimable_takes_nothing_from_a_queue_within_deserved():
    ssn = session(reclaim_objects(), conf("reclaim", ["priority", "proportion"]))
    p = plugin(ssn)
    victims, _ = p.reclaimable(task(ssn, "ns/pg-b-0"), [task(ssn, f"ns/pg-c-{i}") for i in range(4)])
    assert victims == []


def test_reclaim_through_the_engine_evicts_down_to_deserved_only():
    r = cycle(reclaim_objects(), conf("reclaim", ["priority", "proportion"]))
    # b reclaims 4 (its deserved) from a, never from c, which sits on n0, the first node visited
    assert len(r.evictions) == 4
    assert all(e.startswith("ns/pg-a-") for e in r.evictions)
    assert len(r.pipelined) == 4
    assert r.queues["a"]["allocated"]["cpu"] == 4
    assert r.queues["b"]["allocated"]["cpu"] == 4
    assert r.queues["c"]["allocated"]["cpu"] == 4


# ----------------------------------------------------------------------------- enqueue
def elastic_objects(pending_min: str) -> list[dict[str, Any]]:
    """q: capability 10 cpu; a running job with minResources 2 holds 6 (elastic 4); one pending job."""
    return [*ten_nodes(), queue("q", capability={"cpu": "10"}),
            podgroup("run", "q", phase="Running", min_resources={"cpu": "2"}),
            *[pod(f"run-{i}", "run", 1, node_name="n0") for i in range(6)],
            podgroup("new", "q", phase="Pending", min_resources={"cpu": pending_min}),
            pod("new-0", "new", 1)]


def test_enqueue_counts_elastic_resources_as_reclaimable_headroom():
    ssn = session(elastic_objects("8"), conf("enqueue", ["proportion"]))
    p = plugin(ssn)
    attr = p.attrs["q"]
    assert cores(attr.allocated) == 6 and cores(attr.elastic) == 4 and cores(attr.inqueue) == 0
    # 8 + 6 + 0 - 4 = 10 <= 10
    assert p.job_enqueueable(ssn.jobs["ns/new"]) == ep.PERMIT


def test_enqueue_rejects_beyond_real_capability_with_the_shortfall():
    ssn = session(elastic_objects("9"), conf("enqueue", ["proportion"]))
    p = plugin(ssn)
    assert p.job_enqueueable(ssn.jobs["ns/new"]) == ep.REJECT
    assert ssn.explanations["ns/new"] == ["queue q: cpu 11 > realCapability 10 (short by 1)"]


def test_enqueue_through_the_engine():
    r = cycle(elastic_objects("9"), conf("enqueue", ["proportion"]))
    assert r.podgroups["ns/new"] == "Pending"
    (ev,) = [e for e in r.events if e.object == "ns/new"]
    assert ev.message == "queue q: cpu 11 > realCapability 10 (short by 1)"
    r = cycle(elastic_objects("8"), conf("enqueue", ["proportion"]))
    assert r.podgroups["ns/new"] == "Inqueue"
    assert r.queues["q"]["inqueue"] == {"cpu": 8}


def test_job_enqueued_reserves_min_resources_for_later_jobs():
    objs = [*ten_nodes(), queue("q", capability={"cpu": "10"}),
            *job("j1", "q", 1, 1, phase="Pending", min_resources={"cpu": "6"}, created="2026-01-01T00:00:00Z"),
            *job("j2", "q", 1, 1, phase="Pending", min_resources={"cpu": "6"}, created="2026-01-02T00:00:00Z")]
    r = cycle(objs, conf("enqueue", ["proportion"]))
    assert r.podgroups == {"ns/j1": "Inqueue", "ns/j2": "Pending"}
    (ev,) = [e for e in r.events if e.object == "ns/j2"]
    assert ev.message == "queue q: cpu 12 > realCapability 10 (short by 2)"


def test_job_enqueued_deducts_gated_pods_clamped_at_zero():
    objs = [*ten_nodes(), queue("q"),
            podgroup("pg", "q", phase="Pending", min_resources={"cpu": "2", "nvidia.com/gpu": "1"}),
            pod("pg-0", "pg", 1), pod("pg-1", "pg", 1, gated=True), pod("pg-2", "pg", 1, gated=True)]
    ssn = session(objs, conf("enqueue", ["proportion"]))
    p = plugin(ssn)
    p.job_enqueued(ssn.jobs["ns/pg"])
    # cpu 2 - 2 gated = 0; memory is not in minResources and must not go negative; neither may pods
    assert p.attrs["q"].inqueue == Resource(0, 0, {"nvidia.com/gpu": 1000})


def test_enqueue_checks_only_min_resources_dimensions_and_skips_pods():
    objs = [node("n0", 10), queue("q", capability={"cpu": "1", "memory": "1Gi"}),
            *job("j", "q", 1, 1, phase="Pending", min_resources={"nvidia.com/gpu": "0", "pods": "500"})]
    ssn = session(objs, conf("enqueue", ["proportion"]))
    assert plugin(ssn).job_enqueueable(ssn.jobs["ns/j"]) == ep.PERMIT


def test_enqueue_closed_queue_and_missing_min_resources():
    objs = [*ten_nodes(), queue("q", state="Closed"),
            *job("with", "q", 1, 1, phase="Pending", min_resources={"cpu": "1"}),
            *job("without", "q", 1, 1, phase="Pending")]
    ssn = session(objs, conf("enqueue", ["proportion"]))
    p = plugin(ssn)
    assert p.job_enqueueable(ssn.jobs["ns/with"]) == ep.REJECT
    assert "queue q is Closed" in ssn.explanations["ns/with"][0]
    # the action admits a PodGroup without minResources before asking any plugin (Keep, §5.1)
    r = cycle(objs, conf("enqueue", ["proportion"]))
    assert r.podgroups == {"ns/with": "Pending", "ns/without": "Inqueue"}


def test_inqueue_at_open():
    objs = [*ten_nodes(), queue("q"),
            # Inqueue, holds 1 of its 3 cpu minimum: 2 reserved
            podgroup("iq", "q", min_member=1, min_resources={"cpu": "3", "memory": "1Gi"}),
            pod("iq-0", "iq", 1, node_name="n0"), pod("iq-1", "iq", 1),
            # Running with minMember reached: nothing left to reserve beyond what it holds
            podgroup("run", "q", phase="Running", min_member=2, min_resources={"cpu": "4"}),
            pod("run-0", "run", 1, node_name="n1"), pod("run-1", "run", 1, node_name="n1"),
            # Running below minMember: not counted
            podgroup("short", "q", phase="Running", min_member=3, min_resources={"cpu": "5"}),
            pod("short-0", "short", 1, node_name="n2")]
    attr = plugin(session(objs)).attrs["q"]
    assert cores(attr.inqueue) == 2 + 2
    assert attr.inqueue.memory == 0  # already covered by the allocated pod
    assert cores(attr.allocated) == 4 and cores(attr.request) == 5


# ----------------------------------------------------------------------------- pre-predicate and simulation
def test_pre_predicate_copies_state_and_simulation_leaves_real_state_untouched():
    ssn = session(reclaim_objects(), conf("preempt", ["priority", "proportion"]))
    p = plugin(ssn)
    t = task(ssn, "ns/pg-b-0")
    before = {q: (a.allocated.clone(), a.share) for q, a in p.attrs.items()}
    ssn.simulation_state_needed = True  # as with enableTopologyAwarePreemption
    assert p.pre_predicate(t) is None
    state = ssn.cycle_states[t.uid]
    st = state[STATE_KEY]
    assert isinstance(st, ProportionState)
    assert st.attrs["a"] is not p.attrs["a"] and st.attrs["a"].allocated is not p.attrs["a"].allocated

    victim = task(ssn, "ns/pg-a-0")
    p.simulate_remove_task(state, victim, 1)
    assert cores(st.attrs["a"].allocated) == 7
    assert st.attrs["a"].share == pytest.approx(7 / 4)
    p.simulate_add_task(state, t, 1)
    assert cores(st.attrs["b"].allocated) == 1
    for q, (alloc, share) in before.items():
        assert p.attrs[q].allocated == alloc and p.attrs[q].share == share

    clone = st.clone()
    clone.attrs["b"].allocated.add(Resource.from_natural({"cpu": 100}))
    assert cores(st.attrs["b"].allocated) == 1  # clone() is deep


def test_simulate_allocatable_reads_the_copy_and_needs_it():
    ssn = session(reclaim_objects(), conf("preempt", ["priority", "proportion"]))
    p = plugin(ssn)
    qb = ssn.queues["b"]
    t = task(ssn, "ns/pg-b-0")
    assert not p.simulate_allocatable(qb, t, {})  # no pre-predicate, no copy: "no" (Keep, §5.5)
    ssn.simulation_state_needed = True  # as with enableTopologyAwarePreemption
    p.pre_predicate(t)
    state = ssn.cycle_states[t.uid]
    assert p.simulate_allocatable(qb, t, state)
    for i in range(4):
        p.simulate_add_task(state, task(ssn, f"ns/pg-b-{i + 1}"), 0)
    assert not p.simulate_allocatable(qb, t, state)  # 4 + 1 > 4 in the copy
    assert p.allocatable(qb, t)  # the real state still has room


def test_event_handlers_keep_allocated_and_share_current():
    ssn = session(weighted_example())
    p = plugin(ssn)
    t = task(ssn, "ns/pg-b-0")
    ssn.do_allocate(t, 0)
    assert cores(p.attrs["b"].allocated) == 5
    assert p.attrs["b"].share == pytest.approx(max(5 / 15, GI / (3 * GI), 1 / 3))
    ssn.undo_allocate(t)
    assert p.attrs["b"].allocated.is_empty() and p.attrs["b"].share == 0


# ----------------------------------------------------------------------------- through the engine
def test_allocate_fills_each_queue_up_to_its_deserved():
    r = cycle(weighted_example(), conf("allocate", ["priority", "gang"], ["proportion"]))
    per_queue = {q: sum(1 for k in r.binds if k.startswith(f"ns/pg-{q}-")) for q in "abc"}
    assert per_queue == {"a": 2, "b": 3, "c": 6}  # 20 <= 24.29, 15 <= 15, 60 <= 60.71
    assert r.queues["a"]["allocated"]["cpu"] == 20
    assert r.queues["b"]["share"] == pytest.approx(1.0)
    (ev,) = [e for e in r.events if e.object == "ns/pg-a"]
    assert "pg-a-2: queue a: cpu 30 > deserved 24.29 (short by 5.714)" in ev.message


def test_queue_report_shape_and_units():
    objs = [*[node(f"n{i}", scalars={"nvidia.com/gpu": "2"}) for i in range(2)],
            queue("g", capability={"nvidia.com/gpu": "3"}, guarantee={"cpu": "1"}),
            podgroup("pg", "g"), pod("pg-0", "pg", 1, scalars={"nvidia.com/gpu": "1"})]
    r = cycle(objs, conf("enqueue", ["proportion"]))
    rep = r.queues["g"]
    assert set(rep) == {"deserved", "allocated", "request", "inqueue", "elastic", "capability", "realCapability",
                        "guarantee", "share", "parent", "state"}
    assert rep["capability"] == {"cpu": "unlimited", "memory": "unlimited", "nvidia.com/gpu": 3}
    assert rep["realCapability"]["nvidia.com/gpu"] == 3 and rep["realCapability"]["cpu"] == 20
    assert rep["request"] == {"cpu": 1, "memory": GI, "nvidia.com/gpu": 1, "pods": 1}
    assert rep["deserved"] == rep["request"]
    assert rep["guarantee"] == {"cpu": 1}
    assert rep["allocated"] == {} and rep["share"] == 0
    assert rep["state"] == "Open" and rep["parent"] == "root"
    assert "default" not in r.queues  # no jobs there: not tracked


def topology_preempt_conf(enable_predicate: bool = True) -> SchedulerConf:
    return parse_conf(f"""
actions: "preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: proportion
    enablePredicate: {str(enable_predicate).lower()}
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: true
""")


def topology_preempt_objects() -> list[dict[str, Any]]:
    """q1 (weight 1) deserves 2 of 8 cpu and holds them; n0 still has 2 cpu free for q1's new job."""
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100}
    lo = podgroup("lo", "q1", phase="Running", min_member=0)  # so that gang lets both tasks go
    hi = podgroup("hi", "q1", min_member=2)
    hi["spec"]["priorityClassName"] = "high"
    return [node("n0", 4), node("n1", 4), high, queue("q1", 1), queue("q2", 3),
            lo, pod("lo-0", "lo", 1, node_name="n0"), pod("lo-1", "lo", 1, node_name="n0"),
            hi, pod("hi-0", "hi", 1), pod("hi-1", "hi", 1),
            *job("other", "q2", 4, 1, running_on="n1", phase="Running"), *job("more", "q2", 4, 1)]


def test_topology_aware_preemption_uses_the_simulated_queue_state():
    ssn = session(topology_preempt_objects(), topology_preempt_conf())
    assert cores(plugin(ssn).attrs["q1"].deserved) == 2
    r = cycle(topology_preempt_objects(), topology_preempt_conf())
    # room on n0, but q1 is at its deserved: each preemptor needs one victim in the simulated queue state
    assert r.evictions == ["ns/lo-0", "ns/lo-1"]
    assert sorted(r.pipelined) == ["ns/hi-0", "ns/hi-1"]


def test_without_pre_predicate_the_simulation_has_no_state_and_answers_no():
    r = cycle(topology_preempt_objects(), topology_preempt_conf(enable_predicate=False))
    assert r.evictions == [] and r.pipelined == {}
