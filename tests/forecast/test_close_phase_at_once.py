"""The phase close gives a job, worked out in one walk over its status counts (forecast/quiet.py
`close_phase`, `PHASE_AT_ONCE`; semantics F16): the phase gang's JobReady and the session's write-back
give it (`close_phase_reference`), over random jobs: tasks in every status (releasing ones and
per-role minimums too, which the walk leaves to the reference), best-effort tasks, Unschedulable
conditions of this session or another, every phase, with gang and without."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import JobInfo, PodGroupPhase, TaskInfo, TaskStatus
from apportion.forecast import quiet
from apportion.forecast.quiet import close_phase
from apportion.framework.arguments import Arguments
from apportion.plugins.gang import GangPlugin
from apportion.resources import Resource
from apportion.state.check import ENV, StateCheckError


@st.composite
def _jobs(draw: Any) -> JobInfo:
    """A job of up to eight tasks in random statuses (on a node or not), some requesting nothing."""
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", min_available=draw(st.integers(0, 8)),
                  phase=draw(st.sampled_from(list(PodGroupPhase))))
    for i in range(draw(st.integers(0, 8))):
        empty = draw(st.booleans())
        job.add_task(TaskInfo(uid=f"ns/t{i}", name=f"t{i}", namespace="ns", job=job.uid,
                              resreq=Resource() if empty else Resource(1000.0, 1024.0),
                              status=draw(st.sampled_from(list(TaskStatus))),
                              node_name=draw(st.sampled_from(["", "n1"])), role=draw(st.sampled_from(["a", "b"]))))
    if draw(st.booleans()):
        job.min_task_member = {"a": draw(st.integers(0, 3))}
    cond = draw(st.sampled_from([None, "True", "False"]))
    if cond is not None:
        job.conditions["Unschedulable"] = (cond, "", "", draw(st.sampled_from(["session-1", "session-2"])))
    return job


@settings(max_examples=150, deadline=None)
@given(_jobs(), st.booleans(), st.booleans())
def test_the_phase_at_once_is_the_reference(job: JobInfo, gang: bool, checking: bool) -> None:
    """Random jobs, with gang and without (and the self-check on and off): the same phase."""
    plugin = GangPlugin(Arguments({}, owner="gang")) if gang else None
    with pytest.MonkeyPatch.context() as mp:
        if checking:
            mp.setenv(ENV, "1")
        else:
            mp.delenv(ENV, raising=False)
        mp.setattr(quiet, "PHASE_AT_ONCE", True)
        got = close_phase(job, plugin, "session-1")
        mp.setattr(quiet, "PHASE_AT_ONCE", False)
        assert got is close_phase(job, plugin, "session-1") is quiet.close_phase_reference(job, plugin, "session-1")


def test_the_self_check_fails_loudly_on_a_wrong_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    """A walk that disagrees with the reference is refused under the self-check."""
    monkeypatch.setenv(ENV, "1")
    monkeypatch.setattr(quiet, "close_phase_reference", lambda job, gang, uid: PodGroupPhase.UNKNOWN)
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", phase=PodGroupPhase.PENDING)
    with pytest.raises(StateCheckError, match="at once"):
        close_phase(job, None, "session-1")
