"""What proportion and capacity share: a job's contribution to its queue, realCapability (flat), the
queue share, and why-pending messages that name the queue, the resource and the shortfall."""

from __future__ import annotations

from apportion.cluster.model import (
    ALLOCATED_STATUSES,
    GROUP_INQUEUE,
    GROUP_RUNNING,
    PENDING,
    JobInfo,
)
from apportion.lean_dataclass import dataclass
from apportion.resources import (
    CPU,
    EPHEMERAL,
    MEMORY,
    MIN_RESOURCE,
    UNLIMITED,
    Resource,
    format_amount,
    share,
)


@dataclass
class JobContribution:
    """A job's share of its queue's allocated, request, inqueue and elastic at session open."""

    allocated: Resource
    request: Resource
    inqueue: Resource
    elastic: Resource


def deduct_gated(job: JobInfo) -> Resource:
    """DeductSchGatedResources: minResources less the requests of scheduling-gated pending pods.

    Gated pods that are all best-effort deduct nothing; each dimension is clamped at 0 and only the
    scalars minResources lists are reduced.
    """
    assert job.min_resources is not None
    out = job.min_resources.clone()
    gated = job.gated_request()
    if gated.is_empty():
        return out
    out.cpu = max(out.cpu - gated.cpu, 0.0)
    out.memory = max(out.memory - gated.memory, 0.0)
    for name, value in out.scalars.items():
        if name in gated.scalars:
            out.scalars[name] = max(value - gated.scalars[name], 0.0)
    return out


def inqueue_resource(job: JobInfo) -> Resource:
    """GetInqueueResource: max(0, minResources - allocated) on minResources' dimensions, gated pods
    deducted, ephemeral-storage not counted."""
    # plugins/capacity/charged.py's `_settled_amounts` repeats this arithmetic (and `charges_inqueue`
    # the rule in `_contribution` below) for jobs without Pending tasks: change them together (K50)
    # only read here: without gated pods there is nothing to deduct, and no copy to make
    minres = deduct_gated(job) if job.gated_tasks else job.min_resources
    assert minres is not None
    out = Resource()
    for n in minres.names():
        if n == EPHEMERAL or not minres.has(n):
            continue
        v = minres.get(n) - job.allocated.get(n)
        if v > 0:
            out.set(n, v)
    return out


#: a job with no Pending task has its request summed from the allocated-status tasks alone, the same
#: adds in the same order as its allocated: both are taken from `JobInfo.allocated_sum` (a forecast's
#: job built again as one of its tasks finished has its running sum as built); False: only a job whose
#: every task is allocated (the reference, property-tested)
REQUEST_IS_ALLOCATED = True


def job_contribution(job: JobInfo) -> JobContribution:
    """allocated = allocated-status tasks; request = allocated + Pending tasks; inqueue per phase;
    elastic = ExceededPart(allocated, minResources). Kept on the job (JobInfo.derive): read it, do not
    change it."""
    return job.derive("contribution", (job.min_available, job.min_resources), lambda: _contribution(job))


def _contribution(job: JobInfo) -> JobContribution:
    n_allocated = job.count(ALLOCATED_STATUSES)
    if n_allocated == len(job.tasks) or (REQUEST_IS_ALLOCATED and not job.counts.get(PENDING)):
        # no Pending task: both sums add the requests of the allocated tasks in the same order
        allocated = job.allocated_sum()
        request = allocated.clone()
    else:
        allocated = Resource()
        request = Resource()
        for t in job.tasks.values():
            if t.status in ALLOCATED_STATUSES:
                allocated.add(t.resreq)
                request.add(t.resreq)
            elif t.status is PENDING:
                request.add(t.resreq)
    inqueue = Resource()
    running_gang = job.phase is GROUP_RUNNING and n_allocated >= job.min_available
    if job.min_resources is not None and (job.phase is GROUP_INQUEUE or running_gang):
        inqueue = inqueue_resource(job)
    return JobContribution(allocated, request, inqueue, job.elastic())


def enqueued_resource(job: JobInfo) -> Resource:
    """What the JobEnqueued callback adds to inqueue: the full minResources less gated pods."""
    if job.min_resources is None:
        return Resource()
    return deduct_gated(job)


def capability_of(spec_capability: Resource, capability_set: bool) -> Resource | None:
    """A non-empty spec.capability with cpu/memory <= 0 or absent made unlimited; None if empty."""
    if not capability_set:
        return None
    cap = spec_capability.clone()
    if cap.cpu <= 0:
        cap.cpu = UNLIMITED
    if cap.memory <= 0:
        cap.memory = UNLIMITED
    return cap


def real_capability_flat(total: Resource, total_guarantee: Resource, guarantee: Resource,
                         capability: Resource | None) -> Resource:
    """realCapability = min(capability, ExceededPart(total, totalGuarantee) + guarantee); dimensions the
    capability does not list stay unchanged."""
    real = total.exceeded_part(total_guarantee).add(guarantee)
    if capability is not None:
        real.min_dimension_resource(capability, "infinity")
    return real


def queue_share(allocated: Resource, deserved: Resource) -> float:
    """updateQueueAttrShare: max over deserved's names >= 0.1 (pods included) of Share."""
    if not allocated.cpu and not allocated.memory and not any(allocated.scalars.values()):
        return 0.0  # Share(0, d) is 0 for every d: most queues of a large cluster are idle
    # `queue_share_reference` unrolled (every allocate event refreshes a share per queue on the path):
    # a name >= 0.1 is never 0, so Share is the division; `max(res, s)` keeps res unless s > res
    res = 0.0
    d = deserved.cpu
    if d >= MIN_RESOURCE:
        s = allocated.cpu / d
        if s > res:
            res = s
    d = deserved.memory
    if d >= MIN_RESOURCE:
        s = allocated.memory / d
        if s > res:
            res = s
    if deserved.scalars:
        have = allocated.scalars
        for n, d in deserved.scalars.items():
            if d >= MIN_RESOURCE:
                s = have.get(n, 0.0) / d
                if s > res:
                    res = s
    return res


def queue_share_reference(allocated: Resource, deserved: Resource) -> float:
    """`queue_share` as Volcano writes it (the fast one is tested against this)."""
    if not allocated.cpu and not allocated.memory and not any(allocated.scalars.values()):
        return 0.0
    res = 0.0
    for n in deserved.resource_names():
        res = max(res, share(allocated.get(n), deserved.get(n)))
    return res


def shortfall(queue: str, used: Resource, limit: Resource | None, failed: list[str], label: str,
              what: str = "") -> str:
    """`queue team-a: cpu 72 > realCapability 70 (short by 2)` for each failing dimension."""
    parts = []
    for n in failed:
        lim = 0.0 if limit is None else limit.get(n)
        parts.append(
            f"{n} {format_amount(n, used.get(n))} > {label} {format_amount(n, lim)} "
            f"(short by {format_amount(n, used.get(n) - lim)})"
        )
    prefix = f"queue {queue}: " + (f"{what}: " if what else "")
    return prefix + ", ".join(parts)


__all__ = [
    "CPU",
    "MEMORY",
    "JobContribution",
    "capability_of",
    "deduct_gated",
    "enqueued_resource",
    "inqueue_resource",
    "job_contribution",
    "queue_share",
    "real_capability_flat",
    "shortfall",
]
