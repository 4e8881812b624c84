"""gang's close counts a job's pending tasks last placed (allocated or pipelined, then taken back) from
the count kept on the job (JobInfo.derive, plugins/gang.py `placed_pending`): over random in-session
moves (allocate, pipeline, their undoing, a bind), the kept count is always the walk of the tasks, and
the conditions gang writes at close are those the walk gives."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import TaskStatus
from apportion.plugins import gang
from apportion.plugins.gang import PLACED_KEY, placed_pending
from apportion.state import check

import k8s

moves = st.lists(st.tuples(st.sampled_from(["allocate", "pipeline", "undo", "bind", "ask"]), st.integers(0, 3),
                           st.integers(0, 1)), max_size=14)


def _gang_session() -> Any:
    objs = [k8s.node("n0", cpu=8), k8s.node("n1", cpu=8), k8s.podgroup("g", min_member=4, phase="Inqueue"),
            *(k8s.pod(f"p{i}", "g", cpu=1) for i in range(4))]
    return k8s.session(objs, k8s.conf("allocate", ["priority", "gang"], ["predicates"]))


def _kept(job: Any) -> int:
    return job.derive(PLACED_KEY, None, functools.partial(placed_pending, job))


@settings(max_examples=300, deadline=None)
@given(steps=moves)
def test_kept_count_is_the_walk(steps: list[tuple[str, int, int]]) -> None:
    ssn = _gang_session()
    job = ssn.jobs["ns/g"]
    tasks = sorted(job.tasks.values(), key=lambda t: t.name)
    assert _kept(job) == placed_pending(job) == 0
    for what, i, row in steps:
        t = tasks[i]
        if what == "allocate" and t.status is TaskStatus.PENDING:
            ssn.do_allocate(t, row)
        elif what == "pipeline" and t.status is TaskStatus.PENDING:
            ssn.do_pipeline(t, row)
        elif what == "undo" and t.status in (TaskStatus.ALLOCATED, TaskStatus.PIPELINED):
            ssn.undo_allocate(t)
        elif what == "bind" and t.status is TaskStatus.ALLOCATED:
            ssn.commit_bind(t)
        assert _kept(job) == placed_pending(job)


def test_a_kept_count_that_differs_fails_the_self_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The self-check is not vacuous: a count kept on the job that is not the walk's is caught at close."""
    monkeypatch.setenv(check.ENV, "1")
    ssn = _gang_session()
    job = ssn.jobs["ns/g"]
    job.derived[PLACED_KEY] = (job.version, job.phase, None, 3)
    ssn.closing = [job]
    with pytest.raises(check.StateCheckError, match="last placed"):
        next(p for _, p in ssn.plugins if isinstance(p, gang.GangPlugin)).on_session_close(ssn)
