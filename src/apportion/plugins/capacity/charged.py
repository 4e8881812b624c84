"""What capacity charges for a job at session open, as exact integers: the ledger's (ledger.py) and the
backlog watch's (backlog_watch.py) unit.

A job's four fields (allocated, request, inqueue, elastic: `job_contribution`, plugins/queue_common.py)
are taken as integers when every amount is an integer below 2**53, else not at all (docs/semantics.md
K7). `job_amounts_reference` keeps them on the job under its task version, its phase and what else the
contribution reads (`JobInfo.derive`). A forecast asks them of every job object it builds again (some
3,500 a run, each job's early quiet test then its session's ledger), so `job_amounts` (docs/semantics.md
K50):

- works a job without a Pending task out from the job's running sums (`JobInfo.allocated`, which a
  build leaves as the tasks' sum in task order), not from a `JobContribution` made over its tasks:
  request is then allocated, so one conversion serves both, and inqueue and elastic are the same float
  arithmetic as `inqueue_resource` and `JobInfo.elastic` with no Resource made;
- keeps its answer across a phase move of the same object (enqueue's admission, the forecast's phase
  moves): the amounts read the phase only through whether inqueue is charged (`charges_inqueue`), so
  an answer kept under the same task version and inputs holds while that does.

`LEAN_AMOUNTS` off is the reference (tests compare the two); under `APPORTION_CHECK_STATE=1` every
answer is compared with a fresh `charged_amounts(job_contribution(job))`.
"""

from __future__ import annotations

from apportion.cluster.model import ALLOCATED_STATUSES, JobInfo, PodGroupPhase, TaskStatus
from apportion.plugins.queue_common import JobContribution, inqueue_resource, job_contribution
from apportion.resources import CPU, EPHEMERAL, MEMORY, Resource
from apportion.state import check

#: one field of one job: cpu, memory, and the scalars in the job's own order (None: not charged)
Amount = tuple[int, int, tuple[tuple[str, int], ...]]
Amounts = tuple[Amount | None, ...]

_EXACT = float(2**53)
#: `job_amounts` takes the lean path (no JobContribution for a job without Pending tasks, the answer
#: kept across a phase move); False: `job_amounts_reference` (tests compare the two)
LEAN_AMOUNTS = True
#: on the lean path, a job with Pending tasks has its allocated and request summed over its tasks here
#: (`_task_sums`) rather than through a `JobContribution`; False: `job_amounts_reference` for it
LEAN_PENDING = True
#: JobInfo.derived key of the lean path's answer: (version, phase, (whether inqueue is charged,
#: min_available, min_resources, ElasticEnable), the amounts)
LEAN_KEY = "charged-amounts-lean"
_INQUEUE, _RUNNING, _PENDING = PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING, TaskStatus.PENDING


def exact_amount(r: Resource) -> Amount | None:
    """The resource as integers, or None when some amount is not an integer below 2**53."""
    return _exact_of(r.cpu, r.memory, r.scalars)


def charged_amounts(c: JobContribution, elastic_enabled: bool) -> Amounts | None:
    """The four fields as `_charge_jobs` adds them (inqueue and elastic only when they add anything),
    as integers; None when any of them is not exact."""
    out: list[Amount | None] = []
    for i, r in enumerate((c.allocated, c.request, c.inqueue, c.elastic)):
        if i >= 2 and not (r.cpu or r.memory or r.scalars):
            out.append(None)
            continue
        if i == 3 and not elastic_enabled:
            out.append(None)
            continue
        a = exact_amount(r)
        if a is None:
            return None
        out.append(a)
    return tuple(out)


def job_amounts_reference(job: JobInfo, elastic_enabled: bool) -> Amounts | None:
    """`charged_amounts` of the job's contribution, kept on the job (JobInfo.derive) under what the
    contribution is kept under and ElasticEnable."""
    return job.derive("charged-amounts", (job.min_available, job.min_resources, elastic_enabled),
                      lambda: charged_amounts(job_contribution(job), elastic_enabled))


def charges_inqueue(job: JobInfo) -> bool:
    """Whether `job_contribution` charges the job's inqueue (`inqueue_resource`) rather than nothing:
    the one thing of its phase the charged amounts read."""
    if job.min_resources is None:
        return False
    phase = job.phase
    return phase is _INQUEUE or (phase is _RUNNING and job.count(ALLOCATED_STATUSES) >= job.min_available)


def job_amounts(job: JobInfo, elastic_enabled: bool) -> Amounts | None:
    """What capacity charges for the job as exact integers (`charged_amounts` of `job_contribution`), or
    None when some amount is not exact; kept on the job (see the module's docstring). The ledger and the
    backlog watch ask it of the same job objects."""
    if not LEAN_AMOUNTS:
        return job_amounts_reference(job, elastic_enabled)
    derived = job.derived
    hit = derived.get(LEAN_KEY)
    mr = job.min_resources
    if (hit is not None and hit[0] == job.version and (kept := hit[2])[1] == job.min_available
            and kept[3] == elastic_enabled and (kept[2] is mr or kept[2] == mr)):
        if hit[1] is job.phase:
            return hit[3]
        inqueue = charges_inqueue(job)
        if inqueue is kept[0]:
            # the same task version: the same tasks, statuses and sums; the phase moved but inqueue is
            # charged (or not) as before, and nothing else of the amounts reads it
            derived[LEAN_KEY] = (hit[0], job.phase, kept, hit[3])
            return hit[3]
    else:
        inqueue = charges_inqueue(job)
    if not job.counts.get(_PENDING):
        amounts = _settled_amounts(job, inqueue, elastic_enabled)
    elif LEAN_PENDING:
        sums = _task_sums(job)
        amounts = None if sums is None else _settled_amounts(job, inqueue, elastic_enabled, sums)
    else:
        amounts = job_amounts_reference(job, elastic_enabled)
    if check.enabled():
        _check_amounts(job, elastic_enabled, amounts)
    derived[LEAN_KEY] = (job.version, job.phase, (inqueue, job.min_available, mr, elastic_enabled), amounts)
    return amounts


def _task_sums(job: JobInfo) -> tuple[Amount, Amount] | None:
    """allocated and request of a job with Pending tasks as `_contribution` sums them (docs/semantics.md
    K57): one pass over the tasks in order, an allocated-status task's request added to both, a Pending
    one's to request alone, each dimension as `Resource.add` adds it (cpu, memory, then the scalars by
    first appearance, each from +0.0); as exact integers, or None when some amount is not."""
    acpu = amem = rcpu = rmem = 0.0
    asc: dict[str, float] = {}
    rsc: dict[str, float] = {}
    allocated = ALLOCATED_STATUSES
    for t in job.tasks.values():
        status = t.status
        if status in allocated:
            r = t.resreq
            acpu += r.cpu
            amem += r.memory
            rcpu += r.cpu
            rmem += r.memory
            for n, v in r.scalars.items():
                asc[n] = asc.get(n, 0.0) + v
                rsc[n] = rsc.get(n, 0.0) + v
        elif status is _PENDING:
            r = t.resreq
            rcpu += r.cpu
            rmem += r.memory
            for n, v in r.scalars.items():
                rsc[n] = rsc.get(n, 0.0) + v
    a = _exact_of(acpu, amem, asc)
    q = _exact_of(rcpu, rmem, rsc)
    return None if a is None or q is None else (a, q)


def _exact_of(cpu: float, mem: float, scalars: dict[str, float]) -> Amount | None:
    """`exact_amount` of a resource given by its parts."""
    if not (cpu.is_integer() and mem.is_integer() and abs(cpu) < _EXACT and abs(mem) < _EXACT):
        return None
    out = []
    for n, v in scalars.items():
        if not (v.is_integer() and abs(v) < _EXACT):
            return None
        out.append((n, int(v)))
    return int(cpu), int(mem), tuple(out)


def _settled_amounts(job: JobInfo, inqueue: bool, elastic_enabled: bool,
                     sums: tuple[Amount, Amount] | None = None) -> Amounts | None:
    """`charged_amounts(job_contribution(job))` for a job with no Pending task, or with `sums`, the
    allocated and request `_task_sums` gives a job with Pending tasks.

    Without Pending tasks, `_contribution` takes allocated and request both as `allocated_sum()` (the
    same adds in the same order); inqueue is `inqueue_resource(job)` when `inqueue`, else nothing;
    elastic is `job.elastic()`. Both of those read the running `job.allocated` (not the sum), as here,
    and are written out with the same float operations, each dimension in the same order."""
    if sums is not None:
        a, request = sums
    else:
        got = exact_amount(job.allocated_sum() if not job.allocated_as_added else job.allocated)
        if got is None:
            return None
        a = request = got
    running = job.allocated
    mr = job.min_resources
    q: Amount | None = None
    if inqueue:
        assert mr is not None
        if job.gated_tasks or CPU in mr.scalars or MEMORY in mr.scalars:
            # gated pods deducted, or a scalar under cpu's or memory's name (which `Resource.get` reads
            # as cpu or memory): `inqueue_resource` itself
            q_r = inqueue_resource(job)
            if q_r.cpu or q_r.memory or q_r.scalars:
                q = exact_amount(q_r)
                if q is None:
                    return None
        else:
            # inqueue_resource: minResources less allocated where positive, on minResources' dimensions
            # (ephemeral-storage not counted); cpu and memory always listed
            v = mr.cpu - running.cpu
            cpu = v if v > 0 else 0.0
            v = mr.memory - running.memory
            mem = v if v > 0 else 0.0
            scalars = []
            have = running.scalars
            for n, m in mr.scalars.items():
                if n == EPHEMERAL:
                    continue
                v = m - have.get(n, 0.0)
                if v > 0:
                    if not (v.is_integer() and v < _EXACT):
                        return None
                    scalars.append((n, int(v)))
            if cpu or mem or scalars:
                if not (cpu.is_integer() and mem.is_integer() and cpu < _EXACT and mem < _EXACT):
                    return None
                q = (int(cpu), int(mem), tuple(scalars))
    e: Amount | None = None
    if elastic_enabled:
        if mr is None:
            e = exact_amount(running)  # the whole allocated is elastic; it adds something unless all 0
            if e is None:
                return None
            if not (running.cpu or running.memory or running.scalars):
                e = None
        else:
            # Resource.exceeded_part: self - other where self > other, per dimension (self's scalars)
            cpu = running.cpu - mr.cpu if running.cpu > mr.cpu else 0.0
            mem = running.memory - mr.memory if running.memory > mr.memory else 0.0
            scalars = []
            other = mr.scalars
            for n, v in running.scalars.items():
                o = other.get(n, 0.0)
                if v > o:
                    d = v - o
                    if not (d.is_integer() and d < _EXACT):
                        return None
                    scalars.append((n, int(d)))
            if cpu or mem or scalars:
                if not (cpu.is_integer() and mem.is_integer() and cpu < _EXACT and mem < _EXACT):
                    return None
                e = (int(cpu), int(mem), tuple(scalars))
    return a, request, q, e


def _check_amounts(job: JobInfo, elastic_enabled: bool, got: Amounts | None) -> None:
    """The self-check: the lean path's amounts are those of a fresh contribution."""
    want = charged_amounts(job_contribution(job), elastic_enabled)
    if got != want:
        raise check.StateCheckError(f"{check.ENV}: capacity's charged amounts of job {job.uid} are {got}, "
                                    f"its contribution gives {want}")
