"""Property tests of the capacity plugin over random queue trees (and random flat queue sets)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.framework.session import Session
from apportion.plugins.capacity import STATE_KEY, CapacityPlugin
from apportion.resources import CPU, MEMORY, UNLIMITED, Resource

from k8s import conf, node, pod, podgroup, queue, session

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def plugin_of(ssn: Session) -> CapacityPlugin:
    return next(p for _, p in ssn.plugins if isinstance(p, CapacityPlugin))


@st.composite
def worlds(draw: Any) -> dict[str, Any]:
    """A cluster of one big node, up to 7 queues in a random tree under root, running and pending tasks
    in the leaves."""
    n = draw(st.integers(1, 7))
    parents = [draw(st.sampled_from(["root"] + [f"q{j}" for j in range(i)])) for i in range(n)]
    cpu_total = draw(st.integers(8, 120))
    mem_total = draw(st.integers(8, 120))
    queues = []
    for i in range(n):
        spec: dict[str, Any] = {"parent": parents[i]}
        cap = {}
        if draw(st.booleans()):
            cap["cpu"] = str(draw(st.integers(1, 150)))
        if draw(st.booleans()):
            cap["memory"] = f"{draw(st.integers(1, 150))}Gi"
        if cap:
            spec["capability"] = cap
        g = draw(st.integers(0, 30))
        if g:
            spec["guarantee"] = {"cpu": str(g), "memory": f"{draw(st.integers(0, 30))}Gi"}
        d = draw(st.integers(0, 60))
        if d:
            spec["deserved"] = {"cpu": str(d)}
        queues.append(queue(f"q{i}", **spec))
    leaves = [f"q{i}" for i in range(n) if f"q{i}" not in parents] or ["default"]
    objs: list[dict] = [node("n1", cpu=cpu_total * 10, memory=f"{mem_total * 10}Gi", pods=1000), queue("root")]
    objs += queues
    tasks = draw(st.lists(st.tuples(st.sampled_from(leaves), st.integers(1, 8), st.integers(0, 8), st.booleans()),
                          min_size=1, max_size=12))
    for k, (leaf, c, m, run) in enumerate(tasks):
        objs.append(podgroup(f"j{k}", leaf, phase="Running" if run else "Inqueue"))
        objs.append(pod(f"j{k}-0", f"j{k}", cpu=c, memory=f"{m}Gi" if m else "", node_name="n1" if run else ""))
    return {"objs": objs, "n": n, "level": draw(st.integers(0, 2)),
            "root_mode": draw(st.sampled_from(["cluster", "unlimited"]))}


def open_tree(w: dict[str, Any], hierarchical: bool = True) -> tuple[Session, CapacityPlugin]:
    args = {"ancestorReclaimLevel": w["level"], "capacity.rootCapability": w["root_mode"]}
    entry = {"name": "capacity", "enableHierarchy": hierarchical, "arguments": args}
    ssn = session(w["objs"], conf("enqueue, allocate, reclaim", ["gang"], [entry]))
    return ssn, plugin_of(ssn)


def dims(r: Resource) -> list[str]:
    return [CPU, MEMORY, *r.scalars]


@SETTINGS
@given(worlds())
def test_real_capability_never_exceeds_capability(w: dict[str, Any]) -> None:
    for hierarchical in (True, False):
        ssn, p = open_tree(w, hierarchical)
        for name, a in p.attrs.items():
            if name == "root" or a.capability is None:
                continue
            assert a.real_capability is not None
            for n in dims(a.capability):
                cap = a.capability.get(n)
                if cap != UNLIMITED:
                    assert a.real_capability.get(n) <= cap, (name, n)


@SETTINGS
@given(worlds())
def test_child_within_parent_when_guarantees_fit(w: dict[str, Any]) -> None:
    ssn, p = open_tree(w)
    for parent in p.attrs.values():
        if not parent.children:
            continue
        assert parent.real_capability is not None
        sum_g = Resource()
        for c in parent.children:
            sum_g.add(p.attrs[c].guarantee)
        if not all(sum_g.get(n) <= parent.real_capability.get(n) for n in dims(sum_g)):
            continue  # the children's guarantees do not fit: the plugin warns instead
        for c in parent.children:
            child_real = p.attrs[c].real_capability
            assert child_real is not None
            for n in dims(child_real):
                assert child_real.get(n) <= parent.real_capability.get(n), (c, parent.name, n)


@SETTINGS
@given(worlds(), st.lists(st.integers(0, 50), max_size=25))
def test_parent_allocated_is_the_sum_of_its_subtree_after_simulation(w: dict[str, Any], picks: list[int]) -> None:
    ssn, p = open_tree(w)
    tasks = sorted((t for j in ssn.jobs.values() for t in j.tasks.values()), key=lambda t: t.uid)
    pending = [t for t in tasks if t.status.value == "Pending"]
    assert pending or tasks
    anchor = (pending or tasks)[0]
    ssn.simulation_state_needed = True  # as with enableTopologyAwarePreemption
    p.pre_predicate(anchor)
    state = ssn.cycle_states[anchor.uid]
    inside = {t.uid for t in tasks if t.status.value == "Running"}
    for k in picks:
        t = tasks[k % len(tasks)]
        if t.uid in inside:
            p.simulate_remove_task(state, t, 0)
            inside.discard(t.uid)
        else:
            p.simulate_add_task(state, t, 0)
            inside.add(t.uid)
    attrs = state[STATE_KEY].attrs
    for a in attrs.values():
        if a.children:
            total = Resource()
            for c in a.children:
                total.add(attrs[c].allocated)
            assert abs(total.cpu - a.allocated.cpu) < 1e-6 and abs(total.memory - a.allocated.memory) < 1e-6
    # and the leaves hold exactly the tasks "inside"
    by_queue: dict[str, float] = {}
    for t in tasks:
        if t.uid in inside:
            q = ssn.jobs[t.job].queue
            by_queue[q] = by_queue.get(q, 0.0) + t.resreq.cpu
    for name, a in attrs.items():
        if not a.children:
            assert abs(a.allocated.cpu - by_queue.get(name, 0.0)) < 1e-6


@SETTINGS
@given(worlds(), st.booleans())
def test_reclaim_never_takes_a_queue_below_its_guarantee(w: dict[str, Any], hierarchical: bool) -> None:
    ssn, p = open_tree(w, hierarchical)
    tasks = sorted((t for j in ssn.jobs.values() for t in j.tasks.values()), key=lambda t: t.uid)
    running = [t for t in tasks if t.status.value == "Running"]
    for reclaimer in tasks:
        rq = ssn.jobs[reclaimer.job].queue
        cands = [t for t in running if ssn.jobs[t.job].queue != rq]
        victims, _ = p.reclaimable(reclaimer, cands)
        taken: dict[str, Resource] = {}
        for v in victims:
            taken.setdefault(ssn.jobs[v.job].queue, Resource()).add(v.resreq)
        for qname, r in taken.items():
            a = p.attrs[qname]
            left = a.allocated.clone().sub_without_assert(r)
            assert a.guarantee.less_equal(left), (qname, a.guarantee, left)
