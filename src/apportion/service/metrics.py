"""`GET /metrics`: Prometheus metrics, with Volcano's names where Volcano has one.

Volcano's: `volcano_e2e_scheduling_latency_milliseconds`, `volcano_queue_allocated_milli_cpu`,
`volcano_queue_allocated_memory_bytes`, `volcano_queue_deserved_milli_cpu`,
`volcano_queue_deserved_memory_bytes`, `volcano_queue_share`, `volcano_schedule_attempts_total`.
apportion's own: `apportion_reservation_requests_total{operation,code}`, and per plan
`apportion_plan_reservations`, `apportion_plan_capacity_{memory_mb,vcores}`,
`apportion_plan_committed_{memory_mb,vcores}` (what the plan holds now).
Each service has its own registry, so several can live in one process (the tests start many).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from apportion.service.idle_queues import job_less, queue_plugin

if TYPE_CHECKING:
    from apportion.engine import CycleResult
    from apportion.reservation.system import PlanEntry


class ServiceMetrics:
    """The metrics of one service."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.e2e = Histogram("volcano_e2e_scheduling_latency_milliseconds",
                             "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
                             registry=r, buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000))
        self.attempts = Counter("volcano_schedule_attempts", "Number of attempts to schedule pods, by the result",
                                ["result"], registry=r)
        self.q_alloc_cpu = Gauge("volcano_queue_allocated_milli_cpu", "Allocated CPU count for one queue",
                                 ["queue_name"], registry=r)
        self.q_alloc_mem = Gauge("volcano_queue_allocated_memory_bytes", "Allocated memory for one queue",
                                 ["queue_name"], registry=r)
        self.q_des_cpu = Gauge("volcano_queue_deserved_milli_cpu", "Deserved CPU count for one queue",
                               ["queue_name"], registry=r)
        self.q_des_mem = Gauge("volcano_queue_deserved_memory_bytes", "Deserved memory for one queue",
                               ["queue_name"], registry=r)
        self.q_share = Gauge("volcano_queue_share", "Share for one queue", ["queue_name"], registry=r)
        self.requests = Counter("apportion_reservation_requests", "YARN reservation REST calls, by answer",
                                ["operation", "code"], registry=r)
        self.plan_count = Gauge("apportion_plan_reservations", "Reservations a plan holds", ["queue"], registry=r)
        self.plan_cap_mem = Gauge("apportion_plan_capacity_memory_mb", "Plan capacity (memory)", ["queue"], registry=r)
        self.plan_cap_vc = Gauge("apportion_plan_capacity_vcores", "Plan capacity (vCores)", ["queue"], registry=r)
        self.plan_used_mem = Gauge("apportion_plan_committed_memory_mb", "Reserved now (memory)", ["queue"], registry=r)
        self.plan_used_vc = Gauge("apportion_plan_committed_vcores", "Reserved now (vCores)", ["queue"], registry=r)
        #: the request counter's children by (operation, code): `labels` looks them up under a lock and
        #: checks its arguments each time, a tenth of a small request's time on the event loop
        self._request_counters: dict[tuple[str, int], Any] = {}

    def reservation_request(self, op: str, status: int) -> None:
        """Count one reservation call."""
        child = self._request_counters.get((op, status))
        if child is None:
            child = self._request_counters[(op, status)] = self.requests.labels(op, str(status))
        child.inc()

    def session(self, result: CycleResult, latency_ms: float, plans: dict[str, PlanEntry], now: int) -> None:
        """Record one scheduling session and the plans as they are after it."""
        self.e2e.observe(latency_ms)
        if result.binds:
            self.attempts.labels("scheduled").inc(len(result.binds))
        waiting = sum(1 for e in result.events if e.reason == "Unschedulable")
        if waiting:
            self.attempts.labels("unschedulable").inc(waiting)
        for g in (self.q_alloc_cpu, self.q_alloc_mem, self.q_des_cpu, self.q_des_mem, self.q_share):
            g.clear()
        for name, st in result.queue_status.items():
            # Volcano's gauges are in milli-cpu and bytes: the typed status's own units
            self.q_alloc_cpu.labels(name).set(st.allocated.cpu)
            self.q_alloc_mem.labels(name).set(st.allocated.memory)
            self.q_des_cpu.labels(name).set(st.deserved.cpu)
            self.q_des_mem.labels(name).set(st.deserved.memory)
            self.q_share.labels(name).set(st.share)
        ssn = result.session
        if ssn is not None and queue_plugin(ssn.conf) is not None:
            # Volcano's proportion and capacity plugins record allocated 0 for a queue of the session
            # they keep no attributes for (no job in it, flat mode), rather than no series at all
            for name in job_less(ssn.queues, {j.queue for j in ssn.jobs.values()}, result.queue_status):
                self.q_alloc_cpu.labels(name).set(0.0)
                self.q_alloc_mem.labels(name).set(0.0)
        self.plans(plans, now)

    def plans(self, plans: dict[str, PlanEntry], now: int) -> None:
        """The plans' gauges."""
        for g in (self.plan_count, self.plan_cap_mem, self.plan_cap_vc, self.plan_used_mem, self.plan_used_vc):
            g.clear()
        for name, entry in plans.items():
            plan = entry.plan
            used = plan.total_at(now)
            self.plan_count.labels(name).set(len(plan.reservations))
            self.plan_cap_mem.labels(name).set(plan.capacity[0])
            self.plan_cap_vc.labels(name).set(plan.capacity[1])
            self.plan_used_mem.labels(name).set(used[0])
            self.plan_used_vc.labels(name).set(used[1])

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)
