"""Alibaba GPU cluster "openb" (2023): a pod list and a node list.

Mapping (see also the trace's README and docs/scenario.md):

* each pod is a one-task job; arrival = creation_time − the first kept creation_time; duration =
  deletion_time − (scheduled_time or creation_time), pods with no positive duration are dropped.
  `days` keeps pods arriving within that many days of the first pod (default: all); `timeScale`
  divides arrivals and durations; `maxJobs` keeps the first N by arrival.
* resources: cpu = cpu_milli m, memory = memory_mib Mi, nvidia.com/gpu = num_gpu; a shared-GPU pod
  (gpu_milli < 1000 with num_gpu = 1) asks for gpu_milli/1000 of a GPU.
* QoS → queue and priority: LS and Guaranteed → queue `ls` (priority class `alibaba-ls`, 1000,
  not preemptable, queue not reclaimable); Burstable → queue `burstable` (`alibaba-burstable`, 500);
  BE → queue `be` (`alibaba-be`, 0, preemptable). Files without a qos column put everything in `be`.
  Queue deserved: ls 50 %, burstable 25 %, be 25 % of the GPU capacity of the generated cluster (or
  weights 2:1:1 for proportion).
* `file` picks the pod list (default `openb_pod_list_default.csv`); with `clusterScale: f` the
  scenario gets every ⌈1/f⌉-th node of `openb_node_list_gpu_node.csv` (name order).
"""

from __future__ import annotations

import csv
import math
from typing import Any

from apportion.errors import InputError
from apportion.resources import GPU, PODS, Resource
from apportion.simulation.specs import JobSpec
from apportion.simulation.traces import LoadedTrace, queue_object

QOS_QUEUE = {"LS": "ls", "Guaranteed": "ls", "Burstable": "burstable", "BE": "be"}
PRIORITY = {"ls": ("alibaba-ls", 1000), "burstable": ("alibaba-burstable", 500), "be": ("alibaba-be", 0)}
SHARE = {"ls": 0.5, "burstable": 0.25, "be": 0.25}
WEIGHT = {"ls": 2, "burstable": 1, "be": 1}


def load_alibaba(spec: Any) -> LoadedTrace:
    """The pods as one-task jobs, a queue per QoS class and, with `clusterScale`, a sample of the nodes."""
    opts = spec.options
    pods_path = spec.path / str(opts.get("file", "openb_pod_list_default.csv"))
    if not pods_path.exists():
        raise InputError(f"{pods_path.name} is missing from the Alibaba trace folder", where=f"{spec.where}.file")
    time_scale = float(opts.get("timeScale", 1.0))
    rows = []
    with pods_path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            created = float(row.get("creation_time") or 0)
            deleted = row.get("deletion_time")
            sched = row.get("scheduled_time")
            if not deleted:
                continue
            begin = float(sched) if sched not in (None, "") else created
            duration = float(deleted) - begin
            if duration <= 0:
                continue
            rows.append((created, row["name"], row, duration))
    rows.sort(key=lambda r: (r[0], r[1]))
    if not rows:
        return LoadedTrace(jobs=[], warnings=[f"{spec.where}: no pod with a positive duration"])
    t0 = rows[0][0]
    if "days" in opts:
        rows = [r for r in rows if r[0] - t0 < float(opts["days"]) * 86400]
    if "maxJobs" in opts:
        rows = rows[: int(opts["maxJobs"])]

    jobs = []
    used: set[str] = set()
    for created, name, row, duration in rows:
        q = QOS_QUEUE.get(row.get("qos") or "BE", "be")
        used.add(q)
        num_gpu = int(row.get("num_gpu") or 0)
        gpu_milli = int(row.get("gpu_milli") or 0)
        gpus = gpu_milli / 1000.0 if num_gpu == 1 and 0 < gpu_milli < 1000 else float(num_gpu)
        nat: dict[str, float] = {"cpu": int(row["cpu_milli"]) / 1000.0, "memory": int(row["memory_mib"]) * 2**20,
                                 PODS: 1}
        if gpus:
            nat[GPU] = gpus
        pc, _ = PRIORITY[q]
        jobs.append(JobSpec(
            name=name.lower(), queue=q, arrival=(created - t0) / time_scale, duration=max(1.0, duration / time_scale),
            tasks=1, min_member=1, resources=Resource.from_natural(nat), priority_class=pc,
            preemptable=q == "be", source=f"{spec.where} ({name})",
        ))

    nodes: list[dict[str, Any]] = []
    total_gpu = 0.0
    if "clusterScale" in opts:
        every = max(1, math.ceil(1 / float(opts["clusterScale"])))
        with (spec.path / "openb_node_list_gpu_node.csv").open(encoding="utf-8") as f:
            all_nodes = sorted(csv.DictReader(f), key=lambda r: r["sn"])
        for r in all_nodes[::every]:
            alloc = {"cpu": f"{r['cpu_milli']}m", "memory": f"{r['memory_mib']}Mi", GPU: r["gpu"], "pods": "110"}
            nodes.append({"kind": "Node", "metadata": {"name": r["sn"], "labels": {"gpu-model": r.get("model") or ""}},
                          "status": {"allocatable": alloc}})
            total_gpu += float(r["gpu"])
    queues = []
    for q in ("ls", "burstable", "be"):
        if q not in used:
            continue
        deserved = {GPU: str(math.floor(total_gpu * SHARE[q]))} if total_gpu else None
        queues.append(queue_object(q, weight=WEIGHT[q], deserved=deserved, priority=0,
                                   reclaimable=q != "ls"))
    return LoadedTrace(jobs=jobs, queues=queues, nodes=nodes, priority_classes=priority_classes())


def priority_classes() -> dict[str, int]:
    """The priority classes the mapping uses (the scenario loader adds them)."""
    return dict(PRIORITY.values())
