"""The capacity plugin in hierarchical mode: the tree, its checks, the orders and every extension point."""

from __future__ import annotations

from typing import Any

import pytest

from apportion.framework import extension as ep
from apportion.framework.session import Session
from apportion.plugins.capacity import STATE_KEY, CapacityPlugin
from apportion.resources import UNLIMITED

from k8s import conf, cycle, node, pod, podgroup, queue, session

GI = 2**30


def hier_conf(actions: str = "enqueue, allocate, reclaim", **args: Any) -> Any:
    entry: dict[str, Any] = {"name": "capacity", "enableHierarchy": True}
    if args:
        entry["arguments"] = dict(args)
    return conf(actions, ["priority", "gang"], [entry])


def plugin_of(ssn: Session) -> CapacityPlugin:
    return next(p for _, p in ssn.plugins if isinstance(p, CapacityPlugin))


def task(ssn: Session, key: str) -> Any:
    ns, name = key.split("/")
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name and t.namespace == ns)


def seed_queues(**overrides: dict) -> list[dict]:
    """The seed's §7 tree: 100 CPU / 400Gi; root -> team-a (training, inference), team-b (batch, interactive)."""
    spec = {
        "team-a": dict(parent="root", deserved={"cpu": "60", "memory": "240Gi"},
                       capability={"cpu": "70", "memory": "280Gi"}, guarantee={"cpu": "20", "memory": "80Gi"}),
        "team-b": dict(parent="root", deserved={"cpu": "40", "memory": "160Gi"},
                       capability={"cpu": "50", "memory": "200Gi"}, guarantee={"cpu": "20", "memory": "80Gi"}),
        "training": dict(parent="team-a", deserved={"cpu": "40", "memory": "160Gi"},
                         capability={"cpu": "50", "memory": "200Gi"}, guarantee={"cpu": "10", "memory": "40Gi"}),
        "inference": dict(parent="team-a", deserved={"cpu": "20", "memory": "80Gi"},
                          capability={"cpu": "30", "memory": "120Gi"}, guarantee={"cpu": "10", "memory": "40Gi"}),
        "batch": dict(parent="team-b", deserved={"cpu": "30", "memory": "120Gi"},
                      capability={"cpu": "40", "memory": "160Gi"}, guarantee={"cpu": "15", "memory": "60Gi"}),
        "interactive": dict(parent="team-b", deserved={"cpu": "10", "memory": "40Gi"},
                            capability={"cpu": "20", "memory": "80Gi"}, guarantee={"cpu": "5", "memory": "20Gi"}),
    }
    for k, v in overrides.items():
        spec[k] = v
    return [queue("root")] + [queue(n, **s) for n, s in spec.items()]


def seed_nodes() -> list[dict]:
    return [node(f"n{i}", cpu=10, memory="40Gi") for i in range(1, 11)]


def running(name: str, q: str, sizes: list[int], start: int = 1) -> list[dict]:
    """A Running gang with one pod per size (cpu cores, 4Gi memory per core), on nodes n<start>..."""
    objs = [podgroup(name, q, phase="Running")]
    objs += [pod(f"{name}-{i}", name, cpu=c, memory=f"{4 * c}Gi", node_name=f"n{start + i}")
             for i, c in enumerate(sizes)]
    return objs


def seed_world() -> list[dict]:
    """75 CPU in use: training 30, inference 15, batch 25, interactive 5; a 10-CPU task pending in training."""
    objs = seed_nodes() + seed_queues()
    objs += running("train-1", "training", [10, 10, 10], start=1)
    objs += running("serve-1", "inference", [10, 5], start=4)
    objs += running("etl-1", "batch", [10, 10, 5], start=6)
    objs += running("nb-1", "interactive", [5], start=9)
    objs += [podgroup("train-2", "training"), pod("train-2-0", "train-2", cpu=10, memory="40Gi")]
    objs += [podgroup("etl-2", "batch"), pod("etl-2-0", "etl-2", cpu=1, memory="1Gi")]
    return objs


# ============================================================================ the tree
def test_tree_real_capability_and_propagated_accounting() -> None:
    ssn = session(seed_world(), hier_conf())
    p = plugin_of(ssn)
    a = p.attrs
    assert p.hierarchical and p.blocked is None
    assert a["training"].ancestors == ["root", "team-a"] and a["team-a"].children == ["inference", "training"]
    assert a["default"].parent == "root"
    # README: team-a = min(70, (100 - 40) + 20) = 70; training = min(50, (70 - 20) + 10) = 50
    assert a["team-a"].real_capability.cpu == 70_000  # type: ignore[union-attr]
    assert a["team-a"].real_capability.memory == 280 * GI  # type: ignore[union-attr]
    assert a["training"].real_capability.cpu == 50_000  # type: ignore[union-attr]
    assert a["batch"].real_capability.cpu == 40_000  # type: ignore[union-attr]  # min(40, (50-20)+15=45)
    # root = cluster total (the seeds' rule); its guarantee is the sum of its children's
    assert a["root"].real_capability.cpu == 100_000 and a["root"].deserved.cpu == 100_000  # type: ignore[union-attr]
    assert a["root"].guarantee.cpu == 40_000
    # deltas reach every ancestor
    assert a["team-a"].allocated.cpu == 45_000 and a["team-b"].allocated.cpu == 30_000
    assert a["root"].allocated.cpu == 75_000
    assert a["team-a"].request.cpu == 55_000 and a["root"].request.cpu == 86_000
    assert a["team-a"].share == pytest.approx(0.75) and a["team-b"].share == pytest.approx(0.75)


def test_seed_ordering_example_batch_before_training() -> None:
    """§7.3: after training takes 10 CPU, team-a is at 0.917 and team-b at 0.75, so batch goes first."""
    ssn = session(seed_world(), hier_conf())
    p = plugin_of(ssn)
    q = ssn.queues
    p.on_allocate(task(ssn, "ns/train-2-0"))
    assert p.attrs["training"].share == pytest.approx(1.0)
    assert p.attrs["team-a"].share == pytest.approx(55 / 60)  # the seed's 0.917 (deviation: ancestors refreshed)
    assert p.attrs["root"].allocated.cpu == 85_000
    assert p.hierarchical_queue_order(q["batch"], q["training"]) < 0
    assert p.hierarchical_queue_order(q["training"], q["batch"]) > 0
    # siblings compare themselves: inference (0.75) before training (1.0)
    assert p.hierarchical_queue_order(q["inference"], q["training"]) < 0
    # a leaf before a non-leaf, whatever the shares
    assert p.hierarchical_queue_order(q["training"], q["team-b"]) < 0
    # two non-leaves compare their own shares
    assert p.hierarchical_queue_order(q["team-b"], q["team-a"]) < 0


def test_end_to_end_seed_allocation() -> None:
    objs = [o for o in seed_world() if "etl-2" not in o["metadata"]["name"]]
    res = cycle(objs, hier_conf("enqueue, allocate"))
    assert res.binds == {"ns/train-2-0": "n10"}
    assert res.queues["team-a"]["share"] == pytest.approx(55 / 60)
    assert res.queues["root"]["allocated"]["cpu"] == 85
    assert res.queues["training"]["parent"] == "team-a" and res.queues["root"]["parent"] == ""


def test_victim_queue_order_by_common_ancestor_depth() -> None:
    ssn = session(seed_world(), hier_conf())
    p = plugin_of(ssn)
    q = ssn.queues
    # for a preemptor in training: inference shares team-a (deeper) -> goes before batch
    assert p.victim_queue_order(q["inference"], q["batch"], q["training"]) < 0
    assert p.victim_queue_order(q["batch"], q["inference"], q["training"]) > 0
    assert p.victim_queue_order(q["batch"], q["interactive"], q["training"]) == 0


def test_allocatable_checks_every_level_and_names_it() -> None:
    objs = seed_world()
    objs += [podgroup("big", "inference"), pod("big-0", "big", cpu=14, memory="1Gi")]
    ssn = session(objs, hier_conf())
    p = plugin_of(ssn)
    q = ssn.queues
    assert p.allocatable(q["training"], task(ssn, "ns/train-2-0"))
    # inference: 15 + 14 = 29 <= 30 at the leaf, but team-a: 45 + 14 = 59 <= 70 -> fine; make team-a fail
    p.on_allocate(task(ssn, "ns/train-2-0"))  # team-a 55
    t = task(ssn, "ns/big-0")
    assert p.allocatable(q["inference"], t)  # 55 + 14 = 69 <= 70
    p.attrs["team-a"].allocated.cpu += 2_000  # as if 2 more CPU ran in team-a
    assert not p.allocatable(q["inference"], t)
    assert any("queue team-a (parent of inference): cpu 71 > realCapability 70 (short by 1)" in m
               for m in ssn.explanations[t.key])
    # a non-leaf queue never allocates
    assert not p.allocatable(q["team-a"], t)
    assert any("not a leaf queue" in m for m in ssn.explanations[t.key])


def test_enqueueable_on_every_level_and_inqueue_on_ancestors() -> None:
    objs = seed_world()
    objs += [podgroup("pg", "interactive", phase="Pending", min_resources={"cpu": "10"}),
             pod("pg-0", "pg", cpu=10, memory="")]
    objs += [podgroup("huge", "interactive", phase="Pending", min_resources={"cpu": "16"}),
             pod("huge-0", "huge", cpu=16, memory="")]
    ssn = session(objs, hier_conf("enqueue"))
    p = plugin_of(ssn)
    assert p.job_enqueueable(ssn.jobs["ns/pg"]) == ep.PERMIT  # 5 + 10 <= 20; team-b 30 + 10 <= 50
    p.job_enqueued(ssn.jobs["ns/pg"])
    for name in ("interactive", "team-b", "root"):
        assert p.attrs[name].inqueue.cpu == 10_000
    assert p.attrs["team-a"].inqueue.is_empty()
    assert p.job_enqueueable(ssn.jobs["ns/huge"]) == ep.REJECT  # 5 + 10 + 16 > 20 at the leaf
    assert "queue interactive: queue resource quota insufficient" in ssn.explanations["ns/huge"][0]


def test_enqueue_rejected_at_an_ancestor() -> None:
    objs = seed_world()
    objs += [podgroup("pg", "interactive", phase="Pending", min_resources={"cpu": "12"}),
             pod("pg-0", "pg", cpu=12, memory="")]
    # team-b capability 40 instead of 50: interactive (leaf) 5 + 12 <= 20, team-b 30 + 12 > 40
    objs = [o for o in objs if not (o["kind"] == "Queue" and o["metadata"]["name"] == "team-b")]
    objs.append(queue("team-b", parent="root", deserved={"cpu": "40"}, capability={"cpu": "40"},
                      guarantee={"cpu": "20"}))
    # the running gangs have no minResources, so all they hold is elastic and would be deducted: turn the
    # design doc's ElasticEnable off to see the ancestor's limit bite
    assert cycle(objs, hier_conf("enqueue")).podgroups["ns/pg"] == "Inqueue"
    res = cycle(objs, hier_conf("enqueue", **{"capacity.ElasticEnable": False}))
    assert res.podgroups["ns/pg"] == "Pending"
    ev = next(e for e in res.events if e.object == "ns/pg")
    assert "queue team-b (parent of interactive)" in ev.message and "short by 2" in ev.message


# ============================================================================ broken trees
def test_cycle_detection_names_the_cycle_and_blocks_everything() -> None:
    objs = seed_nodes() + [queue("root"), queue("a", parent="b"), queue("b", parent="c"), queue("c", parent="a"),
                           queue("ok", parent="root")]
    objs += [podgroup("j", "ok", phase="Pending", min_resources={"cpu": "1"}), pod("j-0", "j", cpu=1)]
    ssn = session(objs, hier_conf())
    p = plugin_of(ssn)
    assert p.blocked is not None and "cycle detected: a -> b -> c -> a" in p.blocked
    assert ssn.queue_decisions_blocked == p.blocked
    job = ssn.jobs["ns/j"]
    t = next(iter(job.tasks.values()))
    assert p.job_enqueueable(job) == ep.REJECT
    assert not p.allocatable(ssn.queues["ok"], t)
    assert not p.preemptive(ssn.queues["ok"], t)
    assert p.reclaimable(t, []) == ([], ep.REJECT)
    assert p.queue_report(ssn) is None
    assert not ssn.has_fn(ep.QUEUE_ORDER)
    res = cycle(objs, hier_conf())
    assert res.podgroups["ns/j"] == "Pending"
    assert any(e.reason == "QueueDecisionsBlocked" and "a -> b -> c -> a" in e.message for e in res.events)
    assert any(e.object == "ns/j" and "cycle detected" in e.message for e in res.events)


def test_unknown_parent_blocks() -> None:
    objs = seed_nodes() + [queue("root"), queue("x", parent="nowhere")]
    p = plugin_of(session(objs, hier_conf()))
    assert p.blocked is not None and "queue x has invalid parent queue nowhere" in p.blocked


def test_job_in_a_parent_queue_blocks_the_session() -> None:
    objs = seed_world() + [podgroup("bad", "team-a"), pod("bad-0", "bad", cpu=1)]
    res = cycle(objs, hier_conf("enqueue, allocate"))
    assert res.binds == {}  # the whole session's queue decisions are refused, not just the offender's
    blocked = next(e for e in res.events if e.reason == "QueueDecisionsBlocked")
    assert "ns/bad (queue team-a)" in blocked.message
    assert any(e.object == "ns/bad" and "not a leaf queue" in e.message for e in res.events)
    # the report still shows the tree (apportion finishes the accounting)
    assert res.queues["team-a"]["allocated"]["cpu"] == 45


# ============================================================================ inheritance and warnings
def test_capability_inheritance_and_warnings() -> None:
    objs = [node("n1", cpu=100, memory="400Gi", scalars={"nvidia.com/gpu": "8"}), queue("root"),
            queue("p", parent="root", capability={"cpu": "40", "nvidia.com/gpu": "4"}, deserved={"cpu": "30"},
                  guarantee={"cpu": "10"}),
            queue("c1", parent="p", capability={"memory": "10Gi"}, deserved={"cpu": "20"}, guarantee={"cpu": "8"}),
            queue("c2", parent="p", capability={"cpu": "60"}, deserved={"cpu": "20"}, guarantee={"cpu": "8"})]
    ssn = session(objs, hier_conf())
    p = plugin_of(ssn)
    c1, c2 = p.attrs["c1"], p.attrs["c2"]
    assert c1.capability is not None and c1.capability.cpu == 40_000  # inherited
    assert c1.capability.get("nvidia.com/gpu") == 4_000  # scalar inherited
    assert c1.capability.memory == 10 * GI  # its own
    assert {"cpu", "nvidia.com/gpu"} <= c1.inherited and "memory" not in c1.inherited
    # p: memory inherited from root = total; realCapability = min(cap, (100-10)+10)
    assert p.attrs["p"].real_capability.cpu == 40_000  # type: ignore[union-attr]
    # c1: min(40, (40 - 16) + 8 = 32) = 32
    assert c1.real_capability.cpu == 32_000  # type: ignore[union-attr]
    assert c2.real_capability.cpu == 32_000  # type: ignore[union-attr]  # capability 60 > parent's, limited
    w = "\n".join(ssn.warnings)
    assert "queue c2: capability exceeds parent p's on cpu 60 > 40" in w
    assert "queue p: the children's deserved sum to more than its deserved on cpu 40 > 30" in w
    assert "queue p: the children's guarantees sum to more than its guarantee on cpu 16 > 10" in w
    assert p.blocked is None  # warnings only, never failures


def test_root_capability_unlimited_argument() -> None:
    ssn = session(seed_world(), hier_conf(**{"capacity.rootCapability": "unlimited"}))
    p = plugin_of(ssn)
    root = p.attrs["root"]
    assert root.real_capability is not None and root.real_capability.cpu == UNLIMITED
    assert root.deserved.cpu == 100_000  # Σ children's deserved (60 + 40 + default 0)
    assert p.attrs["default"].real_capability.cpu == UNLIMITED  # type: ignore[union-attr]
    assert p.attrs["team-a"].real_capability.cpu == 70_000  # type: ignore[union-attr]
    rep = p.queue_report(ssn)
    assert rep is not None and rep["root"].real_capability is not None
    assert rep["root"].real_capability.cpu == UNLIMITED
    assert rep["root"].to_json()["realCapability"]["cpu"] == "unlimited"  # the cycle output's view


def test_root_spec_ignored_with_a_warning_in_cluster_mode() -> None:
    objs = seed_nodes() + [queue("root", capability={"cpu": "10"})] + seed_queues()[1:]
    ssn = session(objs, hier_conf())
    assert plugin_of(ssn).attrs["root"].real_capability.cpu == 100_000  # type: ignore[union-attr]
    assert any("root's spec.capability" in w for w in ssn.warnings)


# ============================================================================ reclaim in the tree
def test_reclaim_ancestor_level() -> None:
    """Victim side of ancestorReclaimLevel: batch is over its deserved, but team-b is not over its own, so
    with level 1 the victim in batch is spared for a reclaimer in training (team-a)."""
    objs = seed_nodes() + seed_queues(
        batch=dict(parent="team-b", deserved={"cpu": "5"}, capability={"cpu": "40"}, guarantee={"cpu": "0"}),
        interactive=dict(parent="team-b", deserved={"cpu": "30"}, capability={"cpu": "30"}))
    objs += running("etl-1", "batch", [10, 10], start=1)
    objs += [podgroup("t", "training"), pod("t-0", "t", cpu=10, memory="40Gi")]
    cands = ["ns/etl-1-0", "ns/etl-1-1"]
    ssn0 = session(objs, hier_conf())
    v0, _ = plugin_of(ssn0).reclaimable(task(ssn0, "ns/t-0"), [task(ssn0, k) for k in cands])
    assert len(v0) == 2  # leaf check only: batch 20 > 5, then 10 > 5
    ssn1 = session(objs, hier_conf(ancestorReclaimLevel=1))
    v1, _ = plugin_of(ssn1).reclaimable(task(ssn1, "ns/t-0"), [task(ssn1, k) for k in cands])
    assert v1 == []  # team-b: 20 <= deserved 40
    assert any("team-b" in m for m in ssn1.explanations["ns/t-0"])


def test_preemptive_via_an_ancestor_within_level() -> None:
    objs = seed_nodes() + seed_queues(
        training=dict(parent="team-a", deserved={"cpu": "5"}, capability={"cpu": "50"}))
    objs += running("train-1", "training", [10], start=1)
    objs += [podgroup("t", "training"), pod("t-0", "t", cpu=5, memory="")]
    ssn0 = session(objs, hier_conf())
    t = task(ssn0, "ns/t-0")
    assert not plugin_of(ssn0).preemptive(ssn0.queues["training"], t)  # 15 > 5 at the leaf
    ssn1 = session(objs, hier_conf(ancestorReclaimLevel=1))
    assert plugin_of(ssn1).preemptive(ssn1.queues["training"], task(ssn1, "ns/t-0"))  # team-a 15 <= 60


def test_simulate_points_propagate_to_ancestors() -> None:
    ssn = session(seed_world(), hier_conf())
    p = plugin_of(ssn)
    t = task(ssn, "ns/train-2-0")
    ssn.simulation_state_needed = True  # as with enableTopologyAwarePreemption
    p.pre_predicate(t)
    state = ssn.cycle_states[t.uid]
    p.simulate_add_task(state, t, 0)
    cs = state[STATE_KEY]
    assert cs.attrs["training"].allocated.cpu == 40_000
    assert cs.attrs["team-a"].allocated.cpu == 55_000 and cs.attrs["root"].allocated.cpu == 85_000
    assert p.attrs["team-a"].allocated.cpu == 45_000
    victim = task(ssn, "ns/etl-1-0")
    p.simulate_remove_task(state, victim, 0)
    assert cs.attrs["team-b"].allocated.cpu == 20_000 and cs.attrs["root"].allocated.cpu == 75_000
    # simulated allocatable walks leaf to root on the snapshot: training is full now (40 + 10 <= 50 ok,
    # team-a 55 + 10 <= 70 ok), but 3 more tasks would break training's 50
    assert p.simulate_allocatable(ssn.queues["training"], t, state)
    p.simulate_add_task(state, t, 0)
    assert not p.simulate_allocatable(ssn.queues["training"], t, state)  # training 50 + 10 > 50
    assert not p.simulate_allocatable(ssn.queues["team-a"], t, state)  # not a leaf
