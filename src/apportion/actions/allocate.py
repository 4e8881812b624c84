"""allocate: place the pending tasks of admitted jobs, queue by queue, gang by gang (§5.2)."""

from __future__ import annotations

import numpy as np

from apportion.actions.common import need_continue_allocating, pop_best, sorted_tasks
from apportion.actions.pass_over import PASS_OVER, PassOver, lacking
from apportion.cluster.model import (
    GROUP_INQUEUE,
    GROUP_PENDING,
    PENDING,
    FitError,
    JobInfo,
    QueueInfo,
    TaskInfo,
)
from apportion.framework import extension as ep
from apportion.framework.session import Session
from apportion.framework.statement import Statement
from apportion.state import check

#: False: the queue loop pops every job, also when all but one are to be passed over (the reference);
#: True: such a session tries the one job and passes over the others without the queue loop (`_lone`,
#: docs/semantics.md K39)
PASS_ALL_AT_ONCE = True
#: False: the visit asks every job's JobValid and looks for a task to try at every session (the
#: reference); True: the answers are kept on the job while it stays as it was (`visit_verdict`, K48)
KEEP_VISIT_VERDICTS = True
#: JobInfo.derived key of `visit_verdict`'s answer: (version, phase, (minimums, JobValid plugins consulted),
#: (valid, message, tries))
VISIT_KEY = "allocate.visit"
#: False: with enqueue configured the visit goes over every job to visit and passes over those waiting for
#: enqueue (the reference); True: it leaves out those the session's jobs log shows are waiting still (K52)
SKIP_WAITING = True


def execute(ssn: Session) -> None:
    """Run allocate over the session."""
    enqueue_configured = "enqueue" in ssn.enabled_actions
    queues: list[QueueInfo] = []
    queue_jobs: dict[str, list[JobInfo]] = {}
    task_lists: dict[str, list[TaskInfo]] = {}
    # jobs the caller showed cannot keep a placement this session (semantics F4; only a forecast's)
    passing: PassOver | None = ssn.shared.get(PASS_OVER)
    hopeless = passing.jobs if passing is not None else {}
    checking = bool(hopeless) and check.enabled()
    if checking:
        assert passing is not None
        _check_stamp(ssn, passing)
        passing.checking = True
    # a quiet job (admitted, valid, nothing pending) would be passed over below: only the others are visited
    jobs_of = ssn.jobs
    waiting = GROUP_PENDING
    kept = KEEP_VISIT_VERDICTS and ssn.job_local_validity()
    checking_visits = kept and check.enabled()
    # a job object seen under another configuration (other JobValid plugins) must not take its answer
    validity = tuple(opt.name for _, opt, _ in ssn.consulted(ep.JOB_VALID)) if kept else ()
    for uid in _to_visit(ssn, enqueue_configured):
        job = jobs_of[uid]
        # JobInfo.is_pending inline: in a forecast most visited jobs wait for enqueue, ~500 a session
        if job.phase is waiting:
            if enqueue_configured:
                continue
            job.set_phase(GROUP_INQUEUE)
        if kept:
            valid, msg, tries = visit_verdict(ssn, job, validity, checking_visits)
        else:
            valid, msg = ssn.job_valid(job)
            tries = None
        if not valid:
            ssn.explain(job.uid, msg)
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if tries is not None:
            if not tries:
                continue  # no pending task, or none to try
        elif not job.counts.get(PENDING):
            continue  # most jobs run whole: no task of theirs to visit
        if job.uid in hopeless:
            # a job to pass over gets its task list only if it is tried after all (`_passed_over`): until
            # allocate reaches it, no step moves a task of it, so the list would be this one
            if tries is None and not has_tasks_to_try(job):
                continue
        else:
            tasks = tasks_to_try(job)
            if not tasks:
                continue
            task_lists[job.uid] = sorted_tasks(ssn, job, tasks)
        if queue.name not in queue_jobs:
            queue_jobs[queue.name] = []
            queues.append(queue)
        queue_jobs[queue.name].append(job)

    predicted: dict[str, str] | None = None
    passes = 0  # jobs the loop passed over (or, under the self-check, tried and found to keep nothing)
    if passing is not None and hopeless and PASS_ALL_AT_ONCE:
        lone = _lone(ssn, passing, queues, queue_jobs)
        if lone is not None:
            if not checking:
                _run_lone(ssn, passing, queues, queue_jobs, task_lists, lone)
                return
            # the self-check tries every job to pass over (`_passed_over`): the queue loop runs, and
            # its passes are compared with what `_run_lone` would have made of them
            predicted = lone[2]

    picker = ssn.queue_picker(queues)
    while len(picker):
        queue = picker.pop()
        if ssn.overused(queue):
            for job in queue_jobs[queue.name]:
                ssn.explain(job.uid, f"queue {queue.name} is overused: allocated has reached deserved")
            continue
        jobs = queue_jobs[queue.name]
        if not jobs:
            continue
        job = pop_best(jobs, ssn.job_compare)
        if job.uid in hopeless:
            assert passing is not None
            if _passed_over(ssn, passing, queue, job, task_lists, checking):
                passes += 1
                picker.push(queue)
                continue
        stmt = allocate_for_job(ssn, queue, job, task_lists[job.uid])
        if stmt is not None and ssn.job_ready(job):
            stmt.commit()
            if task_lists[job.uid]:
                jobs.append(job)
        picker.push(queue)
    if predicted is not None and passing is not None:
        _check_lone(ssn, passing, predicted, passes)


def _to_visit(ssn: Session, enqueue_configured: bool) -> list[str]:
    """The uids the visit goes over, in uid order: every job to visit (`JobVisits.visit`), or, with
    enqueue configured, that less jobs still waiting for enqueue that the visit would pass over
    (`JobVisits.visit_admitted`, docs/semantics.md K52: a forecast's ~230 waiting jobs a session), when
    the session's snapshot logs its jobs' changes (its jobs delta's live log, K17)."""
    visits = ssn.visits
    delta = ssn.snapshot.jobs_delta if SKIP_WAITING and enqueue_configured else None
    uids = visits.visit_admitted(delta.log) if delta is not None else None
    if uids is None:
        return visits.visit()
    if check.enabled():
        jobs, waiting = ssn.jobs, GROUP_PENDING
        want = [uid for uid in visits.visit() if jobs[uid].phase is not waiting]
        if [uid for uid in uids if jobs[uid].phase is not waiting] != want:
            raise check.StateCheckError(f"{check.ENV}: the jobs allocate visits less those waiting for enqueue "
                                        "differ from every job to visit less those")
    return uids


#: what `_lone` finds: the one job to try and its queue (None when every job is to be passed over),
#: and every other job's explanation, by uid
Lone = tuple[JobInfo | None, QueueInfo | None, dict[str, str]]


def _lone(ssn: Session, passing: PassOver, queues: list[QueueInfo], queue_jobs: dict[str, list[JobInfo]],
          ) -> Lone | None:
    """When the queue loop's answer does not hang on its order (docs/semantics.md K39): no plugin says
    a queue is overused, at most one listed job is not to be passed over, and every other one would
    be passed over now (`PassOver.why`). None otherwise."""
    if ssn.has_fn(ep.OVERUSED):
        return None
    hopeless = passing.jobs
    tried: JobInfo | None = None
    home: QueueInfo | None = None
    whys: dict[str, str] = {}
    for queue in queues:
        for job in queue_jobs[queue.name]:
            if job.uid not in hopeless:
                if tried is not None:
                    return None
                tried, home = job, queue
                continue
            why = passing.why(ssn, job)
            if why is None:
                return None
            whys[job.uid] = why
    return tried, home, whys


def _run_lone(ssn: Session, passing: PassOver, queues: list[QueueInfo], queue_jobs: dict[str, list[JobInfo]],
              task_lists: dict[str, list[TaskInfo]], lone: Lone) -> None:
    """The queue loop's answer when `_lone` found it does not hang on the order (K39): the one job tried
    as the loop tries it (again after each committed step while it has tasks left: the loop pops it
    again, its queue never overused), and every other job passed over with the explanation `_lone`
    found (FutureIdle only shrinks during allocate on the whole amounts F4 requires, and a job not
    tried lacks what it lacked, so each would be passed over wherever the loop reached it)."""
    job, queue, whys = lone
    if job is not None:
        assert queue is not None
        while True:
            stmt = allocate_for_job(ssn, queue, job, task_lists[job.uid])
            if stmt is None or not ssn.job_ready(job):
                break
            stmt.commit()
            if not task_lists[job.uid]:
                break
    for uid, why in whys.items():
        del passing.jobs[uid]
        ssn.explain(uid, why)
    passing.passed += len(whys)


def _check_lone(ssn: Session, passing: PassOver, predicted: dict[str, str], passed: int) -> None:
    """Under the self-check, the queue loop's passes against `_lone`'s prediction: the loop passed over
    (the self-check: tried, and found to keep nothing) every job predicted and no other one, and
    FutureIdle ended nowhere above its value at open."""
    for uid, why in predicted.items():
        if uid in passing.jobs:
            raise check.StateCheckError(f"{check.ENV}: job {uid} was to be passed over ({why}) with the others "
                                        "at once, but the queue loop did not reach it")
    if not bool(np.all(ssn.table.future <= passing.future)):
        raise check.StateCheckError(f"{check.ENV}: FutureIdle rose above its value at open during allocate")
    if passed != len(predicted):
        raise check.StateCheckError(f"{check.ENV}: the queue loop passed over {passed} jobs, "
                                    f"{len(predicted)} were to be passed over at once")


def _check_stamp(ssn: Session, passing: PassOver) -> None:
    """Under the self-check, the touch position the caller stamped its copy of FutureIdle with: the
    table at that position is the copy bit for bit (`PassOver._within` compares nothing there)."""
    if passing.stamp == len(ssn.table.touched) and ssn.table.future.tobytes() != passing.future.tobytes():
        raise check.StateCheckError(f"{check.ENV}: FutureIdle differs from the copy made at touch position "
                                    f"{passing.stamp}, though the table logged no change since")


def _passed_over(ssn: Session, passing: PassOver, queue: QueueInfo, job: JobInfo,
                 task_lists: dict[str, list[TaskInfo]], checking: bool) -> bool:
    """Pass over a job the caller showed cannot keep a placement (semantics F4): True when it was
    explained (or, under the self-check, tried and found to keep nothing), as allocate_for_job
    returning None leaves it; False when it is to be tried (`task_lists` then holds its sorted tasks,
    which the visit left to this look).
    `checking`: the self-check's switch, asked once per session (it reads the environment)."""
    why = passing.why(ssn, job)
    del passing.jobs[job.uid]  # looked at once: a job tried and kept is popped again as any other
    if why is None or checking:
        task_lists[job.uid] = sorted_tasks(ssn, job, tasks_to_try(job))
        passing.tried += 1
    if why is None:
        return False
    if checking:
        # the plain path is the reference: tried, the job must keep nothing and give back all it took
        future, lack = ssn.table.future.copy(), lacking(job)
        if allocate_for_job(ssn, queue, job, task_lists[job.uid]) is not None or lacking(job) != lack or not bool(
                np.all(ssn.table.future <= future)):
            raise check.StateCheckError(f"{check.ENV}: job {job.uid} was to be passed over ({why}) but, tried, "
                                        "it kept a placement")
        return True
    passing.passed += 1
    ssn.explain(job.uid, why)
    return True


def visit_verdict(ssn: Session, job: JobInfo, validity: tuple[str, ...] = (), checking: bool = False,
                  ) -> tuple[bool, str, bool]:
    """What allocate's visit asks of a job, kept on it (`JobInfo.derived`, docs/semantics.md K48): JobValid's
    answer, and whether the job has a task to try (`has_tasks_to_try`, which implies a pending one).

    The caller makes sure every JobValid plugin consulted answers from the job alone
    (`Session.job_local_validity`: a function of the task statuses, the phase and the minimums), and
    a task to try is a pending task (a status) neither best-effort (its request, never changed) nor
    gated (never changed): so the verdict holds while the job's version (bumped by every task added
    and every status change), phase and minimums stay, under the same JobValid plugins (`validity`, their
    names as the session consults them). A job waiting session after session (a forecast's jobs passed
    over, ~30 a session) is asked once. `checking`: the self-check's switch,
    asked once per session (it reads the environment): a kept verdict is then compared with a fresh one."""
    minimums = (job.min_available, job.min_task_member)
    hit = job.derived.get(VISIT_KEY)
    if hit is not None and hit[0] == job.version and hit[1] is job.phase and hit[2] == (minimums, validity):
        got: tuple[bool, str, bool] = hit[3]
        if checking:
            want = _fresh_verdict(ssn, job)
            if got != want:
                raise check.StateCheckError(f"{check.ENV}: allocate's visit verdict kept on job {job.uid} is {got}, "
                                            f"asked afresh it is {want}")
        return got
    verdict = _fresh_verdict(ssn, job)
    job.derived[VISIT_KEY] = (job.version, job.phase, ((minimums[0], dict(minimums[1])), validity), verdict)
    return verdict


def _fresh_verdict(ssn: Session, job: JobInfo) -> tuple[bool, str, bool]:
    valid, msg = ssn.job_valid(job)
    return valid, msg, bool(job.counts.get(PENDING)) and has_tasks_to_try(job)


def tasks_to_try(job: JobInfo) -> list[TaskInfo]:
    """The job's tasks allocate tries, in the job's order: pending, not best-effort, not gated."""
    return [t for t in job.tasks.values() if t.status is PENDING and not t.best_effort and not t.gated]


def has_tasks_to_try(job: JobInfo) -> bool:
    """Whether `tasks_to_try(job)` is not empty, without building it (most often its first task says)."""
    for t in job.tasks.values():  # noqa: SIM110 (a loop: any() would add a generator per call)
        if t.status is PENDING and not t.gated and not t.best_effort:
            return True
    return False


def allocate_for_job(ssn: Session, queue: QueueInfo, job: JobInfo, tasks: list[TaskInfo]) -> Statement | None:
    """allocateResourcesForTasks: one step of one job, in a fresh statement."""
    stmt = Statement(ssn)
    total_tasks = len(job.tasks)
    n_nodes = len(ssn.nodes)
    while tasks:
        task = tasks.pop(0)
        if not ssn.allocatable(queue, task):
            continue
        if task.role and task.role in job.failed_roles:
            job.nodes_fit_errors[task.uid] = [FitError("", ["already predicated failed for the same role"])]
            continue
        err = ssn.pre_predicate(task)
        if err:
            ssn.record_fit_errors(job, task, [(err, n_nodes)], n_nodes)
            if not need_continue_allocating(total_tasks, ssn, job.uid):
                break
            continue
        row, fits_idle, summary = ssn.choose_node(task)
        if row is None:
            ssn.record_fit_errors(job, task, summary, n_nodes)
            if not need_continue_allocating(total_tasks, ssn, job.uid):
                break
            continue
        if fits_idle:
            stmt.allocate(task, row)
        else:
            stmt.pipeline(task, row)
        if ssn.job_ready(job):
            break
    if ssn.job_ready(job):
        return stmt
    if ssn.job_pipelined(job):
        # Keep (§5.2): neither committed nor discarded; its tasks keep their hold for this session.
        return stmt
    placeable = job.ready_num() + job.waiting_num() + job.pending_best_effort_num()
    reason = f": {job.job_fit_errors}" if job.job_fit_errors else ""
    ssn.explain(job.uid, f"gang {placeable}/{job.min_available} tasks placeable (minMember {job.min_available}){reason}")
    stmt.discard()
    return None
