"""The simulator's side of the reservation plans: submissions at their instants and the plan follower
that turns each plan into child queues before every session.

Follows YARN's PlanFollower (`AbstractSchedulerPlanFollower.synchronizePlan`): a reservation's queue
exists while it is active, with its allocation as capacity, and its jobs move to the default child or
are killed when it expires (the plan's `moveOnExpiry`). The plans themselves are
the reservation system's (simulation/reservations.py). Simulation/engine.py inherits this.
"""

from __future__ import annotations

from typing import Any

from apportion.cluster.model import GROUP_COMPLETED, GROUP_RUNNING, QueueInfo, TaskStatus
from apportion.resources import Resource
from apportion.simulation.jobs import EV_WAKE, SimJob
from apportion.simulation.lifecycle import TaskLifecycle
from apportion.simulation.reservations import SimPlan, default_child, plan_capacity


class PlanFollower(TaskLifecycle):
    """Reservation submissions and the plan follower (mixed into Simulator)."""

    plans: dict[str, SimPlan]
    res_by_name: dict[str, str]
    res_accepted: dict[str, bool]
    reservation_log: list[dict[str, Any]]
    children: dict[str, list[QueueInfo]]

    # ================================================================= submissions
    def _submit_reservation(self, spec: Any) -> None:
        plan = self.plans[spec.queue]
        plan.set_capacity(self._plan_capacity(spec.queue))
        result = plan.submit(spec, self.now)
        self.res_by_name[spec.name] = result.id
        self.res_accepted[spec.name] = result.accepted
        entry: dict[str, Any] = {"name": spec.name, "id": result.id, "queue": spec.queue, "user": spec.user,
                                 "submitted": self.now, "accepted": result.accepted, "message": result.message,
                                 "window": [spec.arrival, spec.deadline], "agent": plan.spec.agent}
        if result.reservation is not None:
            r = result.reservation
            entry["start"], entry["end"] = r.start, r.end
            entry["pieces"] = [[s, e, x.to_natural(keep_zero_scalars=False)] for s, e, x in r.pieces]
            for p in r.change_points():
                if p >= self.now:
                    self._push(p, EV_WAKE, r.id, None)
        self.reservation_log.append(entry)
        self.recorder.event(self.now, result.id, "ReservationAccepted" if result.accepted else "ReservationRejected",
                            result.message or f"{spec.name}: accepted")

    def _cluster_total(self) -> Resource:
        total = Resource()
        for n in self.nodes.values():
            total.add(n.allocatable)
        return total

    def _plan_capacity(self, qname: str) -> Resource:
        return plan_capacity(self.queues[qname], self._cluster_total())

    # ================================================================= the plan follower
    def _follow_plans(self) -> None:
        if not self.plans:
            return  # (the cluster's total is a pass over every node)
        total = self._cluster_total()
        for qname, plan in sorted(self.plans.items()):
            before = {q.name for q in self.children.get(qname, [])}
            res = plan.follow(self.queues[qname], self.now, total)
            for rid in res.removed_by_replanner:
                self.recorder.event(self.now, rid, "ReservationDeleted",
                                    f"the replanner deleted {rid}: plan capacity of {qname} dropped")
                for e in self.reservation_log:
                    if e["id"] == rid:
                        e["deletedByReplanner"] = self.now
            self.children[qname] = res.children
            now_names = {q.name for q in res.children}
            expired = sorted(before - now_names)
            if expired:
                self._expire(qname, plan, set(expired))
            if self.held:
                self._let_in(set(res.active))

    def _let_in(self, active: set[str]) -> None:
        """The held jobs whose reservation is active join the sessions in its queue (in uid order),
        as the service routes a podgroup once its reservation starts."""
        for uid in sorted(u for u, rid in self.held.items() if rid in active):
            rid = self.held.pop(uid)
            job = self.jobs[uid]
            job.queue = job.reservation_id = rid
            job.state = "active"
            self.active[uid] = job
            self._dirty.add(uid)
            self._early_dirty.add(uid)
            self.recorder.work_changed(rid)

    def _hold(self, job: SimJob, rid: str) -> None:
        """A job of an expired reservation that has not started leaves the sessions (the service's
        routing, live.py) and stays out while its reservation is not active."""
        job.state = "held"
        self.held[job.uid] = rid
        self.active.pop(job.uid, None)
        self.recorder.work_changed(job.queue)
        self._dirty.add(job.uid)
        self._early_dirty.add(job.uid)

    def _expire(self, qname: str, plan: SimPlan, expired: set[str]) -> None:
        target = default_child(qname)
        for job in sorted(self.active.values(), key=lambda j: j.uid):
            if job.queue not in expired:
                continue
            if plan.hold_unstarted and all(t.status is TaskStatus.PENDING for t in job.tasks) and not (
                    job.phase is GROUP_RUNNING or job.phase is GROUP_COMPLETED):
                self.recorder.event(self.now, job.uid, "HeldOnExpiry",
                                    f"reservation {job.queue} expired before the job started; left out")
                self._hold(job, job.queue)
            elif plan.spec.move_on_expiry:
                self.recorder.event(self.now, job.uid, "MovedOnExpiry",
                                    f"reservation {job.queue} expired; moved to {target}")
                self.recorder.work_changed(job.queue)
                self.recorder.work_changed(target)
                job.queue = target
                self._dirty.add(job.uid)
                self._early_dirty.add(job.uid)
            else:
                self.recorder.event(self.now, job.uid, "KilledOnExpiry", f"reservation {job.queue} expired; killed")
                for t in job.tasks:
                    if t.status is TaskStatus.RUNNING:
                        self._stop(job, t, restart=False)
                    elif t.status is TaskStatus.PENDING:
                        self._set_status(job, t, TaskStatus.SUCCEEDED)
                job.state = "killed"
                job.finish = self.now
                self.recorder.work_changed(job.queue)
                self.active.pop(job.uid, None)
                self._dirty.add(job.uid)
                self._early_dirty.add(job.uid)
