"""allocate's answers kept from session to session and its sorts by key (docs/semantics.md K48): the visit's
JobValid and task-to-try answers kept on the job (actions/allocate.py `visit_verdict`), the task lists
sorted by key (actions/common.py `sorted_tasks_keyed`) and the touched rows' answers recorded at once
(framework/placement.py `_Answers.update_rows`) decide every forecast as the reference paths do."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fit import start_of
from test_forecast_sim import busy_dumps
from test_quiet import _answer

from apportion.actions import allocate, common
from apportion.actions.allocate import VISIT_KEY, visit_verdict
from apportion.actions.common import sorted_tasks_keyed
from apportion.cluster.model import JobInfo, PodGroupPhase, TaskInfo, TaskStatus, default_task_compare
from apportion.forecast.sim import forecast_simulator
from apportion.framework import placement
from apportion.resources import Resource
from apportion.simulation.engine import Simulator
from apportion.state import check


def _run(objs: list[dict[str, Any]], conf_text: str | None, kept: bool, monkeypatch: pytest.MonkeyPatch,
         ) -> Simulator:
    monkeypatch.setattr(allocate, "KEEP_VISIT_VERDICTS", kept)
    monkeypatch.setattr(common, "KEYED_TASK_SORT", kept)
    monkeypatch.setattr(placement, "UPDATE_AT_ONCE", kept)
    # every refresh of more than one row goes over arrays: `update_rows` at every such refresh
    monkeypatch.setattr(placement, "ROW_REFRESH", 1 if kept else 12)
    sim = forecast_simulator(start_of(objs, conf_text), horizon=3 * 3600.0)
    sim.run()
    return sim


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(case=busy_dumps())
def test_kept_answers_change_no_forecast(case: tuple[list[dict[str, Any]], str | None],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    objs, conf_text = case
    assert _answer(_run(objs, conf_text, True, monkeypatch)) == _answer(_run(objs, conf_text, False, monkeypatch))


class _Session:
    """What `visit_verdict` reads of a session: JobValid (gang's rule: enough valid tasks), counted."""

    def __init__(self) -> None:
        self.asked = 0

    def job_valid(self, job: JobInfo) -> tuple[bool, str]:
        self.asked += 1
        valid = sum(1 for t in job.tasks.values() if t.status is not TaskStatus.FAILED)
        return (True, "") if valid >= job.min_available else (False, f"{valid} valid")


def _task(i: int, status: TaskStatus, gated: bool = False, cpu: float = 1.0) -> TaskInfo:
    return TaskInfo(uid=f"u{i}", name=f"j-t-{i}", namespace="ns", job="ns/j", resreq=Resource(cpu, 0.0),
                    status=status, gated=gated)


def test_the_visit_verdict_is_kept_while_the_job_stays() -> None:
    ssn: Any = _Session()
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", min_available=2, phase=PodGroupPhase.INQUEUE)
    for t in (_task(0, TaskStatus.PENDING, gated=True), _task(1, TaskStatus.RUNNING)):
        job.add_task(t)
    assert visit_verdict(ssn, job) == (True, "", False)  # the only pending task is gated
    assert visit_verdict(ssn, job) == (True, "", False) and ssn.asked == 1
    job.add_task(_task(2, TaskStatus.PENDING))  # a new task: the version moves
    assert visit_verdict(ssn, job) == (True, "", True) and ssn.asked == 2
    job.set_status(job.tasks["u1"], TaskStatus.FAILED)
    assert visit_verdict(ssn, job) == (True, "", True) and ssn.asked == 3
    job.min_available = 3  # the minimums are part of the test
    assert visit_verdict(ssn, job) == (False, "2 valid", True) and ssn.asked == 4
    job.set_phase(PodGroupPhase.RUNNING)
    assert visit_verdict(ssn, job) == (False, "2 valid", True) and ssn.asked == 5
    assert visit_verdict(ssn, job) == (False, "2 valid", True) and ssn.asked == 5
    # other JobValid plugins consulted (another configuration over the same object): asked again
    assert visit_verdict(ssn, job, ("gang",)) == (False, "2 valid", True) and ssn.asked == 6
    assert visit_verdict(ssn, job, ("gang",)) == (False, "2 valid", True) and ssn.asked == 6
    # a kept verdict that a fresh one does not give: only the self-check can tell
    version, phase, minimums, _ = job.derived[VISIT_KEY]
    job.derived[VISIT_KEY] = (version, phase, minimums, (True, "", True))
    assert visit_verdict(ssn, job, ("gang",)) == (True, "", True)
    with pytest.raises(check.StateCheckError):
        visit_verdict(ssn, job, ("gang",), True)


def _compare(priority: bool) -> Any:
    def compare(l: TaskInfo, r: TaskInfo) -> int:
        if priority and l.priority != r.priority:
            return -1 if l.priority > r.priority else 1
        return default_task_compare(l, r)
    return compare


_names = st.sampled_from(["a-b-1", "a-b-2", "a-b-10", "x-y-z-3", "a-b-02", "a-b--1", "plain", "a-1"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_names, st.integers(0, 2), st.sampled_from(["c1", "c2", "c10"])), max_size=10),
       st.booleans())
def test_a_sort_by_key_is_the_sort_by_the_task_order(fields: list[tuple[str, int, str]], priority: bool) -> None:
    tasks = [TaskInfo(uid=f"u{i:02d}"[::-1], name=name, namespace="ns", job="ns/j", resreq=Resource(),
                      status=TaskStatus.PENDING, priority=p, creation=c) for i, (name, p, c) in enumerate(fields)]
    got = sorted_tasks_keyed(list(tasks), priority)
    want = sorted(tasks, key=functools.cmp_to_key(_compare(priority)))
    if any(t.name in ("plain", "a-1") for t in tasks):
        assert got is None  # a name without an index: the comparison is left to the reference
    else:
        assert got is not None and all(a is b for a, b in zip(got, want, strict=True)) and len(got) == len(want)
