"""capacity's accounting kept between sessions: per queue, the integer sums of the jobs that did not change.

At session open capacity charges every job to its queue and the queue's ancestors (allocated, request,
inqueue, elastic). Most jobs of a busy cluster run unchanged from one session to the next, and a cache
that sessions it again and again hands the same JobInfo object out again for such a job
(`SchedulerCache.snapshot(keep=True)`). The ledger keeps those jobs' contributions summed per queue as
Python integers, so a session charges only the jobs that are new or changed.

Exactness (docs/semantics.md, cluster-state K7): the sums equal a recount in uid order bit for bit
because every amount taken in is an integer below 2**53 (millicores, bytes, milli-units), so every
partial float sum of the recount is exact and the order of the additions cannot matter. A job with any
other amount is never taken in, and a session that must charge one recounts everything. The order of a
sum's scalar names (which decides the order messages name dimensions in) is the recount's: by the first
job in uid order that lists the name, then that job's own order.

A changed job's entry stays counted until the job is taken in again, which then changes only the
fields whose amounts moved (docs/semantics.md K18): its queues' attributes are rebuilt only if one did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from apportion.cluster.model import JobInfo, PodGroupPhase, QueueInfo
from apportion.cluster.snapshot import JobDelta
from apportion.framework.queue_status import QueueStatus, QueueStatuses
from apportion.lean_dataclass import dataclass
from apportion.plugins.capacity.attrs import QueueAttr
from apportion.plugins.capacity.charged import Amount, charged_amounts, exact_amount, job_amounts
from apportion.plugins.capacity.ledger_checks import (
    check_first_listers,
    check_kept_fields,
    check_many,
    check_split,
)
from apportion.plugins.capacity.ledger_sums import (
    Listers,
    NewJob,
    QueueSum,
    count_in,
    count_in_many,
    count_out,
    same_names,
)
from apportion.plugins.queue_common import queue_share
from apportion.resources import Resource
from apportion.state import check

__all__ = ["Amount", "Ledger", "LedgerReport", "charged_amounts", "exact_amount", "job_amounts"]

LEDGER_MEMO = "capacity.ledger"
#: the fields charged, in the order JobContribution holds them
FIELDS = ("allocated", "request", "inqueue", "elastic")
#: every field's bit (a queue's dirty fields are a mask of `1 << f`)
ALL_FIELDS = (1 << len(FIELDS)) - 1
#: per mask, the fields it names
_FIELDS_OF = [tuple(f for f in range(len(FIELDS)) if m >> f & 1) for m in range(ALL_FIELDS + 1)]
#: tests switch this off: a queue whose sums moved then has its attributes built afresh from its limits
#: (`fresh_attr`) rather than from its last ones with the fields that moved made again (`Ledger.refresh`,
#: docs/semantics.md K38)
KEEP_FIELDS = True
#: `admit` moves a changed job's sums by differences applied queue by queue (`_admit_moved`); False:
#: field by field through every queue of the path (the reference, property-tested)
LEAN_ADMIT = True
#: `admit_many` counts the jobs not counted before together, path by path (`count_in_many`); False:
#: `admit` job by job (the reference, property-tested)
BULK_NEW = True

@dataclass
class LedgerReport:
    """A queue report made from a ledger's attributes: the report, the session's queues it read the
    states from (a copy), and the queues whose attributes that session had copied (owned)."""

    statuses: QueueStatuses
    queues: dict[str, QueueInfo]
    owned: list[str]


@dataclass
class _Entry:
    job: JobInfo
    #: the job's task version and phase when it was taken in: its amounts are a function of them
    #: (`job_contribution` is kept on the job under the same two), and a session may change both in place
    version: int
    phase: PodGroupPhase
    path: tuple[str, ...]
    amounts: tuple[Amount | None, ...]


class Ledger:
    """The kept jobs' sums per queue (leaf and every ancestor). Built for one tree: a change to the tree
    (its memo rebuilt) or to ElasticEnable starts a new ledger."""

    def __init__(self, tree: Any, elastic_enabled: bool) -> None:
        self.tree = tree
        self.elastic_enabled = elastic_enabled
        self.entries: dict[str, _Entry] = {}
        #: queue name -> its four sums
        self.sums: dict[str, list[QueueSum]] = {}
        #: per queue of the tree, its attributes with the sums above as accounting (never changed once
        #: built: a session copies one before changing it, `CapacityBase._own_path`)
        self.base: dict[str, QueueAttr] = {}
        #: per queue, the status last reported for its `base` attributes (capacity's queue_report)
        self.status: dict[str, tuple[QueueAttr, str, QueueStatus]] = {}
        #: queues whose sums changed since their `base` was built (every queue at first), each with the
        #: mask of the fields that did (`1 << f`, f indexing FIELDS)
        self.dirty: dict[str, int] = dict.fromkeys(tree.limits, ALL_FIELDS)
        #: per queue, its deserved and whether that is empty (`QueueAttr.update_share`'s test), kept
        self._best_effort: dict[str, tuple[Resource, bool]] = {}
        #: queues whose `base` was built again since the last queue report (the report takes it)
        self.rebuilt: set[str] = set()
        #: the last queue report made from this ledger's attributes (capacity's queue_report)
        self.report: LedgerReport | None = None
        #: the snapshot (`JobDelta.snapshot`) whose every job the last completed split and refresh
        #: looked at (None: none), and the one the split under way looks at
        self.at: int | None = None
        self._next: int | None = None
        #: uids of the jobs the last split returned that were not taken in (charged beside the ledger
        #: or not at all): a split from the jobs' delta returns them again, as the full split does
        self.outside: set[str] = set()
        #: entries of jobs the split under way found changed: still counted in the sums until the job
        #: is taken in again (`admit` then changes only the fields whose amounts moved) or `settle`
        self.replacing: dict[str, _Entry] = {}

    @staticmethod
    def keeps(job: JobInfo) -> bool:
        """Whether a job is worth keeping: one a cache hands out again while it is unchanged, which it
        does for a job whose tasks run or wait (the backlog) as well as for one that runs whole."""
        return bool(job.tasks)

    def split(self, jobs: dict[str, JobInfo], delta: JobDelta | None = None) -> list[JobInfo]:
        """Drop the entries of jobs that changed or left; return the jobs to charge (not in uid order).
        A job is unchanged when it is the same object with the task version and phase it was taken in
        with (a session changes a waiting job's phase in place when enqueue admits it).

        With the snapshot's jobs delta, when the last split looked at every job of the snapshot before
        this one, only the jobs the delta names and those the last split returned and were not taken
        in are looked at (docs/semantics.md K17); `split_reference` is the walk over every job."""
        self.settle()
        at, self.at = self.at, None
        self._next = delta.snapshot if delta is not None else None
        look = delta.since_last(at) if delta is not None else None
        if look is None:
            fresh = self.split_reference(jobs)
        else:
            look |= self.outside
            if check.enabled():
                check_split(self, jobs, look)
            entries = self.entries
            fresh = []
            for uid in sorted(look):
                job = jobs.get(uid)
                e = entries.get(uid)
                if e is not None:
                    if job is None:
                        self._remove(uid, e)
                        continue
                    if e.job is job and e.version == job.version and e.phase is job.phase:
                        continue
                    self.replacing[uid] = e
                if job is not None:
                    fresh.append(job)
        self.outside = {job.uid for job in fresh}
        return fresh

    def split_reference(self, jobs: dict[str, JobInfo]) -> list[JobInfo]:
        """`split` walking every job (the reference its delta is compared with)."""
        entries = self.entries
        fresh: list[JobInfo] = []
        for uid, job in jobs.items():
            e = entries.get(uid)
            if e is not None:
                if e.job is job and e.version == job.version and e.phase is job.phase:
                    continue
                self.replacing[uid] = e
            fresh.append(job)
        for uid in entries.keys() - jobs.keys():
            self._remove(uid, entries[uid])
        return fresh

    def admit(self, job: JobInfo, path: tuple[str, ...], amounts: tuple[Amount | None, ...]) -> None:
        """Take in a job's exact amounts, charged to every queue of its path. A job the split found
        changed had its last amounts counted until now: only the fields that moved are changed (most
        changes of a job move no amount: a bound task that starts to run), and its queues are not
        made dirty when none did."""
        uid = job.uid
        self.outside.discard(uid)
        old = self.replacing.pop(uid, None)
        self.entries[uid] = _Entry(job, job.version, job.phase, path, amounts)
        if old is not None and old.path != path:
            self._take_out(uid, old)
            old = None
        elif old is not None and old.amounts == amounts:
            return  # no field moved (a phase move that charges alike, a bound task that starts to run)
        if LEAN_ADMIT:
            if old is None:
                self._admit_new(uid, path, amounts)
            else:
                self._admit_moved(uid, path, old.amounts, amounts)
            return
        all_sums = self.sums
        moved = 0
        members_moved = False
        for f, a in enumerate(amounts):
            was = old.amounts[f] if old is not None else None
            if was == a:
                continue
            moved |= 1 << f
            if was is not None and a is not None and same_names(was[2], a[2]):
                # the same names at the same positions: the members and listers stay as they are, and
                # every queue of the path has sums (the old entry is counted in them)
                dc, dm = a[0] - was[0], a[1] - was[1]
                ds = [(n, v - w) for (n, v), (_, w) in zip(a[2], was[2])]
                for q in path:
                    s = all_sums[q][f]
                    s.cpu += dc
                    s.memory += dm
                    for n, d in ds:
                        s.scalars[n] += d
                continue
            members_moved = True
            for q in path:
                sums = all_sums.get(q)
                if sums is None:
                    sums = all_sums[q] = [QueueSum() for _ in FIELDS]
                s = sums[f]
                if was is not None:
                    count_out(s, uid, was)
                if a is not None:
                    count_in(s, uid, a)
        if moved:
            dirty = self.dirty
            for q in path:
                dirty[q] = dirty.get(q, 0) | moved
            if old is not None and members_moved:
                for q in path:
                    if not any(s.members for s in all_sums[q]):
                        del all_sums[q]

    def admit_many(self, jobs: Iterable[tuple[JobInfo, tuple[str, ...], tuple[Amount | None, ...]]]) -> None:
        """`admit` of each (job, path, amounts) in turn, except that the jobs with no entry being
        replaced (new to the ledger: every job of its first session) are counted in together once the
        others are, path by path (`count_in_many`, docs/semantics.md K61)."""
        if not BULK_NEW:
            for job, path, amounts in jobs:
                self.admit(job, path, amounts)
            return
        replacing, entries, outside = self.replacing, self.entries, self.outside
        batch: list[NewJob] = []
        for job, path, amounts in jobs:
            uid = job.uid
            if uid in replacing:
                self.admit(job, path, amounts)
                continue
            # `admit` of a job with no old entry, its counting left to the batch
            outside.discard(uid)
            entries[uid] = _Entry(job, job.version, job.phase, path, amounts)
            batch.append((uid, path, amounts))
        if not batch:
            return
        if check.enabled():
            check_many(self, batch, len(FIELDS))
        else:
            count_in_many(self.sums, self.dirty, batch, len(FIELDS))

    def _admit_new(self, uid: str, path: tuple[str, ...], amounts: tuple[Amount | None, ...]) -> None:
        """`admit`'s loop for a job not counted before: each charged field counted in at every queue of
        the path (queue by queue rather than field by field: each (queue, field) sees the same step)."""
        present = [(f, a) for f, a in enumerate(amounts) if a is not None]
        if not present:
            return
        moved = 0
        for f, _ in present:
            moved |= 1 << f
        all_sums = self.sums
        dirty = self.dirty
        for q in path:
            sums = all_sums.get(q)
            if sums is None:
                sums = all_sums[q] = [QueueSum() for _ in FIELDS]
            for f, a in present:
                count_in(sums[f], uid, a)
            dirty[q] = dirty.get(q, 0) | moved

    def _admit_moved(self, uid: str, path: tuple[str, ...], olds: tuple[Amount | None, ...],
                     amounts: tuple[Amount | None, ...]) -> None:
        """`admit`'s loop for a job counted on the same path before (docs/semantics.md K57): each field
        whose names stay is moved by one difference, worked out once (request's is allocated's when both
        are the same amounts, as a job without Pending tasks has them) and applied queue by queue; a
        field whose members move takes `_sub` and `_add` as in `admit`. The same integer sums, members,
        listers and dirty marks: integer addition is exact and each (queue, field) sees the same steps."""
        moved = 0
        # a difference of one name (most amounts list pods alone) is a flat step, (f, dc, dm, name, d)
        ones: list[tuple[int, int, int, str, int]] = []
        steps: list[tuple[int, int, int, tuple[tuple[str, int], ...]]] = []
        members: list[int] = []
        last_was: Amount | None = None
        last_a: Amount | None = None
        dc = dm = d1 = 0
        n1 = ""
        ds: tuple[tuple[str, int], ...] | None = None
        f = 0
        for was, a in zip(olds, amounts):
            if was != a:
                moved |= 1 << f
                if was is None or a is None:
                    members.append(f)
                elif was is last_was and a is last_a:
                    if ds is None:
                        ones.append((f, dc, dm, n1, d1))
                    else:
                        steps.append((f, dc, dm, ds))
                else:
                    wn, an = was[2], a[2]
                    if len(an) == 1 and len(wn) == 1:  # most amounts list one name (pods)
                        (n, v), (m, w) = an[0], wn[0]
                        if n != m:
                            members.append(f)
                            f += 1
                            continue
                        n1, d1 = n, v - w
                        ds = None
                        dc, dm = a[0] - was[0], a[1] - was[1]
                        ones.append((f, dc, dm, n1, d1))
                    elif same_names(wn, an):
                        ds = tuple([(n, v - w) for (n, v), (_, w) in zip(an, wn)])
                        dc, dm = a[0] - was[0], a[1] - was[1]
                        steps.append((f, dc, dm, ds))
                    else:
                        members.append(f)
                        f += 1
                        continue
                    last_was, last_a = was, a
            f += 1
        all_sums = self.sums
        dirty = self.dirty
        for q in path:
            sums = all_sums[q]
            # a zero difference is skipped: adding 0 to an integer changes nothing
            for f, dc, dm, n, d in ones:
                s = sums[f]
                if dc:
                    s.cpu += dc
                if dm:
                    s.memory += dm
                if d:
                    s.scalars[n] += d
            for f, dc, dm, ds_ in steps:
                s = sums[f]
                s.cpu += dc
                s.memory += dm
                for n, d in ds_:
                    s.scalars[n] += d
            for f in members:
                s = sums[f]
                was, a = olds[f], amounts[f]
                if was is not None:
                    count_out(s, uid, was)
                if a is not None:
                    count_in(s, uid, a)
            dirty[q] = dirty.get(q, 0) | moved
        if members:
            for q in path:
                if not any(s.members for s in all_sums[q]):
                    del all_sums[q]

    def settle(self) -> None:
        """Take out the entries of the changed jobs that were not taken in again."""
        for uid, e in self.replacing.items():
            self._take_out(uid, e)
            del self.entries[uid]
        self.replacing.clear()

    def _remove(self, uid: str, e: _Entry) -> None:
        del self.entries[uid]
        self._take_out(uid, e)

    def _take_out(self, uid: str, e: _Entry) -> None:
        """Subtract an entry's amounts from every queue of its path."""
        moved = 0
        for f, a in enumerate(e.amounts):
            if a is not None:
                moved |= 1 << f
        dirty = self.dirty
        for q in e.path:
            dirty[q] = dirty.get(q, 0) | moved
        for q in e.path:
            sums = self.sums[q]
            for s, a in zip(sums, e.amounts):
                if a is not None:
                    count_out(s, uid, a)
            if not any(s.members for s in sums):
                del self.sums[q]

    def refresh(self, fresh_attr: Callable[[str], QueueAttr]) -> None:
        """Build `base` again for the queues whose sums changed: `fresh_attr(name)` gives the queue's
        attributes with no accounting, the sums are filled in and the share computed.

        A queue whose last attributes are at hand and whose moved fields all still have members is built
        from those instead: its limits and the fields that did not move are the last ones' objects (a
        base is never changed once built, so they hold what a build from the sums gives), the moved
        fields are made from the sums, and the share is computed again only if `allocated` moved (it
        reads `allocated` and the limits alone)."""
        self.settle()
        base = self.base
        all_sums = self.sums
        checking = check.enabled()
        make = self._resource
        new_resource = Resource.__new__
        best_effort = self._best_effort
        for q, mask in self.dirty.items():
            sums = all_sums.get(q)
            last = base.get(q) if KEEP_FIELDS and sums is not None else None
            fields = _FIELDS_OF[mask]
            if last is not None and sums is not None:
                for f in fields:
                    if not sums[f].members:
                        last = None
                        break
            if last is not None and sums is not None:
                a = QueueAttr.__new__(QueueAttr)
                # a copy of the last one's dict as a whole (the fields are then replaced in place), not
                # an empty dict filled key by key
                a.__dict__ = d = last.__dict__.copy()
                for f in fields:
                    s = sums[f]
                    scalars = s.scalars
                    if len(scalars) > 1:
                        d[FIELDS[f]] = make(q, f, s)
                        continue
                    # `_resource` written out for a sum of one name or none (most sums): no call
                    r = new_resource(Resource)
                    r.cpu = float(s.cpu)
                    r.memory = float(s.memory)
                    if scalars:
                        [(n, v)] = scalars.items()
                        r.scalars = {n: float(v)}
                    else:
                        r.scalars = {}
                    d[FIELDS[f]] = r
                if mask & 1:
                    # update_share, with whether the (never changed) deserved is empty kept per queue
                    deserved = d["deserved"]
                    known = best_effort.get(q)
                    if known is None or known[0] is not deserved:
                        known = best_effort[q] = (deserved, deserved.is_empty())
                    d["share"] = 1.0 if known[1] else queue_share(d["allocated"], deserved)
                if checking:
                    check_kept_fields(q, a, self._fresh(q, fresh_attr), FIELDS)
            else:
                a = self._fresh(q, fresh_attr)
            base[q] = a
        self.rebuilt.update(self.dirty)
        self.dirty.clear()
        self.at = self._next
        if checking:
            check_first_listers(self, FIELDS)

    def _fresh(self, q: str, fresh_attr: Callable[[str], QueueAttr]) -> QueueAttr:
        """Queue q's attributes built from its limits and its sums."""
        a = fresh_attr(q)
        sums = self.sums.get(q)
        if sums is not None:
            d = a.__dict__
            for f, name in enumerate(FIELDS):
                if sums[f].members:
                    d[name] = self._resource(q, f, sums[f])
            a.update_share()
        return a

    def first_listers(self, q: str, f: int) -> dict[str, tuple[str, int]]:
        """Per scalar name of queue q's field f, its first lister."""
        s = self.sums[q][f]
        return {n: s.first_lister(n) for n in s.listers}

    def resource(self, q: str, f: int) -> Resource | None:
        """Queue q's field f as a Resource (scalars in the first listers' order), or None if no member
        charged it."""
        sums = self.sums.get(q)
        if sums is None or not sums[f].members:
            return None
        return self._resource(q, f, sums[f])

    def _resource(self, q: str, f: int, s: QueueSum) -> Resource:
        r = Resource.__new__(Resource)
        r.cpu = float(s.cpu)
        r.memory = float(s.memory)
        scalars = s.scalars
        if not scalars:
            r.scalars = {}
        elif len(scalars) == 1:
            [(n, v)] = scalars.items()  # most sums list one name (pods): no comprehension for it
            r.scalars = {n: float(v)}
        else:
            first = self.first_listers(q, f)
            r.scalars = {n: float(s.scalars[n]) for n in sorted(s.scalars, key=first.__getitem__)}
        return r


def order_scalars(attrs: dict[str, QueueAttr], ledger: Ledger, listers: Listers) -> None:
    """Put each moved sum's scalar names in a recount's order: a name a job charged beside the ledger
    lists may come before the kept jobs' names (the first lister in uid order decides)."""
    for (q, f), got in listers.items():
        r = getattr(attrs[q], FIELDS[f])
        if len(r.scalars) < 2:
            continue
        if q in ledger.sums and ledger.sums[q][f].members:
            for n, at in ledger.first_listers(q, f).items():
                if n not in got or at < got[n]:
                    got[n] = at
        order = sorted(r.scalars, key=got.__getitem__)
        if order != list(r.scalars):
            r.scalars = {n: r.scalars[n] for n in order}
