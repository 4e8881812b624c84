"""`apportion serve --scenario FILE --speed N`: a scenario's workload played against the live service.

Each job of the scenario's workload (explicit jobs, traces, generators: `simulation.workload`) is
applied as a PodGroup and its Pods when its arrival comes, on a clock running N times real time; each
pod carries `apportion.io/duration` = its duration / N seconds, so the scheduling loop completes it
that long after it is bound. A job with `reservation:` names a reservation of the scenario: those are
submitted through the same YARN handlers at their `submitAt`, with the scenario's times scaled the same
way. A new database without `--cluster` is seeded with the scenario's own cluster (`scenario_cluster`):
its nodes, its queues (reservable ones with their plan settings) and its scheduler configuration, so
the jobs find the queues they name. `--scenario default` plays the built-in scenario.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from apportion.resources import CPU, MEMORY, Resource
from apportion.service.live import RESERVATION_KEY
from apportion.service.loop import DURATION_KEY
from apportion.service.seed import scenario_file
from apportion.simulation.scenario import JobSpec, ReservationSpec, load_scenario
from apportion.simulation.workload import workload

if TYPE_CHECKING:
    from apportion.service.core import Service

log = logging.getLogger(__name__)
NAMESPACE = "scenario"


def requests(r: Resource) -> dict[str, str]:
    """A Volcano resource as a pod's resource requests."""
    out = {"cpu": f"{int(round(r.get(CPU)))}m", "memory": str(int(r.get(MEMORY)))}
    for name, v in r.to_natural().items():
        if name not in (CPU, MEMORY, "pods"):
            out[name] = str(v)
    return out


def job_objects(job: JobSpec, speed: float, reservation: str | None) -> list[tuple[str, dict[str, Any]]]:
    """The PodGroup and Pods of one scenario job."""
    ann = {RESERVATION_KEY: reservation} if reservation else {}
    pg: dict[str, Any] = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                          "metadata": {"name": job.name, "namespace": NAMESPACE, "annotations": ann},
                          "spec": {"queue": job.queue, "minMember": job.min_member}}
    if job.priority_class:
        pg["spec"]["priorityClassName"] = job.priority_class
    out: list[tuple[str, dict[str, Any]]] = [(f"scenario job {job.name}", pg)]
    for i in range(job.tasks):
        out.append((f"scenario job {job.name} pod {i}", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{job.name}-{i}", "namespace": NAMESPACE, "annotations": {
                "scheduling.k8s.io/group-name": job.name, DURATION_KEY: f"{job.duration / speed:.3f}"}},
            "spec": {"schedulerName": "volcano", "containers": [{"name": "main", "resources": {
                "requests": requests(job.resources)}}]},
            "status": {"phase": "Pending"}}))
    return out


def reservation_body(r: ReservationSpec, rid: str, t0_ms: int, speed: float) -> dict[str, Any]:
    """The YARN submission of one scenario reservation (times scaled by the speed)."""
    def at(t: float) -> int:
        return t0_ms + int(t * 1000 / speed)

    stages = [{"capability": {"memory": int(s.resources.get(MEMORY) // (1024 * 1024)),
                              "vCores": int(s.resources.get(CPU) // 1000)},
               "num-containers": s.num_containers, "min-concurrency": s.num_containers if r.gang else 1,
               "duration": int(s.duration * 1000 / speed)} for s in r.stages]
    interp = {"R_ANY": 0, "R_ALL": 1, "R_ORDER": 2, "R_ORDER_NO_GAP": 3}.get(r.interpreter, 1)
    return {"queue": r.queue, "reservation-id": rid, "reservation-definition": {
        "arrival": at(r.arrival), "deadline": at(r.deadline), "reservation-name": r.name,
        "reservation-requests": {"reservation-request-interpreter": interp, "reservation-request": stages}}}


class ScenarioPlayer:
    """Plays one scenario's workload against the service."""

    def __init__(self, svc: Service, path: str, speed: float) -> None:
        self.svc = svc
        self.scenario = load_scenario(scenario_file(path))
        self.jobs = workload(self.scenario)
        self.speed = speed
        self.reservation_ids: dict[str, str] = {}

    async def run(self) -> None:
        """Apply each job at its scaled arrival; submit each reservation at its scaled submitAt."""
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        t0_ms = self.svc.clock()
        events: list[tuple[float, int, Any]] = [(r.submit_at, 0, r) for r in self.scenario.reservations]
        events += [(j.arrival, 1, j) for j in self.jobs]
        events.sort(key=lambda e: (e[0], e[1], getattr(e[2], "name", "")))
        for at, kind, item in events:
            await asyncio.sleep(max(0.0, t0 + at / self.speed - loop.time()))
            try:
                if kind == 0:
                    _, body = await self.svc.reservation("new_reservation", item.user or "scenario", None)
                    rid = body["reservation-id"]
                    status, answer = await self.svc.reservation(
                        "submit", item.user or "scenario", reservation_body(item, rid, t0_ms, self.speed))
                    if status == 202:
                        self.reservation_ids[item.name] = rid
                    else:
                        log.info("scenario reservation %s refused: %s", item.name, answer)
                else:
                    rid = self.reservation_ids.get(item.reservation) if item.reservation else None
                    await self.svc.apply(job_objects(item, self.speed, rid), [])
            except Exception:  # noqa: BLE001 - one bad job must not stop the play; the log says which
                log.exception("scenario: could not play %s", getattr(item, "name", item))
