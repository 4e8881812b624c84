"""A forecast's start job built the first time from its template's bookkeeping (`DumpObjects.build_fast`,
forecast/sim.py; docs/semantics.md F17).

A forecast builds each of its start jobs at the first snapshot, before the simulation changed any of
its tasks, and `build_job` (forecast/job_build.py, the reference here) walks all of them: each task's
status and node, the task map, the counts per status, `allocated` and the best-effort and gated
counts. `build_first` gives the same object taking the counts from the template, which the kube build
made by adding those very tasks (`add_task`), copied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from apportion.cluster.model import RUNNING, JobInfo, TaskInfo
from apportion.forecast import job_build
from apportion.forecast.job_build import copy_task, copy_task_reference
from apportion.simulation.jobs import SimJob
from apportion.state import check

#: build a job none of whose tasks the simulation changed with its template's bookkeeping (`build_first`);
#: False: `build_job` (the reference)
FIRST_AS_STATE = True


def build_first(sj: SimJob, tpl: JobInfo, consts: tuple[Any, ...], templates: Sequence[TaskInfo],
                starts: bool) -> JobInfo | None:
    """What `build_job` gives for `sj` with no last object to hold tasks of, while no task of the job
    changed status in the simulation (none dropped its state's status, `DumpObjects.status_changed`);
    None when the template `tpl`'s bookkeeping is not that of its tasks as added (below).

    Each task is then its template's copy with the template's status and node (the state's, which
    `build_job` gives a task the simulation has not changed: the start state gives each template its
    task index's place, forecast/start.py), so the counts, `allocated`, the best-effort and gated
    counts `build_job` makes are `add_task`'s over the templates in their order (`build_job` does its
    bookkeeping in `add_task`'s order, test_job_build.py): what `tpl` holds when it was made by adding
    those very tasks in that order and nothing since (`allocated_as_added`, `version` the number of
    tasks: no status set, no task replaced), from no counts and a zero `allocated` (the kube build's
    JobInfo; the self-check compares every fast build with `DumpObjects.build`, which adds them)."""
    n = len(templates)
    if not (tpl.allocated_as_added and tpl.version == n == len(tpl.tasks) == len(sj.tasks)
            and list(tpl.tasks.values()) == templates):
        return None
    tasks: dict[str, TaskInfo] = {}
    running = RUNNING
    copy = copy_task if job_build.COPY_WRITTEN else copy_task_reference
    for st, tt in zip(sj.tasks, templates):
        status = tt.status
        t = copy(tt, status, tt.node_name)
        if starts and status is running and t.started_at is None:
            t.started_at = st.start
        tasks[tt.uid] = t
    uid, name, namespace, min_available, priority, pcn, creation, schedule_start = consts
    mr, log = tpl.min_resources, tpl.log
    ji = JobInfo(uid, name, namespace, sj.queue, min_available, dict(tpl.min_task_member),
                 None if mr is None else mr.clone(), priority, pcn, sj.phase, creation, dict(tpl.annotations),
                 tasks, {}, {}, set(), "", schedule_start, tpl.allocated.clone(), dict(tpl.counts), tpl.pending_be,
                 True, tpl.gated_tasks, n, {}, log, tpl.notes)
    if n and log is not None:
        log.add(sj.uid)
    return ji


_JOB_COMPARED = tuple(f.name for f in fields(JobInfo) if f.name not in ("tasks", "allocated", "log", "notes"))


def check_build(ji: JobInfo, ref: JobInfo) -> None:
    """The self-check: a job built by `build_first` is `build_job`'s (`ref`, built with no tasks to
    hold again): every field equal, the maps in the same order, `allocated` to the bit with its
    scalars in the same order, the tasks equal field by field."""
    bad = [name for name in _JOB_COMPARED if getattr(ji, name) != getattr(ref, name)]
    if list(ji.counts) != list(ref.counts):
        bad.append("counts' order")
    a, b = ji.allocated, ref.allocated
    if (a.cpu.hex(), a.memory.hex(), [(n, v.hex()) for n, v in a.scalars.items()]) != (
            b.cpu.hex(), b.memory.hex(), [(n, v.hex()) for n, v in b.scalars.items()]):
        bad.append("allocated")
    if list(ji.tasks) != list(ref.tasks):
        bad.append("tasks")
    else:
        for key, t in ji.tasks.items():
            u = ref.tasks[key]
            if t is not u and any(getattr(t, s) is not getattr(u, s) and getattr(t, s) != getattr(u, s)
                                  for s in TaskInfo.__slots__):
                bad.append(f"task {key}")
    if bad:
        raise check.StateCheckError(f"{check.ENV}: job {ji.uid} built from its template's bookkeeping differs from "
                                    f"build_job's in {', '.join(bad)}")
