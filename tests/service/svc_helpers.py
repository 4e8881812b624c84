"""Request bodies and checks shared by the service tests."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from apportion.reservation.plan import InMemoryPlan


def wait_for(pred: Callable[[], Any], seconds: float = 20.0) -> None:
    """Poll until pred() holds (a live server's loop decides in its own time)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError("condition not reached in time")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`apportion ARGS` in a new process of this interpreter, its output captured."""
    return subprocess.run([sys.executable, "-c", "from apportion.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def now_ms() -> int:
    """Wall clock, epoch ms (the server's clock)."""
    return int(time.time() * 1000)


def definition(arrival: int, deadline: int, memory: int = 4096, vcores: int = 2, containers: int = 4,
               duration: int = 60_000, name: str = "job") -> dict[str, Any]:
    """A one-stage reservation definition (REST JSON)."""
    return {
        "arrival": arrival, "deadline": deadline, "reservation-name": name,
        "reservation-requests": {"reservation-request-interpreter": 0, "reservation-request": [
            {"capability": {"memory": memory, "vCores": vcores}, "num-containers": containers,
             "min-concurrency": containers, "duration": duration}]},
    }


def submission(rid: str, queue: str = "dedicated", **kw: Any) -> dict[str, Any]:
    """A reservation-submission-context starting now and due in 10 minutes."""
    t = now_ms()
    return {"queue": queue, "reservation-id": rid,
            "reservation-definition": definition(kw.pop("arrival", t), kw.pop("deadline", t + 600_000), **kw)}


def over_committed(plan: InMemoryPlan) -> list[int]:
    """Change points of the plan's load where it holds more than its capacity (any component)."""
    points = sorted({t for r in plan.reservations.values() for a, b, _ in r.intervals for t in (a, b)})
    cap = plan.capacity
    bad = []
    for t in points:
        m, v = plan.total_at(t)
        if m > cap[0] or v > cap[1]:
            bad.append(t)
    return bad


def job_objects(name: str, queue: str, pods: int, annotations: dict[str, str] | None = None, *, cpu: str = "1",
                seconds: int | None = None) -> list[tuple[str, Any]]:
    """A PodGroup in namespace `t` and its pending pods of `cpu` cores and 1Gi each, as `(where, object)`
    for `Service._apply_now`; `seconds`: each pod's `apportion.io/duration`."""
    out: list[tuple[str, Any]] = [(f"{name} pg", {
        "kind": "PodGroup", "metadata": {"name": name, "namespace": "t", "annotations": annotations or {}},
        "spec": {"queue": queue, "minMember": pods}})]
    pod_annotations = {"scheduling.k8s.io/group-name": name}
    if seconds is not None:
        pod_annotations["apportion.io/duration"] = str(seconds)
    for i in range(pods):
        out.append((f"{name} pod {i}", {
            "kind": "Pod", "metadata": {"name": f"{name}-{i}", "namespace": "t", "annotations": dict(pod_annotations)},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
            "status": {"phase": "Pending"}}))
    return out
