"""A forecast's job object built again from its last one, in proportion to the tasks that moved
(`DumpObjects.build_fast`, forecast/sim.py; docs/semantics.md F13).

Most of a forecast's builds after the first session follow one task of a gang ending: `build_job`
(forecast/job_build.py) then walks the job's ten tasks, holds nine of them again (`task_again`, K36)
and adds up its counts, `allocated` and best-effort count over all ten. `build_job_delta` gives the
same object from the job's last object (`SimJob.info`, which no session changed since it was built:
it kept `allocated_as_added` and its version) and the positions of the tasks whose status the
simulation moved since that build (`DumpObjects.status_changed`): the tasks map and counts are the
last object's copied, only the moved tasks go through the loop's test and are made anew where it
fails, and the sums move by those tasks alone.

Exact because a task whose record did not move since the last build has the status, node and start
that build gave it (a record's node and start move only with its status), and the last object's task
for it has them still (a session changes a task's status and node only through its job's
`set_status`, which moves the version and clears `allocated_as_added`; a start is given at build when
`DumpObjects.starts_known`, F10, so `give_starts` writes none): `task_again` holds for it, and the
loop would hold it again. The sums are exact in any order when every amount is a whole number >= 0
and the job's totals are at most 2**53 (`exact_names`, else the job is always built whole), the
scalar names of `allocated` are the ones every request lists, in its order, and the counts are put
in the order of first appearance over the tasks, as the loop's are.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Collection, Sequence
from typing import Any

from apportion.cluster.model import ALLOCATED_STATUSES, JobInfo, TaskInfo, TaskStatus
from apportion.forecast.job_build import job_of, task_again
from apportion.resources import Resource
from apportion.simulation.jobs import SimJob, SimTask
from apportion.state import check
from apportion.state.equality import same

#: build a job again from its last object when few of its tasks moved (`build_job_delta`); False:
#: every build walks every task (`build_job`, the reference the tests compare with)
DELTA_BUILD = True

#: the largest total of one amount over a job's tasks for which its sums are exact in any order
_EXACT = 2**53

_STATUS = operator.attrgetter("status")


def _whole(v: Any) -> bool:
    """A float that is a whole number, not negative (nor -0.0)."""
    return type(v) is float and v.is_integer() and math.copysign(1.0, v) > 0


def exact_names(templates: Sequence[TaskInfo], sim_tasks: Sequence[SimTask]) -> tuple[str, ...] | None:
    """The scalar names every template task's request lists, in the order each lists them, when every
    request lists the same names in the same order, every amount of every request is a whole number
    >= 0 (a float), the job's total of each amount over all its tasks is at most 2**53, and the
    simulation's tasks are the templates' by position (`index` is the position); else None (the job is
    then always built whole)."""
    if len(templates) != len(sim_tasks) or any(st.index != i for i, st in enumerate(sim_tasks)):
        return None
    names: tuple[str, ...] | None = None
    totals: list[int] = []  # added up as integers: exactly
    for tt in templates:
        r = tt.resreq
        listed = tuple(r.scalars)
        if names is None:
            names = listed
            totals = [0] * (2 + len(listed))
        elif listed != names:
            return None
        for k, v in enumerate((r.cpu, r.memory, *r.scalars.values())):
            if not _whole(v):
                return None
            totals[k] += int(v)
    if any(total > _EXACT for total in totals):
        return None
    return () if names is None else names


def build_job_delta(sj: SimJob, tpl: JobInfo, consts: tuple[Any, ...], templates: Sequence[TaskInfo],
                    fresh: Sequence[tuple[Any, ...]], original: Sequence[TaskStatus | None], prev: JobInfo,
                    moved: Collection[int], names: tuple[str, ...]) -> tuple[JobInfo, int]:
    """(the job `sj` built as `build_job` builds it with `prev`'s tasks held and starts given at build,
    how many of `prev`'s tasks it holds again), from `prev`: the job's last object, which no session
    changed since it was built (`allocated_as_added`, version the number of tasks). `moved`: the
    positions of the tasks whose record changed status since `prev` was built; `names`:
    `exact_names` of the job. The other arguments are `build_job`'s."""
    tasks = dict(prev.tasks)
    counts = dict(prev.counts)
    allocated = prev.allocated
    cpu, memory = allocated.cpu, allocated.memory
    had = allocated.scalars
    sums = [had.get(n, 0.0) for n in names]
    n_allocated = prev.count(ALLOCATED_STATUSES)
    pending_be, gated = prev.pending_be, prev.gated_tasks
    shared = len(tasks) - len(moved)
    succeeded, running, pending = TaskStatus.SUCCEEDED, TaskStatus.RUNNING, TaskStatus.PENDING
    allocated_statuses = ALLOCATED_STATUSES
    for i in sorted(moved):
        st, tt = sj.tasks[i], templates[i]
        status = original[i]
        if status is not None:
            node = tt.node_name
        else:
            status = st.status
            node = st.node if status is not succeeded else ""
        old = tasks[tt.uid]
        if task_again(old, status, node, tt, st):
            shared += 1
            continue
        t = TaskInfo(*fresh[i])
        t.status, t.node_name = status, node
        if status is running and t.started_at is None:
            t.started_at = st.start
        tasks[tt.uid] = t
        gated += t.gated - old.gated
        was = old.status
        counts[was] -= 1
        counts[status] = counts.get(status, 0) + 1
        r = old.resreq
        if was in allocated_statuses:
            n_allocated -= 1
            cpu -= r.cpu
            memory -= r.memory
            for k, n in enumerate(names):
                sums[k] -= r.scalars[n]
        elif was is pending and r.is_empty():
            pending_be -= 1
        r = t.resreq
        if status in allocated_statuses:
            n_allocated += 1
            cpu += r.cpu
            memory += r.memory
            for k, n in enumerate(names):
                sums[k] += r.scalars[n]
        elif status is pending and r.is_empty():
            pending_be += 1
    # the loop's counts hold the statuses present, in the order they first appear over the tasks
    counts = {s: counts[s] for s in dict.fromkeys(map(_STATUS, tasks.values()))}
    total = Resource.zero()
    total.cpu, total.memory = cpu, memory
    if n_allocated and names:
        total.scalars = dict(zip(names, sums))
    return job_of(sj, tpl, consts, tasks, counts, total, pending_be, True, gated, len(tasks)), shared


def _bits(r: Resource) -> tuple[Any, ...]:
    return float.hex(r.cpu), float.hex(r.memory), [(n, float.hex(v)) for n, v in r.scalars.items()]


def check_delta(ji: JobInfo, full: JobInfo, held: dict[str, TaskInfo]) -> None:
    """The self-check: a job built from its last object (`build_job_delta`) is what `build_job` gives
    with that object's tasks held: the same tasks in the same order, each the last object's where the
    loop's is, the same counts (in order), sums (to the bit), best-effort and gated counts and version."""
    if list(ji.tasks) != list(full.tasks) or any(
            (ji.tasks[k] is held.get(k)) != (full.tasks[k] is held.get(k)) for k in full.tasks):
        raise check.StateCheckError(f"{check.ENV}: job {ji.uid} built from its last object holds other tasks "
                                    "again than a whole build")
    if _bits(ji.allocated) != _bits(full.allocated) or not same(ji.counts, full.counts) or (ji.pending_be, ji.gated_tasks, ji.version) != (
            full.pending_be, full.gated_tasks, full.version):
        raise check.StateCheckError(f"{check.ENV}: job {ji.uid} built from its last object differs from a whole "
                                    "build in its counts or sums")
