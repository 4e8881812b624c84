"""JobInfo's maintained counters against the task walk they replace."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import (
    ALLOCATED_STATUSES,
    VALID_STATUSES,
    JobInfo,
    TaskInfo,
    TaskStatus,
    default_task_compare,
    default_task_compare_reference,
)
from apportion.resources import Resource

amounts = st.floats(min_value=0, max_value=1e6, allow_nan=False).map(lambda v: round(v, 3))
statuses = st.sampled_from(list(TaskStatus))


def _walk(job: JobInfo) -> Resource:
    r = Resource()
    for t in job.tasks.values():
        if t.status in ALLOCATED_STATUSES:
            r.add(t.resreq)
    return r


def _bits(r: Resource) -> tuple[float, float, list[tuple[str, float]]]:
    return r.cpu, r.memory, sorted(r.scalars.items())


@settings(max_examples=200, deadline=None)
@given(tasks=st.lists(st.tuples(amounts, amounts, amounts, statuses), max_size=8),
       changes=st.lists(st.tuples(st.integers(0, 7), statuses), max_size=4))
def test_allocated_sum_is_the_walk_before_and_after_status_changes(tasks, changes) -> None:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    for i, (cpu, mem, gpu, status) in enumerate(tasks):
        job.add_task(TaskInfo(uid=f"ns/t{i}", name=f"t{i}", namespace="ns", job="ns/j",
                              resreq=Resource(cpu, mem, {"nvidia.com/gpu": gpu}), status=status))
    first = job.allocated_sum()
    assert _bits(first) == _bits(_walk(job))
    assert first is not job.allocated
    first.add(Resource(1, 1))  # a caller's edit never reaches the job
    assert _bits(job.allocated_sum()) == _bits(_walk(job))
    for i, status in changes:
        if i < len(tasks):
            job.set_status(job.tasks[f"ns/t{i}"], status)
    assert _bits(job.allocated_sum()) == _bits(_walk(job))
    assert job.count(VALID_STATUSES) == sum(1 for t in job.tasks.values() if t.status in VALID_STATUSES)


@settings(max_examples=200, deadline=None)
@given(tasks=st.lists(st.tuples(statuses, st.booleans()), max_size=8),
       changes=st.lists(st.tuples(st.integers(0, 7), statuses), max_size=4))
def test_releasing_with_node_is_the_walk_before_and_after_status_changes(tasks, changes) -> None:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    for i, (status, on_node) in enumerate(tasks):
        job.add_task(TaskInfo(uid=f"ns/t{i}", name=f"t{i}", namespace="ns", job="ns/j", resreq=Resource(1, 1),
                              status=status, node_name="n0" if on_node else ""))

    def walk() -> int:
        return sum(1 for t in job.tasks.values() if t.status is TaskStatus.RELEASING and t.node_name)

    assert job.releasing_with_node_num() == walk()
    for i, status in changes:
        if i < len(tasks):
            job.set_status(job.tasks[f"ns/t{i}"], status)
        assert job.releasing_with_node_num() == walk()


@settings(max_examples=500, deadline=None)
@given(names=st.lists(st.text(alphabet=st.sampled_from(list("ab-0129\n٣ -")), max_size=8), min_size=2, max_size=2),
       creations=st.lists(st.sampled_from(["", "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"]), min_size=2,
                          max_size=2),
       uids=st.lists(st.sampled_from(["u1", "u2"]), min_size=2, max_size=2))
def test_task_compare_parses_names_once_and_answers_as_the_reference(names: list[str], creations: list[str],
                                                                    uids: list[str]) -> None:
    """default_task_compare reads each name's index from a memo (name_index); the reference parses both
    names at every comparison. Their answers agree, whatever the names (Unicode digits, newlines)."""
    a, b = (TaskInfo(uid=u, name=n, namespace="ns", job="j", resreq=Resource(), status=TaskStatus.PENDING,
                     creation=c) for n, c, u in zip(names, creations, uids, strict=True))
    for _ in range(2):  # the second time through the memo
        assert default_task_compare(a, b) == default_task_compare_reference(a, b)
        assert default_task_compare(b, a) == default_task_compare_reference(b, a)
