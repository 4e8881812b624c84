"""gang's job validity answers from the job's kept answer without JobInfo.derive's call when it may
(plugins/gang.py): over random jobs whose task statuses, phase and minimums change between questions, the
answer is always the one computed afresh."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import JobInfo, PodGroupPhase, TaskInfo, TaskStatus
from apportion.framework.arguments import Arguments
from apportion.plugins.gang import GangPlugin
from apportion.resources import Resource

statuses = st.sampled_from(list(TaskStatus))
phases = st.sampled_from(list(PodGroupPhase))
roles = st.sampled_from(["", "ps", "worker"])


@settings(max_examples=300, deadline=None)
@given(tasks=st.lists(st.tuples(roles, statuses), min_size=1, max_size=6),
       steps=st.lists(st.one_of(
           st.tuples(st.just("status"), st.integers(0, 5), statuses),
           st.tuples(st.just("phase"), phases),
           st.tuples(st.just("min"), st.integers(0, 6)),
           st.tuples(st.just("roles"), st.dictionaries(roles, st.integers(0, 3), max_size=2)),
           st.tuples(st.just("ask"))), max_size=12))
def test_kept_validity_is_the_fresh_answer(tasks: list[tuple[str, TaskStatus]], steps: list[tuple[Any, ...]]) -> None:
    gang = GangPlugin(Arguments({}, owner="gang"))
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", min_available=len(tasks))
    for i, (role, status) in enumerate(tasks):
        job.add_task(TaskInfo(uid=f"ns/t{i}", name=f"t{i}", namespace="ns", job="ns/j", role=role,
                              resreq=Resource(1000, 1), status=status))
    assert gang.job_valid(job) == gang._job_valid(job)
    for step in steps:
        if step[0] == "status" and step[1] < len(tasks):
            job.set_status(job.tasks[f"ns/t{step[1]}"], step[2])
        elif step[0] == "phase":
            job.phase = step[1]
        elif step[0] == "min":
            job.min_available = step[1]
        elif step[0] == "roles":
            job.min_task_member = dict(step[1])
        assert gang.job_valid(job) == gang._job_valid(job)
        assert gang.job_valid(job) == gang._job_valid(job)
