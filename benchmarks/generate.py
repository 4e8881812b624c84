"""Seeded synthetic cluster snapshots for the benchmarks (Kubernetes objects as dicts)."""

from __future__ import annotations

from typing import Any

import numpy as np


def cluster_objects(nodes: int, gangs: int, pods_per_gang: int, queues: int, *, hierarchical: bool = True,
                    seed: int = 0, plugin: str = "capacity") -> list[dict[str, Any]]:
    """`nodes` nodes of 32 cpu / 128Gi, `gangs` pending gangs spread over `queues` leaf queues.

    With `hierarchical`, leaves hang under sqrt(queues) parents under root; deserved splits the
    cluster evenly, so gangs compete for fair share.
    """
    rng = np.random.default_rng(seed)
    objs: list[dict[str, Any]] = []
    for i in range(nodes):
        objs.append({"kind": "Node", "metadata": {"name": f"node-{i:05d}", "labels": {"zone": f"z{i % 3}"}},
                     "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}})
    total_cpu = 32 * nodes
    parents = max(1, int(round(queues ** 0.5))) if hierarchical else 0
    for p in range(parents):
        share = total_cpu // parents
        objs.append({"kind": "Queue", "metadata": {"name": f"org-{p:03d}"},
                     "spec": {"weight": 1, "parent": "root", "deserved": {"cpu": str(share), "memory": f"{share * 4}Gi"}}})
    for q in range(queues):
        share = total_cpu // queues
        spec: dict[str, Any] = {"weight": int(rng.integers(1, 5)),
                                "deserved": {"cpu": str(share), "memory": f"{share * 4}Gi"}}
        if parents:
            spec["parent"] = f"org-{q % parents:03d}"
        objs.append({"kind": "Queue", "metadata": {"name": f"q-{q:04d}"}, "spec": spec})
    for g in range(gangs):
        q = int(rng.integers(0, queues))
        size = pods_per_gang
        cpu = int(rng.choice([1, 2, 4]))
        mem = cpu * 4
        objs.append({"kind": "PodGroup", "metadata": {"name": f"job-{g:05d}", "namespace": "bench"},
                     "spec": {"queue": f"q-{q:04d}", "minMember": size,
                              "minResources": {"cpu": str(cpu * size), "memory": f"{mem * size}Gi"}},
                     "status": {"phase": "Pending"}})
        for t in range(size):
            objs.append({"kind": "Pod", "metadata": {"name": f"job-{g:05d}-w-{t}", "namespace": "bench",
                                                      "annotations": {"scheduling.k8s.io/group-name": f"job-{g:05d}"}},
                         "spec": {"schedulerName": "volcano", "containers": [
                             {"name": "c", "resources": {"requests": {"cpu": str(cpu), "memory": f"{mem}Gi"}}}]},
                         "status": {"phase": "Pending"}})
    hier = "\n    enableHierarchy: true" if hierarchical and plugin == "capacity" else ""
    conf = ("actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n"
            "  - name: conformance\n- plugins:\n  - name: drf\n  - name: predicates\n"
            f"  - name: {plugin}{hier}\n  - name: nodeorder\n")
    objs.append({"kind": "ConfigMap", "metadata": {"name": "volcano-scheduler-configmap"},
                 "data": {"volcano-scheduler.conf": conf}})
    return objs
