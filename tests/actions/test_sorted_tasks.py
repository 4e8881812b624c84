"""allocate's task list handed again from the job's last sort (actions/common.py, sorted_tasks): over
random runs of sessions whose pending tasks stay, are rebuilt, reordered, added or dropped, and whose
TaskOrderFn plugins are task-local or not, the order is the reference sort's, object for object."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.actions.common import SORTED_KEY, sorted_tasks, sorted_tasks_reference
from apportion.cluster.model import JobInfo, TaskInfo, TaskStatus, default_task_compare
from apportion.resources import Resource
from apportion.state import check


@dataclass
class _Opt:
    name: str


class _Session:
    """The two things sorted_tasks reads of a session: the TaskOrderFn plugins consulted and the order."""

    def __init__(self, plugins: tuple[str, ...], flip: bool) -> None:
        self.plugins = plugins
        self.flip = flip  # what a plugin that is not task-local may answer differently from one session to the next

    def consulted(self, point: str) -> list[tuple[int, Any, Any]]:
        return [(0, _Opt(name), None) for name in self.plugins]

    def task_compare(self, l: TaskInfo, r: TaskInfo) -> int:
        if "priority" in self.plugins and l.priority != r.priority:
            return -1 if l.priority > r.priority else 1
        if "other" in self.plugins and l.role != r.role:
            return (-1 if l.role < r.role else 1) * (-1 if self.flip else 1)
        return default_task_compare(l, r)


def _task(i: int, named: bool, priority: int, creation: int, role: str) -> TaskInfo:
    name = f"job-x-{i % 7}" if named else f"t{i}"
    return TaskInfo(uid=f"u{i:03d}", name=name, namespace="ns", job="ns/j", resreq=Resource(),
                    status=TaskStatus.PENDING, priority=priority, creation=f"c{creation}", role=role)


_tasks = st.builds(_task, st.integers(0, 40), st.booleans(), st.integers(0, 2), st.integers(0, 3),
                   st.sampled_from(["a", "b"]))
#: what happens to the pending list before the next session
_steps = st.sampled_from(["same", "rebuild-one", "reverse", "drop", "add"])


@settings(max_examples=300, deadline=None)
@given(first=st.lists(_tasks, min_size=1, max_size=8, unique_by=lambda t: t.uid),
       sessions=st.lists(st.tuples(_steps, st.sampled_from([(), ("priority",), ("priority", "other"), ("other",)]),
                                   st.booleans(), _tasks), min_size=1, max_size=8))
def test_the_order_handed_again_is_the_reference_sort(first: list[TaskInfo], sessions: list[Any]) -> None:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    tasks = list(first)
    for step, plugins, flip, extra in sessions:
        if step == "rebuild-one" and tasks:
            t = tasks[0]
            tasks[0] = _task(int(t.uid[1:]), True, t.priority + 1, 0, t.role)
        elif step == "reverse":
            tasks.reverse()
        elif step == "drop" and len(tasks) > 1:
            tasks.pop()
        elif step == "add" and all(t.uid != extra.uid for t in tasks):
            tasks.append(extra)
        ssn: Any = _Session(plugins, flip)
        got = sorted_tasks(ssn, job, list(tasks))
        want = sorted_tasks_reference(ssn, list(tasks))
        assert len(got) == len(want) and all(a is b for a, b in zip(got, want, strict=True))
        # the caller pops from the list it is given: that must not reach the kept order
        got.clear()


def test_a_kept_order_is_handed_again_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same task objects under a task-local order come from the job's last sort without a
    comparison; the self-check compares the kept order with a fresh sort and names a wrong one."""
    # the self-check sorts afresh (comparing), so the part counting no comparison runs without it
    monkeypatch.delenv(check.ENV, raising=False)
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    tasks = [_task(i, True, 1, 0, "a") for i in (3, 1, 2)]
    ssn: Any = _Session(("priority",), False)
    first = sorted_tasks(ssn, job, list(tasks))
    assert [t.name for t in first] == ["job-x-1", "job-x-2", "job-x-3"]
    compared: list[int] = []

    def counting(l: TaskInfo, r: TaskInfo) -> int:
        compared.append(1)
        return _Session.task_compare(ssn, l, r)

    ssn.task_compare = counting
    again = sorted_tasks(ssn, job, list(tasks))
    assert compared == [] and all(a is b for a, b in zip(again, first, strict=True))
    # a kept order that a fresh sort does not give: only the self-check can tell
    version, phase, inputs, kept = job.derived[SORTED_KEY]
    job.derived[SORTED_KEY] = (version, phase, inputs, tuple(reversed(kept)))
    monkeypatch.setenv(check.ENV, "1")
    with pytest.raises(check.StateCheckError):
        sorted_tasks(ssn, job, list(tasks))


def test_an_order_that_is_not_task_local_sorts_every_time() -> None:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    tasks = [_task(i, False, 1, 0, "ab"[i % 2]) for i in range(4)]
    for flip in (False, True, False):
        ssn: Any = _Session(("other",), flip)
        got = sorted_tasks(ssn, job, list(tasks))
        assert got == sorted(tasks, key=functools.cmp_to_key(ssn.task_compare))
    assert SORTED_KEY not in job.derived
