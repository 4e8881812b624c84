"""A forecast's job objects built again from their templates, fast (`DumpObjects.build_fast`, forecast/sim.py).

A forecast builds some 2,700 job objects a run: its 1,000 start jobs for the first session, then a
job each time a task of it starts or ends (most often from the early quiet test). `build_job` gives
what `DumpObjects.build` (the reference) gives, field by field, with the work per build cut to what
differs between two builds of one job: each task made anew a copy of its template's fields as a
fresh task starts with them, written out slot by slot (`copy_task`), the tasks of the job's last
object that a fresh build would give alike handed out again (`task_again`, docs/semantics.md K36), `add_task`'s bookkeeping done
in the loop in its order (so that `allocated` sums alike), and the JobInfo made in one call from the
template's fields that every build takes as they are (`job_consts`, taken once per job).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from apportion.cluster.model import (
    ALLOCATED_STATUSES,
    PENDING,
    RUNNING,
    SUCCEEDED,
    JobInfo,
    TaskInfo,
    TaskStatus,
)
from apportion.resources import Resource
from apportion.simulation.jobs import SimJob, SimTask

#: TaskInfo's fields in __init__ order: a copy is TaskInfo(*task_fields(t)), not `dataclasses.replace`,
#: which builds keyword arguments field by field (benchmarks/README.md)
task_fields = operator.attrgetter(*(f.name for f in fields(TaskInfo)))
#: a JobInfo's fields as a tuple, in the dataclass's order (what a build passes by position)
job_fields = operator.attrgetter(*(f.name for f in fields(JobInfo)))

_TASK_NAMES = tuple(f.name for f in fields(TaskInfo))
#: what a fresh task starts without (a session fills it in), in __init__ order: the five are
#: neighbours there, so a fresh task's fields are the template's before them, these, and the ones after
_UNFILLED = (("vec", None), ("cols", None), ("nominated_node", ""), ("initial_status", None),
             ("last_tx_status", None))
_FIRST = _TASK_NAMES.index(_UNFILLED[0][0])
_AFTER = _FIRST + len(_UNFILLED)
if _TASK_NAMES[_FIRST:_AFTER] != tuple(n for n, _ in _UNFILLED):
    raise ImportError("TaskInfo's fields a session fills in are no longer neighbours: see forecast/job_build.py")
_BEFORE_UNFILLED = operator.attrgetter(*_TASK_NAMES[:_FIRST])
_AFTER_UNFILLED = operator.attrgetter(*_TASK_NAMES[_AFTER:])
_BLANK = tuple(v for _, v in _UNFILLED)
_PLACE = {n: i for i, n in enumerate(_TASK_NAMES)}


def fresh_fields(t: TaskInfo) -> tuple[Any, ...]:
    """A template task's fields in __init__ order as a fresh copy (`fresh_task`)
    starts with them, but for the status and node, which the build sets: three reads of C speed
    where `fresh_fields_reference` makes a list of them and writes five places."""
    return _BEFORE_UNFILLED(t) + _BLANK + _AFTER_UNFILLED(t)


def fresh_fields_reference(t: TaskInfo) -> tuple[Any, ...]:
    """`fresh_fields` field by field (the reference the tests compare it with)."""
    args = list(task_fields(t))
    for name, v in _UNFILLED:
        args[_PLACE[name]] = v
    return tuple(args)


#: a fresh task is made by `copy_task`, its fields written out one by one; False: `TaskInfo(*fresh_fields(t))`
#: with the status and node set after (the reference the tests compare with)
COPY_WRITTEN = True

_new_task = TaskInfo.__new__


def copy_task(t: TaskInfo, status: TaskStatus, node: str) -> TaskInfo:
    """A fresh copy of the template task `t` with `status` on `node`: what `TaskInfo(*fresh_fields(t))`
    with that status and node gives (what a session fills in starts empty), each field written out.
    `fresh_fields` reads the fields by name (~30 lookups through the type, then two tuple
    concatenations) and `__init__` parses as many arguments; here each read and write is a slot's,
    which the interpreter specialises: ~a third of the cost. The import checks that every field is
    written (`_check_copy_task`)."""
    c = _new_task(TaskInfo)
    c.uid = t.uid
    c.name = t.name
    c.namespace = t.namespace
    c.job = t.job
    c.resreq = t.resreq
    c.status = status
    c.node_name = node
    c.priority = t.priority
    c.raw_priority = t.raw_priority
    c.priority_class_name = t.priority_class_name
    c.preemptable = t.preemptable
    c.preempt_never = t.preempt_never
    c.role = t.role
    c.creation = t.creation
    c.start_time = t.start_time
    c.started_at = t.started_at
    c.gated = t.gated
    c.labels = t.labels
    c.annotations = t.annotations
    c.node_selector = t.node_selector
    c.required_terms = t.required_terms
    c.preferred_terms = t.preferred_terms
    c.tolerations = t.tolerations
    c.nonzero_cpu = t.nonzero_cpu
    c.nonzero_memory = t.nonzero_memory
    c.vec = None
    c.cols = None
    c.nominated_node = ""
    c.initial_status = None
    c.last_tx_status = None
    c.predicate_key = t.predicate_key
    c.kube_requests = t.kube_requests
    return c


def copy_task_reference(t: TaskInfo, status: TaskStatus, node: str) -> TaskInfo:
    """`copy_task` through `fresh_fields` and `__init__` (the reference)."""
    c = TaskInfo(*fresh_fields(t))
    c.status, c.node_name = status, node
    return c


def _check_copy_task() -> None:
    """Fail the import unless `copy_task` writes every field of TaskInfo as its reference does: a field
    added to TaskInfo must be added there too (an unwritten slot would raise when read)."""
    probe = TaskInfo(*[object() for _ in _TASK_NAMES])  # type: ignore[arg-type]  # a sentinel per field
    a, b = copy_task(probe, RUNNING, "n"), copy_task_reference(probe, RUNNING, "n")
    for name in _TASK_NAMES:
        if getattr(a, name, a) is not getattr(b, name, b):
            raise ImportError(f"forecast/job_build.py: copy_task does not copy TaskInfo.{name} as a fresh build does")


_check_copy_task()


def fresh_task(t: TaskInfo, status: TaskStatus, node: str) -> TaskInfo:
    """A copy of a template task for one session: what a session fills in starts empty (the rest it
    never edits in place: it replaces a task's containers). `DumpObjects.build`'s (the reference)."""
    new = TaskInfo(*task_fields(t))
    new.status = status
    new.node_name = node
    new.vec = new.cols = new.initial_status = new.last_tx_status = None
    new.nominated_node = ""
    return new


def task_copy(t: TaskInfo) -> TaskInfo:
    """A copy of a session's task for another job object (what a session fills in starts empty), so
    that a session over the copy leaves the task a kept job holds alone."""
    return fresh_task(t, t.status, t.node_name)


#: JobInfo's fields a build takes from its template as they are, read once per job (the rest it makes
#: or sets, or reads at each build: the log and notes a cache's template may carry)
_JOB_CONSTS = ("uid", "name", "namespace", "min_available", "priority", "priority_class_name", "creation",
               "schedule_start")
_JOB_NAMES = tuple(f.name for f in fields(JobInfo))
# `build_job` makes the JobInfo with positional arguments in this order; a field added to JobInfo must
# be added there too (the import fails until it is, rather than a build missing it)
_JOB_ORDER = ("uid", "name", "namespace", "queue", "min_available", "min_task_member", "min_resources", "priority",
              "priority_class_name", "phase", "creation", "annotations", "tasks", "conditions", "nodes_fit_errors",
              "failed_roles", "job_fit_errors", "schedule_start", "allocated", "counts", "pending_be",
              "allocated_as_added", "gated_tasks", "version", "derived", "log", "notes")
if _JOB_NAMES != _JOB_ORDER:
    raise ImportError("JobInfo's fields are no longer those forecast/job_build.py builds: see build_job")
#: the job template's fields every build of it takes unchanged, as a tuple (`build_job`'s `consts`)
job_consts = operator.attrgetter(*_JOB_CONSTS)


#: `build_job` gives a running task it makes anew its start from the simulation when the template has none
#: and the simulator names each task's own record by its key (`DumpObjects.starts_known`), as
#: `give_starts` would at the snapshot (semantics F10); False: `give_starts` gives it (the reference)
STARTS_AT_BUILD = True

#: `build_job` tests whether a task is shared in its loop; False: by a call to `task_again` per task (the
#: reference the tests compare with)
INLINE_SHARING = True


def task_again(t: TaskInfo, status: TaskStatus, node: str, tt: TaskInfo, st: SimTask) -> bool:
    """Whether the task `t` of a job's last object (which no session placed, evicted or pipelined a
    task of since) is what a fresh build from the template task `tt` gives, with `status` on `node`,
    once `give_starts` has given it its start (that of `tt`, or for a running task without one the
    simulation's `st.start`), but for what sessions fill in."""
    if t.status is not status or t.node_name != node:
        return False
    if t.started_at is None:
        return tt.started_at is None
    if tt.started_at is not None:
        return t.started_at == tt.started_at
    return status is RUNNING and t.started_at == st.start


def build_job(sj: SimJob, tpl: JobInfo, consts: tuple[Any, ...], templates: Sequence[TaskInfo],
              original: Sequence[TaskStatus | None], held: Mapping[str, TaskInfo] | None,
              starts: bool = False) -> tuple[JobInfo, int]:
    """(the job `sj` built from its template `tpl`, how many of `held`'s tasks it holds again).

    `consts`: `job_consts(tpl)`; `templates`: its template tasks (a task made anew is `copy_task`'s);
    `original`: per task (by its index), its status in the state while the simulation has not
    changed it, else None; `held`: the tasks of the job's last object when no session placed, evicted
    or pipelined a task of it since (`JobInfo.allocated_as_added`), else None.

    `starts`: give each running task made anew without a start of its template the simulation's
    (`st.start`), which `give_starts` would give it at the snapshot (`STARTS_AT_BUILD`): only when
    the simulator names each task's own record by the task's key (`DumpObjects.starts_known`).

    `task_again` is written out in the loop, since the loop runs once per task of every build
    (`INLINE_SHARING` False calls it, the reference the tests compare with); the self-check compares each build with
    `DumpObjects.build` field by field. `allocated` is `Resource.add`'s arithmetic written out in the
    loop: the same additions in the same order, so the same bits."""
    tasks: dict[str, TaskInfo] = {}
    counts: dict[TaskStatus, int] = {}
    cpu = memory = 0.0
    scalars: dict[str, float] = {}
    gated = pending_be = shared = 0
    # the loop's count, known before it (zip stops at the shortest); a task's uid met twice leaves
    # the map shorter than that, which is `add_task`'s test of a task replaced (`as_added` below)
    added = min(len(sj.tasks), len(templates))
    succeeded, running, pending = SUCCEEDED, RUNNING, PENDING
    allocated_statuses = ALLOCATED_STATUSES
    again = None if INLINE_SHARING else task_again
    starts = starts and STARTS_AT_BUILD
    copy = copy_task if COPY_WRITTEN else copy_task_reference
    for st, tt in zip(sj.tasks, templates):
        status = original[st.index]
        if status is not None:
            node = tt.node_name
        else:
            status = st.status
            node = st.node if status is not succeeded else ""
        t = held.get(tt.uid) if held is not None else None
        if t is not None and (again(t, status, node, tt, st) if again is not None else (
                t.status is status and t.node_name == node and (
                    (tt.started_at is None) if t.started_at is None else
                    (t.started_at == tt.started_at) if tt.started_at is not None else
                    (status is running and t.started_at == st.start)))):
            shared += 1
        else:
            t = copy(tt, status, node)
            if starts and status is running and t.started_at is None:
                t.started_at = st.start
        if t.gated:
            gated += 1
        tasks[t.uid] = t
        counts[status] = counts.get(status, 0) + 1
        if status in allocated_statuses:
            r = t.resreq
            cpu += r.cpu
            memory += r.memory
            if r.scalars:
                for n, v in r.scalars.items():
                    scalars[n] = scalars.get(n, 0.0) + v
        elif status is pending and t.resreq.is_empty():
            pending_be += 1
    as_added = len(tasks) == added
    allocated = Resource.zero()
    allocated.cpu, allocated.memory, allocated.scalars = cpu, memory, scalars
    uid, name, namespace, min_available, priority, pcn, creation, schedule_start = consts
    mr, log = tpl.min_resources, tpl.log
    ji = JobInfo(uid, name, namespace, sj.queue, min_available, dict(tpl.min_task_member),
                 None if mr is None else mr.clone(), priority, pcn, sj.phase, creation, dict(tpl.annotations),
                 tasks, {}, {}, set(), "", schedule_start, allocated, counts, pending_be, as_added, gated, added,
                 {}, log, tpl.notes)
    if added and log is not None:
        log.add(sj.uid)
    return ji, shared
