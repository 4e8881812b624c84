"""Jobs allocate passes over instead of trying them (semantics F4): what a caller hands a session.

A forecast's run session (forecast/sim.py) is opened and asked whether it may change something
(the quiet test, F1-F3) before it runs. That test bounds, for every job allocate would try, how many
of its tasks could be placed on the session's FutureIdle as it opened (`places_at_most`), and knows
how many it lacks for gang's JobReady or JobPipelined to let a statement stay. A job that lacks more
than the bound allows is tried by allocate all the same: some of its tasks placed, the statement
discarded, the job explained. `PassOver` carries those jobs into the session (`Session.shared`,
under `PASS_OVER`), and allocate explains such a job with what the bound found instead of trying it.

Whether the job is still hopeless when allocate reaches it is checked there (`PassOver.why`): the
FutureIdle of every node must be no more than it was at open (placements and pipelines take from it;
a discarded statement gives back what it took, exactly on whole amounts), so the bound over the
table as it stands can only be smaller; and the job must lack at least as many tasks as at open.
A job for which either fails is tried as before.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from apportion.cluster.model import JobInfo
from apportion.framework.session import Session
from apportion.lean_dataclass import dataclass
from apportion.state import check

#: `Session.shared`'s entry holding the session's `PassOver` (absent: every job is tried)
PASS_OVER = "allocate.pass_over"


#: False: `PassOver.why` counts what a job lacks at every look (the reference); True: the count is kept on
#: the job while its task statuses stay (`lacking_kept`, docs/semantics.md K58)
KEEP_LACKING = True
#: JobInfo.derived key of `lacking_kept`'s count: (version, minMember, count)
LACKING_KEY = "pass_over.lacking"


def lacking_kept(job: JobInfo, checking: bool = False) -> int:
    """`lacking(job)`, kept on the job (`JobInfo.derived`): the count reads minMember, the task counts by
    status and the pending best-effort count, and every task added and every status change (all that
    moves those counts) bumps `JobInfo.version`. A forecast's ~30 jobs passed over a run session are
    most often the same jobs, unchanged, session after session. `checking`: the self-check's switch (a
    kept count is then compared with a fresh one)."""
    kept = job.derived.get(LACKING_KEY)
    if kept is not None and kept[0] == job.version and kept[1] == job.min_available:
        n: int = kept[2]
        if checking and n != lacking(job):
            raise check.StateCheckError(f"{check.ENV}: job {job.uid} lacks {lacking(job)} tasks, "
                                        f"{n} were kept on it")
        return n
    n = lacking(job)
    job.derived[LACKING_KEY] = (job.version, job.min_available, n)  # type: ignore[assignment]
    return n


def lacking(job: JobInfo) -> int:
    """How many more placed tasks gang's JobReady and JobPipelined need before either lets a statement of
    the job stay (ready + pipelined + pending best-effort against minMember)."""
    return job.min_available - job.ready_num() - job.waiting_num() - job.pending_best_effort_num()


@dataclass(slots=True)
class PassOver:
    """The jobs allocate may pass over in one session, each with what it lacks and the bound on the
    tasks that fit, and FutureIdle as the session opened (see the module)."""

    #: FutureIdle of every node as the session opened (a copy)
    future: np.ndarray
    #: uid -> (tasks the job lacks, at least 1; at most this many of its tasks fit, fewer than that)
    jobs: dict[str, tuple[int, int]]
    #: the table's touch position at which FutureIdle was last found within `future` (the creator's
    #: position when it copied `future` from the table: FutureIdle is `future` there; -1: unknown)
    stamp: int = -1
    #: jobs passed over, and jobs tried anyway (the check failed, or the self-check tried them)
    passed: int = 0
    tried: int = 0
    #: the explanations made, by (bound, need, minMember)
    texts: dict[tuple[int, int, int], str] = field(default_factory=dict)
    #: the self-check's switch, set by allocate for its session (kept counts compared with fresh ones)
    checking: bool = False

    def why(self, ssn: Session, job: JobInfo) -> str | None:
        """The explanation of the job when allocate may pass over it now, else None (try it)."""
        held = self.jobs.get(job.uid)
        # `_within` and `lacking_kept` asked only where their answer is not at hand (allocate asks this
        # of ~30 jobs a run session, with the table as it was at the last look and most counts kept)
        if held is None or (len(ssn.table.touched) != self.stamp and not self._within(ssn)):
            return None
        need, bound = held
        lack = lacking_kept(job, self.checking) if KEEP_LACKING else lacking(job)
        if lack < need:
            return None
        # a session's jobs share a few (bound, need, minMember): each text is made once
        key = (bound, need, job.min_available)
        text = self.texts.get(key)
        if text is None:
            text = self.texts[key] = _text(*key)
        return text

    def _within(self, ssn: Session) -> bool:
        """Whether FutureIdle is nowhere above its value at open."""
        table = ssn.table
        stamp = len(table.touched)
        if stamp != self.stamp:
            # the table logs every change it makes: with nothing logged since the last look,
            # FutureIdle is what was compared then
            if not bool(np.all(table.future <= self.future)):
                return False
            self.stamp = stamp
        return True


def _text(bound: int, need: int, min_available: int) -> str:
    """The explanation of a job passed over."""
    return (f"gang: at most {bound} of the {need} tasks still needed fit on the cluster's free resources "
            f"(minMember {min_available})")
