"""The self-check of a forecast's job objects (`APPORTION_CHECK_STATE=1`): a job handed out again, or
built fast (forecast/sim.py `DumpObjects`), equals a fresh build, and the tasks it reuses from its last
object start when a fresh build's would (docs/semantics.md K36)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields

from apportion.cluster.model import JobInfo, TaskInfo, TaskStatus
from apportion.simulation.jobs import SimJob
from apportion.state import check
from apportion.state.equality import same

#: what a kept job's tasks carry from the session they were built for: session open fills them in
#: (rows, compared columns, status at open) and the simulator gives a running task its start
_TASK_CARRIED = frozenset(("vec", "cols", "initial_status", "last_tx_status", "started_at", "kube_requests"))


def check_as_built(ji: JobInfo, fresh: JobInfo, what: str = "handed out again") -> None:
    """The self-check: a job handed out again (kept or given its new phase), or built fast, equals a
    fresh build, field by field and task by task, but for what plugins derived and what sessions fill
    in on tasks."""
    for f in fields(JobInfo):
        if f.name in ("derived", "log", "notes"):
            continue
        a, b = getattr(ji, f.name), getattr(fresh, f.name)
        if f.name == "tasks":
            ok = list(a) == list(b) and all(
                same(getattr(a[k], g.name), getattr(b[k], g.name)) for k in a for g in fields(TaskInfo)
                if g.name not in _TASK_CARRIED)
        else:
            ok = same(a, b)
        if not ok:
            raise check.StateCheckError(f"{check.ENV}: job {ji.uid} {what} differs from a fresh build in "
                                        f"{f.name}")


def check_starts(ji: JobInfo, sj: SimJob, template_tasks: Sequence[TaskInfo]) -> None:
    """The self-check of the tasks' starts, which `check_as_built` leaves out (a session fills them
    in): each task of a job built fast starts as a fresh build's does once `give_starts` has given it
    its start, the template's, or for a running task without one the simulation's (a fresh task has
    none yet and gets it there; a task reused from the last object has it already)."""
    for st, tt in zip(sj.tasks, template_tasks, strict=True):
        t = ji.tasks[tt.uid]
        if t.started_at == tt.started_at:
            continue
        if tt.started_at is None and t.status is TaskStatus.RUNNING and t.started_at == st.start:
            continue
        fresh = tt.started_at if tt.started_at is not None else st.start
        raise check.StateCheckError(f"{check.ENV}: task {t.key} of job {ji.uid} built fast starts at "
                                    f"{t.started_at}, a fresh build at {fresh}")
