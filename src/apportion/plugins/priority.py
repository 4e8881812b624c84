"""priority: task and job order by priority, preemption only of lower priority, starving jobs (§6.1)."""

from __future__ import annotations

from apportion.cluster.model import JobInfo, TaskInfo
from apportion.framework import extension as ep
from apportion.framework.interface import Plugin
from apportion.framework.session import Session


class PriorityPlugin(Plugin):
    """Volcano's priority (`plugins/priority/priority.go`): job and task order by PriorityClass, preemption by priority."""

    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        """Register the job and task orders, job starving and the priority-based preemption filter."""
        self.ssn = ssn
        ssn.add_fn(ep.TASK_ORDER, self.name, self.task_order)
        ssn.add_fn(ep.JOB_ORDER, self.name, self.job_order)
        ssn.add_fn(ep.PREEMPTABLE, self.name, self.preemptable)
        ssn.add_fn(ep.JOB_STARVING, self.name, self.job_starving)

    def task_order(self, l: TaskInfo, r: TaskInfo) -> int:
        """TaskOrderFn: higher task priority first."""
        if l.priority == r.priority:
            return 0
        return -1 if l.priority > r.priority else 1

    def job_order(self, l: JobInfo, r: JobInfo) -> int:
        """JobOrderFn: higher job priority first."""
        if l.priority == r.priority:
            return 0
        return -1 if l.priority > r.priority else 1

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """PreemptableFn: other jobs only if strictly lower job priority; same job by task priority."""
        pjob = self.ssn.jobs[preemptor.job]
        victims = []
        for c in candidates:
            if c.job != preemptor.job:
                cjob = self.ssn.jobs.get(c.job)
                if cjob is not None and cjob.priority < pjob.priority:
                    victims.append(c)
            elif c.priority < preemptor.priority:
                victims.append(c)
        return victims, ep.PERMIT

    def job_starving(self, job: JobInfo) -> bool:
        """JobStarvingFn: ready + waiting < all tasks."""
        return job.ready_num() + job.waiting_num() < len(job.tasks)
