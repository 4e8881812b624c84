"""A forecast's job built again from its last object over the tasks changed since (`DumpObjects.build_fast`,
forecast/sim.py; docs/semantics.md F17).

A forecast builds a job again each time a task of it changes status, most often one task of ten (a
running gang's task ending), and `build_job` (forecast/job_build.py, the reference here) walks all ten:
each task's status and node, whether the last object's task is held again (K36), the task map, the
counts per status, `allocated` and the best-effort count. `build_again` gives the same object looking
at the changed tasks alone:

- the tasks the simulation did not change since the last object was built are that object's (K36
  holds them again, see `build_again`), so the map is the last one copied, the changed tasks put in
  their places (the same keys in the same order);
- the counts are `collections`' C counting helper over the map's statuses in task order (the loop's
  insertions in its order);
- `allocated` is the sum the loop makes, taken from the job's shape: every task of a job whose shape
  is taken asks for the same amounts, so the loop's sum over `k` allocated tasks is the same `k`
  additions of those amounts whichever tasks they are, worked out once per `k` (`JobShape.allocated`).

The shape is taken at a job's first build again (not at its first build: most of a forecast's start
jobs are never built again), and only for jobs it holds for (`job_shape`).
"""

from __future__ import annotations

from collections import _count_elements  # type: ignore[attr-defined]  # Counter's C helper
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field, fields
from itertools import chain
from operator import attrgetter, truth
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
from apportion.forecast import job_build
from apportion.forecast.job_build import copy_task, copy_task_reference
from apportion.lean_dataclass import dataclass
from apportion.resources import Resource
from apportion.simulation.jobs import SimJob
from apportion.state import check

#: build a job again from its last object over the changed tasks (`build_again`); False: `build_job`
#: walks every task (the reference the tests compare with). Off: on the benchmark's forecast a build
#: again saves ~33.8 K instructions (72.5 K -> 38.7 K) but the job's shape, taken for 573 jobs for
#: 1,450 builds, costs ~79 K (benchmarks/README.md, eighteenth session, `build19`)
SINCE_LAST = False
#: build a job none of whose tasks the simulation changed with its template's bookkeeping (`build_first`);
#: False: `build_job` (the reference)
FIRST_AS_STATE = True

#: `job_shape` task by task (`job_shape_reference`); False: in passes at C speed
JOB_SHAPE_LOOP = False

_status = attrgetter("status")
_index, _started, _resreq, _uid, _gated = (attrgetter(n) for n in ("index", "started_at", "resreq", "uid", "gated"))
_cpu, _memory, _scalars = attrgetter("cpu"), attrgetter("memory"), attrgetter("scalars")
_values = dict.values


@dataclass(slots=True)
class JobShape:
    """What `build_again` reads of a job's template tasks, taken once per job (`job_shape`)."""

    #: the template tasks' uids, by task index
    uids: tuple[str, ...]
    #: the request every template task has (equal amounts, the scalars named in the same order)
    request: Resource
    #: whether that request is empty (`Resource.is_empty`: a Pending task of it is best-effort)
    empty: bool
    #: how many template tasks are gated
    gated: int
    #: by k, the loop's sum of `request` over k allocated tasks: (cpu, memory, the scalars' items)
    sums: list[tuple[float, float, tuple[tuple[str, float], ...]]] = field(
        default_factory=lambda: [(0.0, 0.0, ())])

    def allocated(self, k: int) -> Resource:
        """A new Resource: what `build_job`'s loop sums over k allocated tasks of the job. The loop
        adds each allocated task's amounts in task order from 0.0 (cpu, memory, then each scalar as
        its request names it, a new name entered at its first addition); all ask for `request`'s
        amounts, so its sum is these k additions of them, made here in the same order."""
        sums = self.sums
        r = self.request
        while len(sums) <= k:
            cpu, memory, items = sums[-1]
            scalars = dict(items)
            for n, v in r.scalars.items():
                scalars[n] = scalars.get(n, 0.0) + v
            sums.append((cpu + r.cpu, memory + r.memory, tuple(scalars.items())))
        cpu, memory, items = sums[k]
        out = Resource.zero()
        out.cpu, out.memory = cpu, memory
        if items:
            out.scalars = dict(items)
        return out


def job_shape(sj: SimJob, templates: Sequence[TaskInfo]) -> JobShape | None:
    """The job's shape, or None when `build_again` would not give what `build_job` gives: not one
    simulation task per template at its index (`build_job` zips them by position, the changed tasks
    are named by index), a task uid met twice, a template start that is NaN (`task_again` compares
    starts with ==, and a NaN never equals itself), or requests that differ in an amount (neither
    equal nor the same float object) or in the scalars' names or order, or an amount that is not a
    float (an amount equal to another but not of its bits, ±0 aside, is no float's).

    Each test is a pass at C speed over the job's tasks (`map`, `list.count`: it compares by identity,
    then with ==), not a Python loop: the shape is taken for most of a forecast's jobs, and a loop
    cost about what a build again saves (`JOB_SHAPE_LOOP` takes it so, the reference)."""
    if JOB_SHAPE_LOOP:
        return job_shape_reference(sj, templates)
    n = len(templates)
    if not n or len(sj.tasks) != n or list(map(_index, sj.tasks)) != list(range(n)):
        return None
    starts = list(map(_started, templates))
    if starts.count(None) != n and any(v is not None and v != v for v in starts):
        return None
    reqs = list(map(_resreq, templates))
    r0 = reqs[0]
    scalars = list(map(_scalars, reqs))
    s0 = r0.scalars
    if scalars.count(s0) != n or (len(s0) > 1 and list(map(list, scalars)).count(list(s0)) != n):
        return None  # a scalar named or amounted otherwise, or (two or more) named in another order
    cpus, memories = list(map(_cpu, reqs)), list(map(_memory, reqs))
    values = list(chain.from_iterable(map(_values, scalars)))
    if (cpus.count(r0.cpu) != n or memories.count(r0.memory) != n or list(map(type, cpus)).count(float) != n
            or list(map(type, memories)).count(float) != n or list(map(type, values)).count(float) != len(values)):
        return None
    uids = tuple(map(_uid, templates))
    if len(set(uids)) != n:
        return None
    return JobShape(uids, r0, r0.is_empty(), sum(map(truth, map(_gated, templates))))


def job_shape_reference(sj: SimJob, templates: Sequence[TaskInfo]) -> JobShape | None:
    """`job_shape` task by task (the reference the tests compare with)."""
    n = len(templates)
    if not n or len(sj.tasks) != n:
        return None
    r0 = templates[0].resreq
    cpu, memory, items = r0.cpu, r0.memory, tuple(r0.scalars.items())
    if type(cpu) is not float or type(memory) is not float or any(type(v) is not float for _, v in items):
        return None
    gated = 0
    for i, (st, tt) in enumerate(zip(sj.tasks, templates)):
        r, started = tt.resreq, tt.started_at
        if st.index != i or (started is not None and started != started):
            return None
        if r is not r0 and not ((r.cpu is cpu or r.cpu == cpu) and (r.memory is memory or r.memory == memory)
                                and tuple(r.scalars.items()) == items
                                and type(r.cpu) is float and type(r.memory) is float
                                and all(type(v) is float for v in r.scalars.values())):
            return None
        if tt.gated:
            gated += 1
    uids = tuple(tt.uid for tt in templates)
    if len(set(uids)) != n:
        return None
    return JobShape(uids, r0, r0.is_empty(), gated)


def build_again(sj: SimJob, tpl: JobInfo, consts: tuple[Any, ...], shape: JobShape, templates: Sequence[TaskInfo],
                original: Sequence[TaskStatus | None], last: JobInfo, changed: Iterable[int]
                ) -> tuple[JobInfo, int, bool]:
    """(what `build_job` gives for `sj`, how many tasks of `last` it holds again, whether no start it
    gave is NaN).

    `last` is the job's last object, built by `build_job` or here with each running task it made anew
    given its start (`build_job`'s `starts`), no start it gave NaN, and no session placed, evicted or
    pipelined a task of it since (`allocated_as_added`); `changed`: the indices of the tasks whose
    status the simulation changed since it was built (`DumpObjects.status_changed`). A task not changed since has in the simulation the status, node
    and start it had then (they move only with its status), and in the state the status it had then
    (the state's status is dropped only by a change), so a fresh build gives it the status and node
    `last` was built with; `last`'s task still holds those (a session moves a task only through its
    job's `set_status`, which clears `allocated_as_added`) and the start it was given then or held
    (only `give_starts` writes one, to a running task without one, and every running task made here
    or by `build_job` was given its record's, which with the keys each their own is the one
    `give_starts` would find: F10): `task_again` holds for it as it did for the task then (the
    template's start, not NaN: `job_shape`; or a given one, not NaN). Only the changed tasks are
    looked at, with `build_job`'s test."""
    tasks = dict(last.tasks)
    uids, sim_tasks = shape.uids, sj.tasks
    running, succeeded = RUNNING, SUCCEEDED
    shared = len(uids)
    sound = True
    copy = copy_task if job_build.COPY_WRITTEN else copy_task_reference
    for i in sorted(changed):
        st, tt = sim_tasks[i], templates[i]
        status = original[i]
        if status is not None:
            node = tt.node_name
        else:
            status = st.status
            node = st.node if status is not succeeded else ""
        uid = uids[i]
        t = tasks[uid]
        if t.status is status and t.node_name == node and (
                (tt.started_at is None) if t.started_at is None else
                (t.started_at == tt.started_at) if tt.started_at is not None else
                (status is running and t.started_at == st.start)):
            continue
        shared -= 1
        t = tasks[uid] = copy(tt, status, node)
        if status is running and t.started_at is None:
            start = t.started_at = st.start
            if start is not None and start != start:
                sound = False
    statuses = list(map(_status, tasks.values()))
    counts: dict[TaskStatus, int] = {}
    _count_elements(counts, statuses)
    k = 0
    allocated_statuses = ALLOCATED_STATUSES
    for s, c in counts.items():
        if s in allocated_statuses:
            k += c
    allocated = shape.allocated(k)
    pending_be = counts.get(PENDING, 0) if shape.empty else 0
    n = len(uids)
    uid, name, namespace, min_available, priority, pcn, creation, schedule_start = consts
    mr, log = tpl.min_resources, tpl.log
    ji = JobInfo(uid, name, namespace, sj.queue, min_available, dict(tpl.min_task_member),
                 None if mr is None else mr.clone(), priority, pcn, sj.phase, creation, dict(tpl.annotations),
                 tasks, {}, {}, set(), "", schedule_start, allocated, counts, pending_be, True, shape.gated, n,
                 {}, log, tpl.notes)
    if log is not None:
        log.add(sj.uid)
    return ji, shared, sound


def build_first(sj: SimJob, tpl: JobInfo, consts: tuple[Any, ...], templates: Sequence[TaskInfo],
                starts: bool) -> tuple[JobInfo, bool] | None:
    """(what `build_job` gives for `sj` with no last object to hold tasks of, whether no start it gave
    is NaN), while no task of the job changed status in the simulation (none dropped its state's status,
    `DumpObjects.status_changed`); None
    when the template `tpl`'s bookkeeping is not that of its tasks as added (below).

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
    sound = True
    copy = copy_task if job_build.COPY_WRITTEN else copy_task_reference
    for st, tt in zip(sj.tasks, templates):
        status = tt.status
        t = copy(tt, status, tt.node_name)
        if starts and status is running and t.started_at is None:
            start = t.started_at = st.start
            if start is not None and start != start:
                sound = False
        tasks[tt.uid] = t
    uid, name, namespace, min_available, priority, pcn, creation, schedule_start = consts
    mr, log = tpl.min_resources, tpl.log
    ji = JobInfo(uid, name, namespace, sj.queue, min_available, dict(tpl.min_task_member),
                 None if mr is None else mr.clone(), priority, pcn, sj.phase, creation, dict(tpl.annotations),
                 tasks, {}, {}, set(), "", schedule_start, tpl.allocated.clone(), dict(tpl.counts), tpl.pending_be,
                 True, tpl.gated_tasks, n, {}, log, tpl.notes)
    if n and log is not None:
        log.add(sj.uid)
    return ji, sound


_JOB_COMPARED = tuple(f.name for f in fields(JobInfo) if f.name not in ("tasks", "allocated", "log", "notes"))


def check_again(ji: JobInfo, shared: int, ref: JobInfo, ref_shared: int, held: Mapping[str, TaskInfo]) -> None:
    """The self-check: a job built again by `build_again` is `build_job`'s (`ref`, built with the same
    last object's tasks `held`): every field equal, the maps in the same order, `allocated` to the bit
    with its scalars in the same order, the same tasks held again (by identity) and the others equal
    field by field."""
    bad = [name for name in _JOB_COMPARED if getattr(ji, name) != getattr(ref, name)]
    if list(ji.counts) != list(ref.counts):
        bad.append("counts' order")
    a, b = ji.allocated, ref.allocated
    if (a.cpu.hex(), a.memory.hex(), [(n, v.hex()) for n, v in a.scalars.items()]) != (
            b.cpu.hex(), b.memory.hex(), [(n, v.hex()) for n, v in b.scalars.items()]):
        bad.append("allocated")
    if list(ji.tasks) != list(ref.tasks) or shared != ref_shared:
        bad.append("tasks")
    else:
        for key, t in ji.tasks.items():
            u, h = ref.tasks[key], held.get(key)
            if (t is h) != (u is h) or (t is not u and any(
                    getattr(t, s) is not getattr(u, s) and getattr(t, s) != getattr(u, s) for s in TaskInfo.__slots__)):
                bad.append(f"task {key}")
    if bad:
        raise check.StateCheckError(f"{check.ENV}: job {ji.uid} built again from its last object differs from "
                                    f"build_job's in {', '.join(bad)}")
