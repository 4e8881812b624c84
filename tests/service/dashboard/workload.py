"""The objects the dashboard tests apply through `/api/v1/apply`: jobs that run, jobs that wait and why."""

from __future__ import annotations

from typing import Any

NS = "team"


def job(name: str, queue: str, pods: int, cpu: str = "1", memory: str = "2Gi", duration: str | None = None,
        annotations: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """A PodGroup and its pods (Volcano's objects), as kubectl would apply them."""
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": name, "namespace": NS, "annotations": annotations or {}},
          "spec": {"queue": queue, "minMember": pods}}
    out: list[dict[str, Any]] = [pg]
    pod_ann = {"scheduling.k8s.io/group-name": name}
    if duration:
        pod_ann["apportion.io/duration"] = duration
    for i in range(pods):
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"{name}-{i}", "namespace": NS, "annotations": dict(pod_ann)},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "main", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
            "status": {"phase": "Pending"}})
    return out


def queue(name: str, cpu: str, memory: str, cap_cpu: str | None = None, cap_memory: str | None = None
          ) -> dict[str, Any]:
    """A Queue with a deserved share (the built-in cluster's `default` and `batch` have none, and the
    capacity plugin then lets them hold nothing)."""
    spec: dict[str, Any] = {"weight": 1, "deserved": {"cpu": cpu, "memory": memory}}
    if cap_cpu:
        spec["capability"] = {"cpu": cap_cpu, "memory": cap_memory}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": spec}


def node(name: str, pool: str) -> dict[str, Any]:
    """One of the built-in cluster's nodes (16 cores, 64 GiB), labelled with a pool to group by."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"example.com/pool": pool}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}}


def busy_cluster() -> list[dict[str, Any]]:
    """On the built-in cluster (4 nodes of 16 cores, 64 GiB; `dedicated` reservable with half of it):
    running jobs in three queues, and a job larger than its queue may ever hold, which waits."""
    docs: list[dict[str, Any]] = [queue("default", "8", "32Gi", "16", "64Gi"), queue("batch", "24", "96Gi")]
    docs += [node(f"node-0{i}", "blue" if i <= 2 else "green") for i in range(1, 5)]
    docs += job("etl", "batch", 6, cpu="4", memory="8Gi")
    docs += job("train", "batch", 2, cpu="8", memory="16Gi")
    docs += job("notebook", "default", 3, cpu="2", memory="4Gi")
    docs += job("serving", "dedicated", 2, cpu="4", memory="8Gi")
    docs += job("huge", "default", 1, cpu="40", memory="8Gi")
    return docs
