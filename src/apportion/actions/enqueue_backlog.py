"""enqueue's backlog carried from open to open (docs/semantics.md K47): what `backlog_reference` finds
by a sorted pass over every job, kept in the memo and moved by the jobs the open says changed.

`backlog_reference` reads, per queue the session knows, the smallest uid of its jobs (the queues are
ordered by it) and its Pending jobs in uid order. Both read only which jobs there are, each one's queue
and whether its phase is Pending. `Session.open_delta` names every job of the last open that is not
handed out again unchanged (gone or changed) and every job of this open that is new or changed; every
other job is the last open's object, with the phase it had then (enqueue's admissions change a job's
phase in place, after open: the next open names the job as changed). So the kept per-queue uids and
Pending jobs, with the jobs the delta names taken out and those of this open put back in, are what a
pass over every job gives, and a session costs the jobs that changed (a bound gang, an admitted job,
a few finished pods), not the ~260 visited ones. The session's votes take the Pending lists apart: it is
handed copies.

A job's queue is read when the job is taken in, so a job object whose queue is moved in place would be
missed. Only a snapshot patch does that (a forecast's booking moves its job into the booked queue,
forecast/reserve.py), and it puts new QueueInfo objects in the snapshot every time; a memo's snapshots
otherwise hand out every QueueInfo that did not change as the same object. So the backlog is carried
only while the session's queues are the last open's (the same names and objects, in order), and built
afresh only when they are the open's before (else the plain path is taken: a forecast with a booking
in force takes it at every session). Under `APPORTION_CHECK_STATE=1` enqueue compares the answer with
`backlog_reference`.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from itertools import chain
from typing import Any, cast

from apportion.cluster.model import JobInfo, PodGroupPhase, QueueInfo
from apportion.framework.dispatch import KeyAnswers
from apportion.framework.kept_queues import KeptQueues
from apportion.framework.session import Session

#: the memo's entry: the backlog as of one open (`Kept`)
BACKLOG_MEMO = "enqueue.backlog"

_PENDING = PodGroupPhase.PENDING

#: what enqueue's votes start from: the queues in order, their Pending jobs, how many Pending jobs in
#: all, whether every one has minResources, and the kept backlog they were handed out from
Carried = tuple[list[QueueInfo], dict[str, list[JobInfo]], int, bool, "Kept"]


class Kept:
    """The backlog as of the open of generation `generation`."""

    __slots__ = ("firsts", "generation", "keys", "known", "names", "no_min", "numbering", "order_stale",
                 "pending", "pending_uids", "queue_of", "queues", "size", "touched", "uids", "unkeyed")

    def __init__(self, generation: int, known: dict[str, QueueInfo]) -> None:
        self.generation = generation
        #: the open's queues, as the snapshot gave them (names and QueueInfo objects, in order)
        self.known = KeptQueues(known)
        #: per job uid, its queue
        self.queue_of: dict[str, str] = {}
        #: per queue with a job, its jobs' uids in order
        self.uids: dict[str, list[str]] = {}
        #: per queue with a job, its Pending jobs and their uids, in uid order
        self.pending: dict[str, list[JobInfo]] = {}
        self.pending_uids: dict[str, list[str]] = {}
        #: how many Pending jobs, and how many of them have no minResources
        self.size = 0
        self.no_min = 0
        #: the queues with a job by their first uid, and their QueueInfo objects when the session knew
        #: every one of them (None: not looked up yet)
        self.names: list[str] = []
        self.queues: list[QueueInfo] | None = None
        #: whether `names` must be sorted again, and the queues whose first uid may have moved since it
        #: was (a job taken out and put back in keeps its queue's first uid: `names` then holds)
        self.order_stale = True
        self.touched: set[str] = set()
        #: per queue of `names`, its first uid when `names` was sorted
        self.firsts: dict[str, str] = {}
        #: per queue with a job, its Pending jobs' keys (buckets) in the enqueue test's numbering
        #: `numbering` (None: a job taken in since, listed in `unkeyed` by uid)
        self.keys: dict[str, list[Any]] = {}
        self.numbering: tuple[object, int] | None = None
        self.unkeyed: dict[str, JobInfo] = {}

    def add(self, job: JobInfo) -> None:
        """Take a job of this open in."""
        uid, name = job.uid, job.queue
        self.queue_of[uid] = name
        mine = self.uids.get(name)
        if mine is None:
            self.uids[name] = [uid]
            self.pending[name] = []
            self.pending_uids[name] = []
            self.keys[name] = []
            self.order_stale = True
        else:
            if uid < mine[0]:
                self.touched.add(name)
            insort(mine, uid)
        if job.phase is _PENDING:
            uids = self.pending_uids[name]
            at = bisect_left(uids, uid)
            uids.insert(at, uid)
            self.pending[name].insert(at, job)
            self.keys[name].insert(at, None)
            self.unkeyed[uid] = job
            self.size += 1
            if job.min_resources is None:
                self.no_min += 1

    def remove(self, uid: str) -> None:
        """Take out a job of the last open (nothing when it had none of that uid)."""
        name = self.queue_of.pop(uid, None)
        if name is None:
            return
        uids = self.pending_uids[name]
        at = bisect_left(uids, uid)
        if at < len(uids) and uids[at] == uid:
            del uids[at]
            job = self.pending[name].pop(at)
            del self.keys[name][at]
            self.unkeyed.pop(uid, None)
            self.size -= 1
            if job.min_resources is None:
                self.no_min -= 1
        mine = self.uids[name]
        at = bisect_left(mine, uid)
        del mine[at]
        if not at:
            self.touched.add(name)
            if not mine:
                del self.uids[name], self.pending[name], self.pending_uids[name], self.keys[name]

    def holds_queues(self, known: dict[str, QueueInfo]) -> bool:
        """Whether the session's queues are the ones this backlog was kept with (names and objects)."""
        return self.known.same(known)

    def handed_out(self, known: dict[str, QueueInfo]) -> Carried | None:
        """The backlog for a session that knows the queues `known` (those it was kept with): copies of the
        Pending lists, which the votes take apart. None when a queue with a job is one the session does
        not know (the reference leaves such a queue's jobs out: rare, so not carried)."""
        touched = self.touched
        if touched:
            # a queue gone or new, or one whose first uid moved: the order is sorted again
            uids, firsts = self.uids, self.firsts
            for name in touched:
                mine = uids.get(name)
                if mine is None or firsts.get(name) != mine[0]:
                    self.order_stale = True
                    break
            touched.clear()
        if self.order_stale:
            uids = self.uids
            self.firsts = {name: mine[0] for name, mine in uids.items()}
            self.names = sorted(uids, key=self.firsts.__getitem__)
            self.queues = None
            self.order_stale = False
        names = self.names
        queues = self.queues
        if queues is None:
            got = list(map(known.get, names))
            if None in got:
                return None
            queues = self.queues = cast(list[QueueInfo], got)  # no None among them
        pending = self.pending
        ordered = dict(zip(names, map(list, map(pending.__getitem__, names))))
        return list(queues), ordered, self.size, not self.no_min, self

    def bucketed(self, ssn: Session, names: list[str], texts: bool) -> tuple[list[Any], KeyAnswers] | None:
        """`Session.enqueue_buckets` of the Pending jobs in the order the session's votes list them (queue
        after queue, `names`), asked only of the jobs taken in since the last session's ask while the
        test's numbering is the one the kept keys were given in (`BucketAnswers.numbering`: a key names
        one queue and minResources by value within a numbering, and a kept job is the same object, in the
        same queue, with the same minResources). None when the test gives no keys."""
        fresh = list(self.unkeyed.values())
        got = ssn.enqueue_buckets(fresh, texts)
        if got is None:
            return None
        ids, answers = got
        numbering = getattr(answers, "numbering", None)
        kept = self.numbering
        keys = self.keys
        if numbering is None or kept is None or numbering[0] is not kept[0] or numbering[1] != kept[1]:
            # no numbering kept, or another one: every Pending job is asked
            pending = self.pending
            every = list(chain.from_iterable(map(pending.__getitem__, names)))
            got = ssn.enqueue_buckets(every, texts)
            if got is None:
                return None
            ids, answers = got
            at = 0
            for name in names:
                end = at + len(pending[name])
                keys[name] = ids[at:end]
                at = end
            self.unkeyed.clear()
            self.numbering = getattr(answers, "numbering", None)
            return ids, answers
        uids_of = self.pending_uids
        for job, key in zip(fresh, ids, strict=True):
            name = job.queue
            keys[name][bisect_left(uids_of[name], job.uid)] = key
        self.unkeyed.clear()
        return list(chain.from_iterable(map(keys.__getitem__, names))), answers


class _Seen:
    """The queues of an open whose backlog was not kept (`Kept.holds_queues` compares with them)."""

    __slots__ = ("known",)

    def __init__(self, known: dict[str, QueueInfo]) -> None:
        self.known = KeptQueues(known)

    def holds_queues(self, known: dict[str, QueueInfo]) -> bool:
        """`Kept.holds_queues`."""
        return self.known.same(known)


def carried_backlog(ssn: Session) -> Carried | None:
    """The session's backlog from the memo's, moved by the jobs the open says changed; None when there is
    no memo or no open delta (the caller then takes the plain path). The memo is given this open's."""
    memo: dict[str, Any] | None = ssn.memo
    generation = ssn.open_generation
    if memo is None or generation is None:
        return None
    # taken out first: a session that fails half-way leaves none to carry
    kept = memo.pop(BACKLOG_MEMO, None)
    delta = ssn.open_delta
    jobs = ssn.jobs
    known = ssn.queues
    if (isinstance(kept, Kept) and delta is not None and kept.generation == delta.since
            and kept.holds_queues(known)):
        remove = kept.remove
        for uid in delta.gone:
            remove(uid)
        add = kept.add
        for uid in delta.changed:
            remove(uid)
            job = jobs.get(uid)
            if job is not None:
                add(job)
        kept.generation = generation
    elif isinstance(kept, (Kept, _Seen)) and kept.holds_queues(known):
        kept = Kept(generation, known)
        add = kept.add
        for uid in sorted(jobs):
            add(jobs[uid])
    else:
        # the queues moved since the last open (or there was none): this session takes the plain path,
        # and the next one builds the backlog if its queues are this one's
        memo[BACKLOG_MEMO] = _Seen(known)
        return None
    memo[BACKLOG_MEMO] = kept
    return kept.handed_out(known)
