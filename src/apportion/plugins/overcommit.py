"""overcommit: admit PodGroups while the cluster, over-committed by a factor, still has room (§6.8)."""

from __future__ import annotations

from apportion.cluster.model import ALLOCATED_STATUSES, JobInfo, PodGroupPhase
from apportion.framework import extension as ep
from apportion.framework.interface import Plugin
from apportion.framework.session import Session
from apportion.plugins.queue_common import deduct_gated
from apportion.resources import Resource, format_amount

DEFAULT_FACTOR = 1.2


class OvercommitPlugin(Plugin):
    """Volcano's overcommit (`plugins/overcommit/overcommit.go`): enqueue admits up to the cluster times a factor."""

    name = "overcommit"

    def on_session_open(self, ssn: Session) -> None:
        """Take the overcommit factor and register the enqueue vote and its bookkeeping (JobEnqueued)."""
        self.ssn = ssn
        factor = self.arguments.get_float("overcommit-factor", DEFAULT_FACTOR)
        self.factor = DEFAULT_FACTOR if factor < 1 else factor
        used = ssn.table.resource(ssn.table.used.sum(axis=0)) if len(ssn.nodes) else Resource()
        # idle = total x factor - used; may go negative
        self.idle = ssn.total_resource.clone().multi(self.factor).sub_without_assert(used)
        self.inqueue = Resource()
        for job in ssn.jobs.values():
            if job.min_resources is None:
                continue
            if job.phase is PodGroupPhase.INQUEUE:
                self.inqueue.add(deduct_gated(job))
            elif job.phase is PodGroupPhase.RUNNING and job.count(ALLOCATED_STATUSES) >= job.min_available:
                self.inqueue.add(job.min_resources.exceeded_part(job.allocated))
        ssn.add_fn(ep.JOB_ENQUEUEABLE, self.name, self.job_enqueueable)
        ssn.add_fn(ep.JOB_ENQUEUED, self.name, self.job_enqueued)

    def job_enqueueable(self, job: JobInfo) -> int:
        """JobEnqueueableFn: inqueue + minResources <= total x factor - used, on minResources' dimensions."""
        if job.min_resources is None:
            return ep.PERMIT
        want = self.inqueue.plus(job.min_resources)
        ok, failed = want.less_equal_with_dimension(self.idle, job.min_resources)
        if ok:
            return ep.PERMIT
        parts = [
            f"{n} {format_amount(n, want.get(n))} > {format_amount(n, max(self.idle.get(n), 0))} "
            f"(short by {format_amount(n, want.get(n) - self.idle.get(n))})"
            for n in failed
        ]
        self.ssn.explain(
            job.uid,
            f"resource in cluster is overused (overcommit factor {self.factor:g}): inqueue + minResources "
            + ", ".join(parts),
        )
        return ep.REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        """JobEnqueuedFn: reserve the job's minResources."""
        if job.min_resources is not None:
            self.inqueue.add(job.min_resources)
