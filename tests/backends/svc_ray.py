"""Building a service on the Ray backend in process (no HTTP), and jobs for it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
from ray.cluster_utils import Cluster

from apportion.backends.ray_backend import RayBackend
from apportion.backends.ray_jobs import job_objects
from apportion.service.core import Service, ServiceConfig

QUEUES = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: default}
spec: {weight: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: a}
spec: {weight: 1, reclaimable: true}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: b}
spec: {weight: 1, reclaimable: true}
"""

@dataclass
class RayCluster:
    """The running cluster, its worker nodes by name, and their Ray node ids."""

    cluster: Cluster
    workers: dict[str, Any]

    def node_id(self, worker: str) -> str:
        """The Ray node id of worker `w1`..."""
        for n in ray.nodes():
            if n["Alive"] and worker in n["Resources"]:
                return str(n["NodeID"])
        raise KeyError(worker)


RECLAIM_CONF = """
actions: "enqueue, allocate, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def ray_service(tmp_path: Path, backend: RayBackend, extra: str = "", conf: str | None = None) -> Service:
    """A service whose cluster is the Ray cluster (queues default, a and b; `extra` more objects)."""
    cluster = tmp_path / "queues.yaml"
    cluster.write_text(QUEUES + extra)
    conf_path = None
    if conf is not None:
        conf_path = str(tmp_path / "conf.yaml")
        Path(conf_path).write_text(conf)
    return Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'svc.db'}", cluster_path=str(cluster),
                                 conf_path=conf_path, loop=False, backend=backend))


def submit(svc: Service, name: str, queue: str, tasks: int, min_member: int, requests: dict[str, str],
           payload: dict[str, str], reservation: str | None = None) -> None:
    """Store a job as `apportion submit` does."""
    objs = job_objects(name, "t", queue, tasks, min_member, requests, payload, reservation)
    svc._apply_now([(f"{o['kind']} {o['metadata']['name']}", o) for o in objs], [])


def pods(svc: Service, job: str) -> dict[str, dict[str, Any]]:
    """The job's stored pods by name."""
    return {n: o for (k, _, n), o in sorted(svc.objects.objects.items()) if k == "Pod" and n.startswith(job + "-")}


def phases(svc: Service, job: str) -> list[str]:
    """The job's pods' phases, by name."""
    return [o["status"]["phase"] for o in pods(svc, job).values()]


def tick_until(svc: Service, done: Callable[[], bool], timeout_s: float = 60.0) -> None:
    """Run scheduling ticks until `done()` holds."""
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"timed out; waiting: {svc.loop.waiting}"
        svc.loop.tick()
        time.sleep(0.05)


def descendants(root: int) -> set[int]:
    """Every live, non-zombie process below `root` (read from /proc)."""
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parent[int(d.name)] = int(fields[1])
    out: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier and p not in out}
        out |= frontier
    return out


def submission(rid: str, queue: str = "dedicated", memory: int = 1024, vcores: int = 1,
               containers: int = 2) -> dict[str, Any]:
    """A reservation-submission-context (YARN REST JSON) starting now, for ten minutes."""
    import time

    t = int(time.time() * 1000)
    return {"queue": queue, "reservation-id": rid, "reservation-definition": {
        "arrival": t, "deadline": t + 600_000, "reservation-name": "ray",
        "reservation-requests": {"reservation-request-interpreter": 0, "reservation-request": [
            {"capability": {"memory": memory, "vCores": vcores}, "num-containers": containers,
             "min-concurrency": containers, "duration": 600_000}]}}}
