"""Sessions of a forecast that provably change nothing, or nothing but phases (semantics F1, F2), so
that the run may skip them: the rules, and `session_verdict`, which applies them to every job.

A forecast runs the real session after every change, and most changes are completions: the session
after one often binds, pipelines, evicts and admits nothing and leaves every PodGroup phase as it was.
The simulator then jumps to the next event; only running the session showed that. The test shows it
from the opened session instead (`QuietTest`, forecast/quiet_kept.py, asks it session after session),
with bounds that can only over-count what the actions could do:

* **enqueue** admits nothing: capacity's own backlog test (K14, `Session.enqueue_admissible`) finds
  no job it would admit (a refusal changes no accounting, so no vote order can admit one); a Pending
  job without minResources would be admitted without a vote, so none may wait;
* **allocate** places nothing that stays: no statement is committed or kept pipelined, so every job
  is tried against the node table as the session opened. A placement (allocated or pipelined) needs
  request <= FutureIdle (idle + releasing - pipelined, within the table's tolerance) and takes the
  request off the node's FutureIdle, so on one node a job places at most
  min over d of (FutureIdle_d + 2 * MIN_RESOURCE) // (smallest request of its pending tasks)_d tasks,
  and in all at most the sum of that over the nodes (and no more than its pending tasks): every
  other test (predicates, the queue's allocatable, overused) only refuses more. gang's JobReady and
  JobPipelined need ready + waiting + pending best-effort >= minMember, which each placement raises
  by one; a job whose bound is below what it lacks is discarded (nothing changed). Without gang as
  the one vote on JobPipelined (and one of the JobReady votes), only a bound of 0 will do;
* **backfill** has no task to place: no job has a pending or pipelined best-effort task;
* **close** changes no phase: each job's phase is worked out as gang's close hook and the session's
  phase write-back would work it out on the unchanged tasks, and must be the one it has.

When everything but close is shown to change nothing, close's effect is known too (semantics F2):
it writes each job the phase worked out above, and nothing else a later session reads (gang's
conditions are cleared by the next snapshot; the why-pending texts are not kept). Such a session is
not run either: the test hands the simulator the phases that move, and the simulator writes them as
the session's close would have. The run then goes on to the next period, as after any phase change.

Any other action (reclaim, preempt, ...), or a plugin other than gang with a close hook, and the
session runs. Under `APPORTION_CHECK_STATE=1` the simulator runs a session the test calls quiet
anyway and fails if it changed anything but those phases (simulation/engine.py, `Simulator.quiet`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

from apportion.cluster.model import (
    FAILED,
    GROUP_COMPLETED,
    GROUP_INQUEUE,
    GROUP_PENDING,
    GROUP_RUNNING,
    GROUP_UNKNOWN,
    PENDING,
    PIPELINED,
    READY_STATUSES,
    RELEASING,
    RUNNING,
    SCHEDULED_STATUSES,
    SUCCEEDED,
    JobInfo,
    PodGroupPhase,
    QueueInfo,
    TaskInfo,
)
from apportion.framework import extension as ep
from apportion.framework.interface import Plugin
from apportion.framework.session import Session, phase_written_back
from apportion.plugins.gang import GangPlugin, excused_for_releasing
from apportion.resources import MIN_RESOURCE
from apportion.state import check

#: the actions the test is proven for (any other in the conf: every session runs)
PROVEN_ACTIONS = frozenset({"enqueue", "allocate", "backfill"})


def why_not_quiet(ssn: Session) -> str:
    """"" when the opened session provably changes nothing, else the first reason it may ("phase"
    when only close may change something: `session_verdict` then says what)."""
    why, phases = session_verdict(ssn)
    return why or ("phase" if phases else "")


def session_verdict(ssn: Session) -> tuple[str, dict[str, PodGroupPhase]]:
    """("", phases) when the opened session's actions provably change nothing: its close then moves
    exactly the phases in `phases` (uid -> the phase close writes; only those that differ) and changes
    nothing else a later session reads. Else (the first reason it may change more, {}).

    Every job is looked at (the reference: `QuietTest`, forecast/quiet_kept.py, keeps what it found
    from session to session)."""
    actions = ssn.conf.actions
    unproven, gang = proof_blocker(ssn)
    if unproven:
        return unproven, {}
    jobs = ssn.jobs
    if "allocate" in actions and "enqueue" not in actions and any(j.is_pending() for j in jobs.values()):
        return "admission", {}  # allocate admits Pending jobs itself without enqueue
    phases = phases_moved(ssn, gang)
    if "backfill" in actions and any(j.pending_be or j.counts.get(PIPELINED) for j in jobs.values()):
        return "backfill", {}
    if "allocate" in actions and not _nothing_placed(ssn, gang is not None and gang_decides(ssn)):
        return "placement", {}
    if "enqueue" in actions:
        backlog = [j for uid_, j in sorted(jobs.items()) if j.is_pending() and j.queue in ssn.queues]
        # asked last: with an answer other than "none" (a candidate, or no such test), enqueue asks
        # the same question first thing itself, on the same accounting
        if backlog and (any(j.min_resources is None for j in backlog) or ssn.enqueue_admissible(backlog) != []):
            return "admission", {}
    return "", phases


def proof_blocker(ssn: Session) -> tuple[str, Plugin[Session] | None]:
    """The first reason no proof is tried for this session's conf ("action": an action the proof does
    not cover; "close hook": a plugin other than gang acts at close), else ("", the gang plugin or
    None). Shared by the reference walk and the kept test, so both refuse the same confs."""
    if not PROVEN_ACTIONS.issuperset(ssn.conf.actions):
        return "action", None
    hooks_known, gang = gang_of(ssn)
    if not hooks_known:
        return "close hook", None
    return "", gang


def gang_of(ssn: Session) -> tuple[bool, Plugin[Session] | None]:
    """(no plugin but gang has a close hook, whose effect on the phase write-back is not worked out
    here; the session's gang plugin or None)."""
    gang: Plugin[Session] | None = None
    for _, plugin in ssn.plugins:
        if plugin.name == "gang":
            gang = plugin
        elif type(plugin).on_session_close is not Plugin.on_session_close:
            return False, None
    return True, gang


def gang_decides(ssn: Session) -> bool:
    """gang is among the JobReady votes (all must agree) and the one JobPipelined vote."""
    ready = [opt.name for _, opt, _ in ssn._consulted(ep.JOB_READY)]
    pipelined = [opt.name for _, opt, _ in ssn._consulted(ep.JOB_PIPELINED)]
    return "gang" in ready and pipelined == ["gang"]


def close_phase(job: JobInfo, gang: Plugin[Session] | None, session_uid: str) -> PodGroupPhase:
    """The phase close gives the job when the actions changed nothing: gang's close hook (an
    Unschedulable condition for a running job that is not ready, unless excused for releasing tasks)
    and the session's phase write-back (`phase_written_back`), on the job as it opened.

    Worked out here in one walk over the job's status counts (`PHASE_AT_ONCE`: the quiet tests ask it
    of every job built again) when gang is gang's own plugin (or absent) and the job has no per-role
    minimum (gang's JobReady then compares ready + pending best-effort with minMember alone) and no
    releasing task (none is excused, none is scheduled with a node while releasing): the ready and the
    scheduled counts (`JobInfo.ready_num`, `scheduled_num`) are the same integer sums. Else, and as the
    reference, `close_phase_reference` (compared under the self-check)."""
    counts = job.counts
    if not (PHASE_AT_ONCE and (gang is None or type(gang) is GangPlugin) and type(job) is JobInfo
            and not job.min_task_member and not counts.get(RELEASING)):
        return close_phase_reference(job, gang, session_uid)
    ready = scheduled = 0
    for status, n in counts.items():
        if status in READY_STATUSES:
            ready += n
        if status in SCHEDULED_STATUSES:
            scheduled += n
    unknown = False
    if counts.get(RUNNING, 0):
        if gang is not None and job.tasks and ready + job.pending_be < job.min_available:
            unknown = True  # gang's Unschedulable condition on a running job that is not ready
        else:
            cond = job.conditions.get("Unschedulable")
            unknown = bool(cond and cond[0] == "True" and cond[3] == session_uid)
    if unknown:
        got = GROUP_UNKNOWN
    elif scheduled >= job.min_available:
        # "scheduled equals completed" (`phase_written_back`)
        got = GROUP_COMPLETED if scheduled == counts.get(SUCCEEDED, 0) + counts.get(FAILED, 0) else GROUP_RUNNING
    else:
        got = GROUP_PENDING if job.phase is not GROUP_INQUEUE else GROUP_INQUEUE
    if check.enabled() and got is not (want := close_phase_reference(job, gang, session_uid)):
        raise check.StateCheckError(f"{check.ENV}: job {job.uid}'s phase at close worked out at once is "
                                    f"{got}, through gang and the write-back {want}")
    return got


#: `close_phase` walks the job's status counts once; False: gang's JobReady and the session's
#: write-back asked (`close_phase_reference`, the reference)
PHASE_AT_ONCE = True


def close_phase_reference(job: JobInfo, gang: Plugin[Session] | None, session_uid: str) -> PodGroupPhase:
    """`close_phase` through gang's JobReady and `phase_written_back` (the reference)."""
    unschedulable = False
    if job.counts.get(RUNNING, 0):
        if gang is not None and job.tasks and not gang.job_ready(job) and not excused_for_releasing(job):  # type: ignore[attr-defined]
            unschedulable = True
        else:
            cond = job.conditions.get("Unschedulable")
            unschedulable = bool(cond and cond[0] == "True" and cond[3] == session_uid)
    return phase_written_back(job, unschedulable)


def phases_moved(ssn: Session, gang: Plugin[Session] | None) -> dict[str, PodGroupPhase]:
    """The jobs to which close gives a phase other than the one they have (`close_phase`), with that
    phase, in the session's job order."""
    uid = ssn.uid
    moved: dict[str, PodGroupPhase] = {}
    for job in ssn.jobs.values():
        phase = close_phase(job, gang, uid)
        if phase is not job.phase:
            moved[job.uid] = phase
    return moved


def _nothing_placed(ssn: Session, gang_decides: bool) -> bool:
    """No job allocate tries can place a task that stays (the bound of the module's docstring)."""
    enqueue = "enqueue" in ssn.enabled_actions
    future = ssn.table.future_idle()
    bounds: dict[bytes, int] = {}
    for job in ssn.jobs.values():
        if (job.is_pending() and enqueue) or not job.counts.get(PENDING) or job.queue not in ssn.queues:
            continue  # a Pending job is not admitted, and enqueue admits none (asked in session_verdict)
        n, least = least_request(ssn, job)
        if least is None:
            continue
        key = least.tobytes()
        fit = bounds.get(key)
        if fit is None:
            fit = bounds[key] = places_at_most(future, least)
        placed = min(fit, n)
        if not placed:
            continue
        if not gang_decides:
            return False
        if job.ready_num() + job.waiting_num() + job.pending_best_effort_num() + placed >= job.min_available:
            return False
    return True


class FactsContext(Protocol):
    """What a job's facts read of the session (`least_request`, quiet_kept.job_facts): its uid, its
    queues and a task's node-table row."""

    @property
    def uid(self) -> str:
        """The session's uid (close reads it off an Unschedulable condition)."""

    @property
    def queues(self) -> Mapping[str, QueueInfo]:
        """The session's queues by name."""

    def task_vec(self, t: TaskInfo) -> np.ndarray:
        """The task's request as a node-table row (kept on the task)."""


def least_request(ssn: FactsContext, job: JobInfo) -> tuple[int, np.ndarray | None]:
    """The job's tasks allocate would try (pending, not best-effort, not gated): how many, and their
    smallest request component by component as a node-table row (None: no such task)."""
    tasks = [t for t in job.tasks.values() if t.status is PENDING and not t.best_effort and not t.gated]
    if not tasks:
        return 0, None
    vecs = [ssn.task_vec(t) for t in tasks]
    first = vecs[0]
    for v in vecs:
        if v is not first:
            return len(tasks), np.min(np.stack(vecs), axis=0)
    # one row for all (the tasks of a gang share their template's request, and so its row): the
    # minimum of copies of a row is that row, bit for bit; rows are read, never written
    return len(tasks), first


def least_request_reference(ssn: FactsContext, job: JobInfo) -> tuple[int, np.ndarray | None]:
    """`least_request` stacking every task's row (the reference its property test compares with)."""
    tasks = [t for t in job.tasks.values() if t.status is PENDING and not t.best_effort and not t.gated]
    if not tasks:
        return 0, None
    return len(tasks), np.min(np.stack([ssn.task_vec(t) for t in tasks]), axis=0)


def places_at_most(future: np.ndarray, least: np.ndarray) -> int:
    """An upper bound on how many tasks, each requesting at least `least` (a node-table row), fit
    one after another on the nodes whose FutureIdle rows are `future`; a large number when `least`
    requests nothing."""
    dims = np.nonzero(least > 0)[0]
    if len(dims) == 0:
        return 1 << 62
    per_node = np.floor((future[:, dims] + 2 * MIN_RESOURCE) / least[dims]).min(axis=1)
    return int(np.clip(per_node, 0, 1 << 40).sum())


def places_at_most_reference(future: np.ndarray, least: np.ndarray) -> int:
    """`places_at_most` node by node and tasks one at a time: each further task is counted while the
    table's own fit rule (request <= FutureIdle within MIN_RESOURCE) would take `least` on the node."""
    if not (least > 0).any():
        return 1 << 62
    total = 0
    for row in future:
        left = row.copy()
        while bool(np.all((least < left) | (np.abs(least - left) < MIN_RESOURCE) | (least <= 0))):
            left = left - least
            total += 1
    return total
