"""A closed job's texts from its kept pending task keys (`close_texts`) against the references
(`job_event`, `tasks_explained_reference`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import JobInfo, PodGroupPhase, TaskInfo, TaskStatus
from apportion.framework.close_texts import close_texts, job_event, tasks_explained_reference
from apportion.resources import Resource

#: what a session may have explained: the job, its tasks (t0..t8) and another job
_KEYS = [f"ns/t{i}" for i in range(9)] + ["ns/j", "ns/other"]


@dataclass
class _Session:
    """The session's explanations and a task order (by priority, then name reversed)."""

    explanations: dict[str, list[str]] = field(default_factory=dict)

    def task_compare(self, l: TaskInfo, r: TaskInfo) -> int:
        if l.priority != r.priority:
            return -1 if l.priority > r.priority else 1
        return (l.name < r.name) - (l.name > r.name)


_explanations = st.dictionaries(st.sampled_from(_KEYS),
                                st.lists(st.sampled_from(["", "a", "b", "quota a", "no node"]), max_size=3),
                                max_size=5)


@settings(max_examples=400, deadline=None)
@given(tasks=st.lists(st.tuples(st.sampled_from(list(TaskStatus)), st.integers(0, 2)), max_size=8),
       steps=st.lists(st.tuples(st.integers(0, 7), st.sampled_from(list(TaskStatus)),
                                st.sampled_from(list(PodGroupPhase)), _explanations), min_size=1, max_size=6))
def test_close_texts_are_the_references(tasks: list[tuple[TaskStatus, int]], steps: list[Any]) -> None:
    """Whatever the phase, the task statuses (changed between closes: the kept keys must follow) and
    what is explained (the job, some of its tasks, nothing, empty texts), the event and the pending
    tasks' explanations are the references'."""
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    for i, (status, priority) in enumerate(tasks):
        job.add_task(TaskInfo(uid=f"u{i}", name=f"t{i}", namespace="ns", job="ns/j", resreq=Resource(1, 1),
                              status=status, priority=priority))
    for i, status, phase, explained in steps:
        if i < len(tasks):
            job.set_status(job.tasks[f"u{i}"], status)
        job.phase = phase
        ssn = _Session(explained)
        assert close_texts(ssn, job, False) == (job_event(ssn, job), tasks_explained_reference(job, explained))


def test_an_unexplained_job_left_pending_names_its_count() -> None:
    """An admitted job none of whose pending tasks is explained gets the count of its pending tasks
    (the path that does not sort them), and a Pending one the enqueue text."""
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", phase=PodGroupPhase.INQUEUE)
    for i in range(3):
        job.add_task(TaskInfo(uid=f"u{i}", name=f"t{i}", namespace="ns", job="ns/j", resreq=Resource(1, 1),
                              status=TaskStatus.PENDING))
    ssn = _Session({"ns/other": ["x"]})
    assert close_texts(ssn, job, True)[0] == "3 task(s) left pending: no action of this session reached them"
    job.phase = PodGroupPhase.PENDING
    assert close_texts(ssn, job, True)[0] == "podgroup is Pending: not admitted by enqueue in this session"
