"""Property tests of proportion's water-filling, directly and through the engine (hypothesis)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.engine import run_cycle
from apportion.framework.conf import build_conf
from apportion.kube import build_snapshot
from apportion.plugins.fairshare import FairShareQueue, water_fill
from apportion.plugins.queue_common import capability_of, real_capability_flat
from apportion.resources import MIN_RESOURCE, Resource

GI = 2**30
GPU = "nvidia.com/gpu"
DIMS = ("cpu", "memory", GPU, "pods")
#: absolute slack per dimension: the met test tolerates 0.1 internal units per queue, floats add the rest
REL = 1e-9

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------------------- strategies
@st.composite
def resources(draw: st.DrawFn, *, max_cpu: int = 64, max_gpu: int = 8, allow_gpu: bool = True) -> Resource:
    """Natural-unit amounts on a random subset of dimensions, in internal units."""
    r = Resource()
    if draw(st.booleans()):
        r.cpu = draw(st.integers(0, max_cpu * 10)) * 100.0  # 0.1-core steps
    if draw(st.booleans()):
        r.memory = float(draw(st.integers(0, 256)) * GI // 2)
    if allow_gpu and draw(st.booleans()):
        r.scalars[GPU] = draw(st.integers(0, max_gpu)) * 1000.0
    if draw(st.booleans()):
        r.scalars["pods"] = float(draw(st.integers(0, 50)))
    return r


@st.composite
def problems(draw: st.DrawFn) -> tuple[Resource, list[FairShareQueue]]:
    """A cluster total and 1-6 queues with weights, requests, optional capabilities and guarantees."""
    total = Resource(
        cpu=draw(st.integers(1, 640)) * 100.0,
        memory=float(draw(st.integers(1, 512)) * GI),
        scalars={"pods": float(draw(st.integers(1, 500)))},
    )
    if draw(st.booleans()):
        total.scalars[GPU] = draw(st.integers(0, 16)) * 1000.0
    n = draw(st.integers(1, 6))
    names = [f"q{i}" for i in range(n)]
    guarantees = [draw(resources(max_cpu=8, max_gpu=2)) if draw(st.integers(0, 3)) == 0 else Resource()
                  for _ in names]
    total_guarantee = Resource()
    for g in guarantees:
        total_guarantee.add(g)
    queues = []
    for name, g in zip(names, guarantees):
        cap_spec = draw(resources()) if draw(st.booleans()) else None
        cap = capability_of(cap_spec, True) if cap_spec is not None else None
        queues.append(FairShareQueue(
            name=name,
            weight=draw(st.integers(0, 10)),
            request=draw(resources(max_cpu=128, max_gpu=16)),
            real_capability=real_capability_flat(total, total_guarantee, g, cap),
            guarantee=g,
        ))
    return total, queues


def slack(total: Resource, name: str, n: int) -> float:
    return MIN_RESOURCE * n + REL * max(total.get(name), 1.0)


def dims_of(*rs: Resource) -> set[str]:
    out = {"cpu", "memory"}
    for r in rs:
        out.update(r.scalars)
    return out


# ----------------------------------------------------------------------------- direct properties
@SETTINGS
@given(problems())
def test_sum_of_deserved_never_exceeds_the_total(problem: tuple[Resource, list[FairShareQueue]]) -> None:
    total, queues = problem
    res = water_fill(total, queues)
    for name in dims_of(total, *res.deserved.values()):
        s = sum(d.get(name) for d in res.deserved.values())
        guaranteed = sum(q.guarantee.get(name) for q in queues)
        # Volcano charges a guarantee raise against `remaining` and clamps it at 0 (ExceededPart), so a
        # dimension some queue guarantees can overflow by at most the guarantees; any other never does.
        assert s <= total.get(name) + guaranteed + slack(total, name, len(queues)), name
        if guaranteed == 0:
            assert s <= total.get(name) + slack(total, name, len(queues)), name


@SETTINGS
@given(problems())
def test_deserved_within_request_and_real_capability_unless_guaranteed(
    problem: tuple[Resource, list[FairShareQueue]],
) -> None:
    total, queues = problem
    res = water_fill(total, queues)
    for q in queues:
        d = res.deserved[q.name]
        for name in dims_of(d):
            cap = q.request.get(name)
            if q.real_capability is not None and q.real_capability.has(name):
                cap = min(cap, q.real_capability.get(name))
            bound = max(cap, q.guarantee.get(name))
            assert d.get(name) <= bound + REL * max(bound, 1.0), (q.name, name)
            assert d.get(name) >= 0


@SETTINGS
@given(problems())
def test_the_loop_terminates_quickly(problem: tuple[Resource, list[FairShareQueue]]) -> None:
    total, queues = problem
    # the safety net of MAX_ROUNDS would raise; real inputs converge in a few hundred rounds at most
    res = water_fill(total, queues, max_rounds=5_000)
    assert res.rounds <= 5_000


@SETTINGS
@given(problems(), st.data())
def test_raising_a_weight_never_lowers_that_queues_deserved(
    problem: tuple[Resource, list[FairShareQueue]], data: st.DataObject,
) -> None:
    total, queues = problem
    i = data.draw(st.integers(0, len(queues) - 1))
    bump = data.draw(st.integers(1, 10))
    before = water_fill(total, queues).deserved[queues[i].name]
    raised = list(queues)
    raised[i] = replace(queues[i], weight=queues[i].weight + bump)
    after = water_fill(total, raised).deserved[queues[i].name]
    for name in dims_of(before, after):
        assert after.get(name) >= before.get(name) - slack(total, name, len(queues)), name


@SETTINGS
@given(problems(), st.randoms(use_true_random=False))
def test_the_result_does_not_depend_on_queue_order(
    problem: tuple[Resource, list[FairShareQueue]], rnd: random.Random,
) -> None:
    total, queues = problem
    shuffled = list(queues)
    rnd.shuffle(shuffled)
    a, b = water_fill(total, queues), water_fill(total, shuffled)
    assert a.rounds == b.rounds
    assert a.deserved.keys() == b.deserved.keys()
    for name, d in a.deserved.items():
        assert d == b.deserved[name]  # exact, not approximate


def test_inputs_are_not_modified() -> None:
    total = Resource.from_natural({"cpu": 10, "pods": 5})
    q = FairShareQueue("a", 1, Resource.from_natural({"cpu": 20, "pods": 1}), total.clone(),
                       Resource.from_natural({"cpu": 1}))
    water_fill(total, [q])
    assert total == Resource.from_natural({"cpu": 10, "pods": 5})
    assert q.request == Resource.from_natural({"cpu": 20, "pods": 1})
    assert q.guarantee == Resource.from_natural({"cpu": 1})


# ----------------------------------------------------------------------------- through the engine
@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Kubernetes objects: 1-4 nodes, 1-4 queues with weights and pending or running jobs."""
    objs: list[dict[str, Any]] = []
    n_nodes = draw(st.integers(1, 4))
    for i in range(n_nodes):
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                     "status": {"allocatable": {"cpu": str(draw(st.integers(1, 16))), "memory": "64Gi",
                                                "pods": "110"}}})
    for qi in range(draw(st.integers(1, 4))):
        qname = f"q{qi}"
        objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                     "metadata": {"name": qname}, "spec": {"weight": draw(st.integers(1, 5))}})
        for ji in range(draw(st.integers(1, 3))):
            pg = f"{qname}-j{ji}"
            objs.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                         "metadata": {"name": pg, "namespace": "ns"},
                         "spec": {"queue": qname, "minMember": 1}, "status": {"phase": "Inqueue"}})
            for ti in range(draw(st.integers(1, 4))):
                cpu = draw(st.sampled_from(["500m", "1", "2", "4"]))
                objs.append({"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": f"{pg}-{ti}", "namespace": "ns",
                                          "annotations": {"scheduling.k8s.io/group-name": pg}},
                             "spec": {"schedulerName": "volcano",
                                      "containers": [{"name": "c", "resources": {"requests": {
                                          "cpu": cpu, "memory": "1Gi"}}}]},
                             "status": {"phase": "Pending"}})
    return objs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_engine_deserved_and_allocation_respect_the_total_and_deserved(objs: list[dict[str, Any]]) -> None:
    snap = build_snapshot([(f"gen: {i}", o) for i, o in enumerate(objs)])
    total_cpu = sum(float(o["status"]["allocatable"]["cpu"]) for o in objs if o["kind"] == "Node")
    cfg = build_conf("allocate", [["priority", "gang"], ["proportion"]])
    r = run_cycle(snap, cfg)
    queues = r.queues
    assert sum(q["deserved"].get("cpu", 0) for q in queues.values()) <= total_cpu + 1e-6
    for q in queues.values():
        assert q["deserved"].get("cpu", 0) <= q["request"].get("cpu", 0) + 1e-6
        # allocate never takes a queue beyond its deserved on cpu (rule b is strict)
        assert q["allocated"].get("cpu", 0) <= q["deserved"].get("cpu", 0) + 1e-6
    assert sum(q["allocated"].get("cpu", 0) for q in queues.values()) <= total_cpu + 1e-6
