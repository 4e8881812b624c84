"""Microsoft Philly (per-VC traces prepared by Gavel): `jobs_seed0.csv` and `philly_vc.csv`.

Mapping (see also the trace's README and docs/scenario.md):

* each VC is a leaf queue named `vc-<id>`; its capacity is `node num × 8` GPUs from `philly_vc.csv`
  (times `clusterScale` when given), written as `spec.deserved` (capacity plugin) and as the weight
  (proportion plugin: `node num`). CPU and memory deserved follow the per-GPU ratio below.
* the VCs missing from `philly_vc.csv` share one `misc` queue deserving one node (8 GPUs × scale,
  at least 1 GPU).
* a job with gpus ≤ 8 is one task with that many GPUs; a job with gpus > 8 is a gang of ⌈gpus/8⌉
  tasks of 8 GPUs with minMember = task count.
* CPU and memory are not in the data: each GPU brings `cpuPerGpu` cores (default 4) and
  `memoryPerGpu` (default 32Gi).
* arrival = `arrival_s` (every VC starts at 0); only jobs arriving before `days` days (default 30)
  are kept; `maxJobs` keeps the first N by (arrival, job id). `timeScale` divides arrivals and
  durations (compresses time); duration = `duration_s_v100` (at least 1 s).
* with `clusterScale: f`, the scenario also gets ⌈f × Σ node num⌉ nodes of 8 GPUs named `philly-NN`.
"""

from __future__ import annotations

import csv
import math
from typing import Any

from apportion.errors import InputError
from apportion.quantity import parse_quantity_decimal
from apportion.resources import GPU, PODS, Resource
from apportion.simulation.specs import JobSpec
from apportion.simulation.traces import LoadedTrace, node_objects, queue_object

GPUS_PER_NODE = 8


def load_philly(spec: Any) -> LoadedTrace:
    """The jobs of the first `days` days, a queue per virtual cluster and, with `clusterScale`, a cluster."""
    opts = spec.options
    days = float(opts.get("days", 30))
    scale = float(opts.get("clusterScale", 1.0))
    time_scale = float(opts.get("timeScale", 1.0))
    cpu_per_gpu = float(opts.get("cpuPerGpu", 4))
    mem_raw = opts.get("memoryPerGpu", "32Gi")
    try:
        mem_per_gpu = float(parse_quantity_decimal(mem_raw))
    except Exception:
        raise InputError(f"not a quantity: {mem_raw!r}", where=f"{spec.where}.memoryPerGpu") from None
    jobs_path = spec.path / "jobs_seed0.csv"
    vc_path = spec.path / "philly_vc.csv"
    for p in (jobs_path, vc_path):
        if not p.exists():
            raise InputError(f"{p.name} is missing from the Philly trace folder", where=f"{spec.where}.path")

    vc_nodes: dict[str, int] = {}
    with vc_path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            vc_nodes[row["vc"]] = int(row["node num"])

    rows = []
    with jobs_path.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            arrival = float(row["arrival_s"])
            if arrival >= days * 86400:
                continue
            rows.append((arrival, row["job_id"], row["vc"], int(row["gpus"]), float(row["duration_s_v100"])))
    rows.sort()
    if "maxJobs" in opts:
        rows = rows[: int(opts["maxJobs"])]

    def qname(vc: str) -> str:
        return f"vc-{vc}" if vc in vc_nodes else "misc"

    jobs: list[JobSpec] = []
    for arrival, job_id, vc, gpus, duration in rows:
        if gpus <= GPUS_PER_NODE:
            tasks, per = 1, gpus
        else:
            tasks, per = math.ceil(gpus / GPUS_PER_NODE), GPUS_PER_NODE
        res = Resource.from_natural({"cpu": per * cpu_per_gpu, "memory": per * mem_per_gpu, GPU: per, PODS: 1})
        jobs.append(JobSpec(
            name=f"philly-{job_id}".lower(), queue=qname(vc), arrival=arrival / time_scale,
            duration=max(1.0, duration / time_scale), tasks=tasks, min_member=tasks, resources=res,
            source=f"{spec.where} ({job_id})",
        ))

    queues = []
    used_vcs = {r[2] for r in rows}
    for vc in sorted(vc_nodes):
        gpus = max(1, round(vc_nodes[vc] * GPUS_PER_NODE * scale))
        queues.append(queue_object(f"vc-{vc}", weight=vc_nodes[vc], deserved=_deserved(gpus, cpu_per_gpu, mem_per_gpu)))
    if any(vc not in vc_nodes for vc in used_vcs):
        gpus = max(1, round(GPUS_PER_NODE * scale))
        queues.append(queue_object("misc", weight=1, deserved=_deserved(gpus, cpu_per_gpu, mem_per_gpu)))

    nodes: list[dict[str, Any]] = []
    if "clusterScale" in opts:
        count = math.ceil(scale * sum(vc_nodes.values()))
        nodes = node_objects("philly", count, {"cpu": int(GPUS_PER_NODE * cpu_per_gpu),
                                                "memory": str(int(GPUS_PER_NODE * mem_per_gpu)),
                                                GPU: GPUS_PER_NODE})
    return LoadedTrace(jobs=jobs, queues=queues, nodes=nodes)


def _deserved(gpus: int, cpu_per_gpu: float, mem_per_gpu: float) -> dict[str, Any]:
    return {"cpu": str(int(gpus * cpu_per_gpu)), "memory": str(int(gpus * mem_per_gpu)), GPU: str(gpus)}
