"""proportion: weighted fair share between queues, with all eleven of its extension points (§6.9).

Follows `plugins/proportion/proportion.go` of Volcano. At session open the plugin builds one attribute
record per queue that has at least one job (allocated, request, inqueue, elastic, capability,
realCapability, guarantee), computes every queue's `deserved` with the weighted water-filling of
`apportion.plugins.fairshare`, and registers:

- queue order (priority, then the lower share), overused, allocatable and preemptive, which keep
  allocation and reclaim inside `deserved`;
- reclaimable, which picks victims only from queues above `deserved`;
- job enqueueable / job enqueued, which admit PodGroups within `realCapability`;
- pre-predicate and the three simulate points, which work on a per-task copy of the attributes;
- allocate/deallocate event handlers, which keep `allocated` and the share current in the session.

`spec.deserved` is ignored: proportion computes deserved itself (Keep, quirk 9).
"""

from __future__ import annotations

from typing import Any

from apportion.cluster.model import JobInfo, QueueInfo, TaskInfo
from apportion.framework import extension as ep
from apportion.framework.interface import Plugin
from apportion.framework.queue_status import QueueStatus
from apportion.framework.session import EventHandler, Session
from apportion.lean_dataclass import dataclass
from apportion.plugins.fairshare import FairShareQueue, water_fill
from apportion.plugins.queue_common import (
    capability_of,
    enqueued_resource,
    job_contribution,
    queue_share,
    real_capability_flat,
    shortfall,
)
from apportion.resources import Resource

#: the key of the plugin's entry in a task's cycle state (`ssn.cycle_states[task.uid]`).
STATE_KEY = "proportion"


@dataclass
class QueueAttr:
    """proportion's `queueAttr`: one queue's bookkeeping for the session."""

    name: str
    weight: int
    deserved: Resource
    allocated: Resource
    request: Resource
    #: sum over the queue's jobs of the positive part of allocated - minResources
    elastic: Resource
    #: minResources of admitted PodGroups not yet covered by their allocated tasks
    inqueue: Resource
    #: None when spec.capability is empty
    capability: Resource | None
    real_capability: Resource
    guarantee: Resource
    share: float = 0.0

    def update_share(self) -> None:
        """updateQueueAttrShare: max over deserved's dimensions of allocated/deserved."""
        self.share = queue_share(self.allocated, self.deserved)

    def clone(self) -> QueueAttr:
        """An independent copy (the simulate extension points change copies)."""
        return QueueAttr(
            name=self.name,
            weight=self.weight,
            deserved=self.deserved.clone(),
            allocated=self.allocated.clone(),
            request=self.request.clone(),
            elastic=self.elastic.clone(),
            inqueue=self.inqueue.clone(),
            capability=None if self.capability is None else self.capability.clone(),
            real_capability=self.real_capability.clone(),
            guarantee=self.guarantee.clone(),
            share=self.share,
        )


@dataclass
class ProportionState:
    """The per-task copy of every queue's attributes that the simulate points read and change."""

    attrs: dict[str, QueueAttr]

    def clone(self) -> ProportionState:
        """An independent copy of every queue's attributes."""
        return ProportionState({name: attr.clone() for name, attr in self.attrs.items()})


def queue_allocatable(attr: QueueAttr, task: TaskInfo) -> tuple[bool, list[str]]:
    """allocated + task <= deserved on the task's requested dimensions (rule b: strict, `pods` skipped).

    The limit is deserved, not capability: a queue with spare capability whose deserved is reached
    cannot allocate (Keep, quirk 9). Returns the failing dimensions too, for explanations.
    """
    future = attr.allocated.plus(task.resreq)
    return future.less_equal_with_dimension(attr.deserved, task.resreq)


class ProportionPlugin(Plugin):
    """Volcano's proportion (`plugins/proportion/proportion.go`): weighted fair share of the cluster between queues."""

    name = "proportion"

    # ================================================================= open
    def on_session_open(self, ssn: Session) -> None:
        """Compute every queue's deserved share and register the queue order, the queue and job votes, the
        simulate points and the event handler that keeps the queues' accounts."""
        self.ssn = ssn
        self.total = ssn.total_resource.clone()
        # totalGuarantee sums the guarantees of all queues, with or without jobs
        self.total_guarantee = Resource()
        for qname in sorted(ssn.queues):
            self.total_guarantee.add(ssn.queues[qname].guarantee)
        self.attrs = self._build_attrs(ssn)
        fair = water_fill(
            self.total,
            (
                FairShareQueue(a.name, a.weight, a.request, a.real_capability, a.guarantee)
                for a in self.attrs.values()
            ),
        )
        self.rounds = fair.rounds
        for qname, attr in self.attrs.items():
            attr.deserved = fair.deserved[qname]
            attr.update_share()

        ssn.add_fn(ep.QUEUE_ORDER, self.name, self.queue_order)
        ssn.add_fn(ep.RECLAIMABLE, self.name, self.reclaimable)
        ssn.add_fn(ep.OVERUSED, self.name, self.overused)
        ssn.add_fn(ep.ALLOCATABLE, self.name, self.allocatable)
        ssn.add_fn(ep.PREEMPTIVE, self.name, self.preemptive)
        ssn.add_fn(ep.JOB_ENQUEUEABLE, self.name, self.job_enqueueable)
        ssn.add_fn(ep.JOB_ENQUEUED, self.name, self.job_enqueued)
        ssn.add_fn(ep.PRE_PREDICATE, self.name, self.pre_predicate)
        ssn.add_fn(ep.SIMULATE_ALLOCATABLE, self.name, self.simulate_allocatable)
        ssn.add_fn(ep.SIMULATE_ADD_TASK, self.name, self.simulate_add_task)
        ssn.add_fn(ep.SIMULATE_REMOVE_TASK, self.name, self.simulate_remove_task)
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate, deallocate=self.on_deallocate))

    def _build_attrs(self, ssn: Session) -> dict[str, QueueAttr]:
        """One record per queue that has a job in the session; jobs visited in uid order."""
        attrs: dict[str, QueueAttr] = {}
        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            attr = attrs.get(queue.name)
            if attr is None:
                capability = capability_of(queue.capability, queue.capability_set)
                attr = QueueAttr(
                    name=queue.name,
                    weight=queue.weight,
                    deserved=Resource(),
                    allocated=Resource(),
                    request=Resource(),
                    elastic=Resource(),
                    inqueue=Resource(),
                    capability=capability,
                    real_capability=real_capability_flat(
                        self.total, self.total_guarantee, queue.guarantee, capability
                    ),
                    guarantee=queue.guarantee.clone(),
                )
                attrs[queue.name] = attr
            contrib = job_contribution(job)
            attr.allocated.add(contrib.allocated)
            attr.request.add(contrib.request)
            attr.inqueue.add(contrib.inqueue)
            attr.elastic.add(contrib.elastic)
        return attrs

    def _attr_of_job(self, attrs: dict[str, QueueAttr], job_uid: str) -> QueueAttr | None:
        job = self.ssn.jobs.get(job_uid)
        return None if job is None else attrs.get(job.queue)

    # ================================================================= queue order and limits
    def queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        """QueueOrderFn: the higher spec.priority first, then the lower share; no further tie-break."""
        if l.priority != r.priority:
            return -1 if l.priority > r.priority else 1
        ls = self._share(l.name)
        rs = self._share(r.name)
        if ls == rs:
            return 0
        return -1 if ls < rs else 1

    def _share(self, queue: str) -> float:
        attr = self.attrs.get(queue)
        return 0.0 if attr is None else attr.share

    def overused(self, queue: QueueInfo) -> bool:
        """OverusedFn: deserved <= allocated on every dimension of deserved (rule a)."""
        attr = self.attrs.get(queue.name)
        if attr is None:
            return False
        return attr.deserved.less_equal(attr.allocated)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """AllocatableFn: the queue is Open and allocated + task stays within deserved."""
        return self._queue_allocatable(queue, task, "it takes no new tasks")

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """PreemptiveFn: the allocatable test (Open state included) decides whether the queue may reclaim.

        Volcano registers the same `queueAllocatable` closure for both points, so a queue that is not
        Open (Closing, Closed, Unknown) never reclaims.
        """
        return self._queue_allocatable(queue, task, "it cannot reclaim")

    def _queue_allocatable(self, queue: QueueInfo, task: TaskInfo, refusal: str) -> bool:
        """Volcano's `queueAllocatable`: the state first (it reads no attribute), then deserved."""
        if not queue.is_open():
            self.ssn.explain(task.key, f"queue {queue.name} is {queue.state}, not Open: {refusal}")
            return False
        attr = self.attrs.get(queue.name)
        if attr is None:
            return True
        ok, failed = queue_allocatable(attr, task)
        if not ok:
            used = attr.allocated.plus(task.resreq)
            self.ssn.explain(task.key, shortfall(queue.name, used, attr.deserved, failed, "deserved"))
        return ok

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """ReclaimableFn: victims only from queues above deserved, until their working allocated is not.

        Candidates are taken in the order given (victim order, §4.7 rule 3); each queue's allocated is
        copied once and every victim's request comes off the copy, so a queue is never reclaimed below
        its deserved by more than its last victim.
        """
        working: dict[str, Resource] = {}
        victims: list[TaskInfo] = []
        for c in candidates:
            job = self.ssn.jobs.get(c.job)
            if job is None:
                continue
            attr = self.attrs.get(job.queue)
            if attr is None:
                continue
            allocated = working.get(job.queue)
            if allocated is None:
                allocated = working[job.queue] = attr.allocated.clone()
            if not allocated.less_equal(attr.deserved):
                allocated.sub(c.resreq)
                victims.append(c)
        return victims, ep.PERMIT

    # ================================================================= admission
    def job_enqueueable(self, job: JobInfo) -> int:
        """JobEnqueueableFn: minResources + allocated + inqueue - elastic <= realCapability (rule b)."""
        queue = self.ssn.queues.get(job.queue)
        if queue is None:
            return ep.ABSTAIN
        # Volcano reads the state before the queue's attributes
        if not queue.is_open():
            self.ssn.explain(job.uid, f"queue {queue.name} is {queue.state}, not Open: it admits no PodGroup")
            return ep.REJECT
        attr = self.attrs.get(job.queue)
        if attr is None:
            return ep.ABSTAIN
        if job.min_resources is None:
            return ep.PERMIT
        min_req = job.min_resources
        # elastic is what running jobs hold beyond their minimum and could give back; Volcano's Sub would
        # assert here, but the sum can only dip below elastic if allocate ran before enqueue.
        want = min_req.plus(attr.allocated).add(attr.inqueue).sub_without_assert(attr.elastic)
        ok, failed = want.less_equal_with_dimension(attr.real_capability, min_req)
        if ok:
            return ep.PERMIT
        self.ssn.explain(job.uid, shortfall(queue.name, want, attr.real_capability, failed, "realCapability"))
        return ep.REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        """JobEnqueuedFn: reserve the admitted job's full minResources (less gated pods) in inqueue."""
        attr = self.attrs.get(job.queue)
        if attr is not None:
            attr.inqueue.add(enqueued_resource(job))

    # ================================================================= per-task simulation
    def pre_predicate(self, task: TaskInfo) -> str | None:
        """PrePredicateFn: give the task its own deep copy of every queue's attributes; never fails."""
        if not self.ssn.simulation_state_needed:
            return None  # nothing will read the copy this session
        state = ProportionState({name: attr.clone() for name, attr in self.attrs.items()})
        self.ssn.cycle_states.setdefault(task.uid, {})[STATE_KEY] = state
        return None

    @staticmethod
    def _state(state: dict[str, Any]) -> ProportionState | None:
        st = state.get(STATE_KEY)
        return st if isinstance(st, ProportionState) else None

    def simulate_allocatable(self, queue: QueueInfo, task: TaskInfo, state: dict[str, Any]) -> bool:
        """SimulateAllocatableFn: the allocatable test on the task's copy; no copy means no (Keep, §5.5)."""
        st = self._state(state)
        if st is None:
            return False
        attr = st.attrs.get(queue.name)
        if attr is None:
            return False
        return queue_allocatable(attr, task)[0]

    def simulate_add_task(self, state: dict[str, Any], task: TaskInfo, row: int) -> None:
        """SimulateAddTaskFn: charge a task (a reprieved victim) to its queue in the copy."""
        st = self._state(state)
        if st is not None:
            self._charge(st.attrs, task, +1)

    def simulate_remove_task(self, state: dict[str, Any], task: TaskInfo, row: int) -> None:
        """SimulateRemoveTaskFn: take a task (a would-be victim) off its queue in the copy."""
        st = self._state(state)
        if st is not None:
            self._charge(st.attrs, task, -1)

    def _charge(self, attrs: dict[str, QueueAttr], task: TaskInfo, sign: int) -> None:
        """Add (+1) or take off (-1) the task's request to its queue's allocated in `attrs` (the live map
        or a task's copy) and refresh the share: the one body of the simulate points and the events."""
        attr = self._attr_of_job(attrs, task.job)
        if attr is None:
            return
        if sign > 0:
            attr.allocated.add(task.resreq)
        else:
            attr.allocated.sub(task.resreq)
        attr.update_share()

    # ================================================================= events
    def on_allocate(self, task: TaskInfo) -> None:
        """AllocateFunc: allocate, pipeline and undone evictions charge the queue at once."""
        self._charge(self.attrs, task, +1)

    def on_deallocate(self, task: TaskInfo) -> None:
        """DeallocateFunc: evictions and undone placements release the queue at once."""
        self._charge(self.attrs, task, -1)

    # ================================================================= output
    def queue_report(self, ssn: Session) -> dict[str, QueueStatus]:
        """Every tracked queue's attributes (the cycle output's `queues` map is their view)."""
        out: dict[str, QueueStatus] = {}
        for qname in sorted(self.attrs):
            attr = self.attrs[qname]
            queue = ssn.queues[qname]
            out[qname] = QueueStatus(
                deserved=attr.deserved, allocated=attr.allocated, request=attr.request, inqueue=attr.inqueue,
                elastic=attr.elastic, capability=attr.capability, real_capability=attr.real_capability,
                guarantee=attr.guarantee, share=attr.share,
                parent=queue.parent or ("" if qname == "root" else "root"), state=queue.state,
            )
        return out


__all__ = ["STATE_KEY", "ProportionPlugin", "ProportionState", "QueueAttr", "queue_allocatable"]
