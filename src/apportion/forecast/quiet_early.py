"""The quiet test asked before the snapshot and the open (semantics F3).

A session the quiet test skips (forecast/quiet.py, F1 and F2) still costs its snapshot and its open,
which the test reads: the jobs, the node table's FutureIdle, capacity's accounting. In a forecast
nearly every session follows an opened one with only a task's finish or two between them, or with
only what that session decided (binds, a phase, an admission), all of it on jobs. What the test
reads moves then only with the jobs touched since:

* a job's facts (its phase at close, its backlog pair, allocate's bound and need) are worked out on
  its new object, which the start state's objects build as the snapshot would (and then hand out
  again at the next snapshot: `SessionObjects.job_info`);
* FutureIdle moves on the rows of the tasks that left a node or came to one, by their rows (the node
  table's: allocated and pipelined tasks take their request off FutureIdle, releasing ones nothing),
  and allocate's bound over it on those rows alone (`KeptBound`, forecast/quiet_bound.py);
* capacity's accounting moves along the job's path by its charged amounts (`BacklogWatch`,
  plugins/capacity/backlog_watch.py, which answers the backlog test from it).

What a change is measured from is kept by value with each job's facts (`_Held`: its queue, charged
amounts and placed tasks), since a session that ran may have changed the job object in place. A job
built again as one of its tasks finished shares its other task objects with the last build (K36), and
one given a phase is the same object: while the object the facts were worked out on is unchanged
since, the tasks it shares keep their held placements, and only the others are looked at
(`fresh_tasks`, `HELD_BY_SHARED`); the backlog watch is told the pairs of the jobs whose facts moved
rather than compared with the whole backlog (`PAIRS_BY_MOVE`).
`EarlyQuietTest` keeps an `_Anchor` from each session it opens (FutureIdle as opened, the watch) and,
at the next session, when the simulator hands it what changed (`EarlyView`; only when nothing but
tasks' finishes happened since), brings the facts, FutureIdle and the accounting up to date and
decides (`QuietTest.decide`) without a session. Anything it cannot take in exactly (an amount that is
not a whole number, a new node-table column, a job the cache builds) and it answers None: the
session is opened and asked as before. When the early test went through but found the session may
change something, the opened session is that state: its answer is the early one and the anchor goes
on (`_carry`) instead of being made again. Under `APPORTION_CHECK_STATE=1` the session is opened all
the same, and the opened test's answer and FutureIdle must be the early ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import field

import numpy as np

from apportion.actions.pass_over import PassOver
from apportion.cluster.model import JobInfo, PodGroupPhase, TaskInfo
from apportion.cluster.node_table import NodeTable
from apportion.forecast.quiet import gang_decides, proof_blocker
from apportion.forecast.quiet_anchor import _Anchor, _Placed
from apportion.forecast.quiet_bound import RowsMade
from apportion.forecast.quiet_held import _Held, charge_kept, in_no_sum, placements, whole_and_placed
from apportion.forecast.quiet_kept import (
    Facts,
    QuietTest,
    fresh_tasks,
    hopeless_jobs,
    job_facts,
    whole_table,
)
from apportion.framework.interface import Plugin
from apportion.framework.session import Session
from apportion.lean_dataclass import dataclass
from apportion.plugins.capacity import backlog_watch
from apportion.plugins.capacity.backlog_watch import BacklogWatch, elastic_of
from apportion.plugins.capacity.charged import job_amounts
from apportion.simulation.skipping import EarlyView
from apportion.state import check

#: the most jobs the simulator may have changed since the last open for a session to be tried early:
#: a try that goes through, quiet or not, is the opened session's answer (`_carry`: its facts and
#: built jobs are kept), but one that cannot finish (an amount not exact, the cache's job) leaves its
#: work to the open, which does it again; the limit bounds that waste. It lets the second session of
#: a forecast (the jobs whose phase the first, phases-only, moved: 621 of 1,000 in the benchmark's)
#: be tried (the measurements behind the number are in benchmarks/README.md's forecast section)
EARLY_MOST = 1024


#: a job built again since its facts were worked out keeps its held record for the tasks the new
#: object shares with the one they were worked out on, and only its other tasks are looked at
#: (`fresh_tasks`, `EarlyQuietTest._add_again`); False: every task of it looked at again (the
#: reference the self-check and the property tests compare with)
HELD_BY_SHARED = True
#: the backlog watch is told the pairs that came into the backlog or left it by the jobs whose facts
#: moved (`EarlyQuietTest._pairs_moved`); False: the watch's pairs compared with the whole backlog at
#: each early test (the reference)
PAIRS_BY_MOVE = True
#: a job built again (or given a phase) whose facts are kept takes `_step_again`: its facts replaced in
#: place when they are in no sum, FutureIdle moved by the fresh keys alone (`_Anchor.move_keys`), the
#: backlog watch by the difference of kept sums (`quiet_held.py`); False: dropped and added, moved and
#: charged as any job (the reference)
LEAN_STEP = True
#: the early test looks at the dirty jobs the simulator changed since the last early test was handed a view
#: (`EarlyView.since`), the others being as that test left them; False: at every dirty job (the reference)
DIRTY_SINCE = True


@dataclass
class EarlyQuietTest(QuietTest):
    """`QuietTest`, asked also before a session is opened (`before_open`; see the module)."""

    #: sessions decided before their open, and opened ones answered from the early test (`_carry`)
    early: int = 0
    carried: int = 0
    _anchor: _Anchor | None = None
    #: per job, what its next change is measured from (`_Held`; kept beside its facts)
    _held: dict[str, _Held] = field(default_factory=dict)
    #: the node table and capacity's ElasticEnable (None: no backlog test to keep) the held records
    #: are made for
    _table: NodeTable | None = None
    _elastic: bool | None = None
    #: rows made for the table's columns
    _rows_made: RowsMade = field(default_factory=RowsMade)
    #: what the last early test found, when it went through (its reason, phases and anchor): the
    #: session then opened answers the same (compared under the self-check)
    _told: tuple[str, dict[str, PodGroupPhase], _Anchor] | None = None
    #: the uid of the session whose FutureIdle as opened `_anchor` holds (set by `__call__`)
    _anchored: str | None = None
    #: the backlog pairs of the jobs whose facts moved since the anchor's watch last took in the
    #: backlog (`PAIRS_BY_MOVE`): those it may lack or hold in excess
    _pairs_moved: set[tuple[object, ...]] = field(default_factory=set)

    def __call__(self, ssn: Session) -> dict[str, PodGroupPhase] | None:
        """The quiet test on the opened session (`QuietTest`); the session is the next anchor."""
        told, self._told = self._told, None
        self._anchor = None
        self._anchored = ssn.uid
        if told is not None and told[0] and not check.enabled() and self._carry(ssn, told[0], told[2]):
            return None
        why, phases = self.answer(ssn)
        if told is None or told[0]:
            self.count(why, phases)  # an early quiet answer was counted when given
        # the opened answer is the reference: the early one differing is the self-check's failure;
        # without it the opened answer stands and the early try's anchor is not carried
        agreed = told is not None and why == told[0] and phases == told[1] and (
            told[2].future.shape != ssn.table.future_idle().shape
            or np.array_equal(told[2].future, ssn.table.future_idle()))
        if told is not None and not agreed and check.enabled():
            raise check.StateCheckError(f"{check.ENV}: session {ssn.uid} was decided before its open: "
                                        f"{(told[0], told[1])}; opened, the quiet test answers {(why, phases)} "
                                        f"(FutureIdle the same: {np.array_equal(told[2].future, ssn.table.future_idle())})")
        if why not in ("action", "close hook"):
            if told is not None and agreed and np.array_equal(told[2].future, ssn.table.future_idle()):
                told[2].live_seen = False
                self._anchor = told[2]
            else:
                self._anchor = self._anchor_of(ssn)
        return None if why else phases

    def passed_over(self, ssn: Session) -> PassOver | None:
        """`QuietTest.passed_over`, with allocate's bound taken from the anchor `__call__` just kept for
        this session (its FutureIdle is the session's as opened: carried from the early test, which
        the self-check compares when it opens the session, or copied from the open), whose kept
        bound the early test has mostly worked out already. An anchor is kept only for a session
        whose conf the proof covers and whose facts and inputs `__call__` brought up (`_carry`
        compares them, `verdict` works them out), so they are this session's."""
        anchor = self._anchor
        if anchor is None or self._anchored != ssn.uid:
            return hopeless_jobs(self, ssn)
        return hopeless_jobs(self, ssn, anchor.bound.places_at_most, inputs_of=True, whole=anchor.future_whole)

    def _carry(self, ssn: Session, why: str, anchor: _Anchor) -> bool:
        """The opened session is the one the early test went through with the answer `why`: its facts
        are those kept (every job its jobs' delta names is the object they were worked out on), and
        FutureIdle and capacity's accounting as opened are the anchor's. Count it, keep the anchor for
        the next session, and say True; False (nothing done) when that does not hold."""
        delta = ssn.snapshot.jobs_delta
        look = delta.since_last(self._at) if delta is not None else None
        unproven, gang = proof_blocker(ssn)
        if look is None or unproven or self._unschedulable or ssn.table.columns != anchor.table.columns:
            return False
        inputs = (tuple(ssn.table.columns), tuple(ssn.queues), gang is not None,
                  gang is not None and gang_decides(ssn), "enqueue" in ssn.enabled_actions)
        if inputs != self._inputs:
            return False
        jobs, facts = ssn.jobs, self._facts
        for uid in look:
            job, f = jobs.get(uid), facts.get(uid)
            if job is None:
                if f is not None:
                    return False
            elif f is None or f.job is not job or f.version != job.version or f.phase is not job.phase:
                return False
        assert delta is not None
        self._at = delta.snapshot
        self._table = ssn.table
        self.count(why, {})
        self.carried += 1
        anchor.live_seen = False
        self._anchor = anchor
        return True

    def _bring_up(self, ssn: Session, gang: Plugin[Session] | None) -> None:
        """`QuietTest._bring_up`, each job's held record made with its facts (all of them again when
        the node table's columns or the backlog test moved)."""
        elastic = elastic_of(ssn) if "enqueue" in ssn.conf.actions else None
        table = self._table
        if table is None or table.columns != ssn.table.columns or elastic != self._elastic:
            self._inputs = None  # every job's facts and held record made again
            self._rows_made = RowsMade()
        self._table, self._elastic = ssn.table, elastic
        super()._bring_up(ssn, gang)

    def add(self, uid: str, facts: Facts, whole: bool | None = None) -> None:
        """`QuietTest.add`, and the job's held record (every task looked at: judged whole, when `whole`
        is not known, in the same walk, `whole_and_placed`)."""
        job = facts.job
        placed: dict[str, _Placed] = {}
        table = self._table
        assert table is not None
        if whole is None:
            whole = whole_and_placed(self._whole_of, table, self._rows_made, job.tasks.items(), placed)
        else:
            placements(table, self._rows_made, job.tasks.items(), placed)
        super().add(uid, facts, whole)
        if facts.admission is not None:
            self._pairs_moved.add(facts.admission)
        self._held[uid] = self._held_of(job, placed)

    def _held_of(self, job: JobInfo, placed: dict[str, _Placed] | None = None) -> _Held:
        """The job's held record; `placed`, when given, its placements already looked at."""
        if placed is None:
            placed = {}
            table = self._table
            assert table is not None
            placements(table, self._rows_made, job.tasks.items(), placed)
        elastic = self._elastic
        return _Held(job.queue, None if elastic is None else job_amounts(job, elastic), placed)

    def _add_again(self, uid: str, facts: Facts, held: _Held, fresh: list[tuple[str, TaskInfo]],
                   checking: bool, replacing: bool = False) -> None:
        """`add` for a job built again (or given a phase) whose tasks but `fresh` are those its last
        facts were worked out on (`fresh_tasks`): the held record `held` (made then) keeps their
        placements, and their requests were whole then (the job was not inexact), so only the fresh
        tasks are looked at. Compared with `add` under the self-check. When `replacing` (asked by
        `_step_again`), the job's facts are still kept (not dropped), and neither they nor `facts` are
        in any sum: they are replaced as the drop and the add would."""
        job = facts.job
        placed = held.placed
        if fresh:
            placed = dict(placed)
            for key, _ in fresh:
                placed.pop(key, None)
            table = self._table
            assert table is not None
            whole = whole_and_placed(self._whole_of, table, self._rows_made, fresh, placed)
        else:
            whole = True  # no task to look at: the same tasks, whole then
        if replacing:
            # what `drop` and `add` do to a job in no sum: the facts and held record popped (each map's
            # order as theirs), the inexact entry taken out and put back per `whole`
            del self._facts[uid]
            self._inexact.discard(uid)
            del self._held[uid]
            self._facts[uid] = facts
            if not whole:
                self._inexact.add(uid)
            if checking and (uid in self._moved or uid in self._unschedulable | self._best_effort | self._pending
                                                            | self._no_min):
                raise check.StateCheckError(f"{check.ENV}: job {uid}'s facts replaced in place are in a sum")
        else:
            QuietTest.add(self, uid, facts, whole)
            if facts.admission is not None:
                self._pairs_moved.add(facts.admission)
        elastic = self._elastic  # `_held_of(job, placed)` written out
        now = self._held[uid] = _Held(job.queue, None if elastic is None else job_amounts(job, elastic), placed)
        if checking:
            want = self._held_of(job)
            if whole != self._whole_of(job.tasks.values()) or not _same_placed(now.placed, want.placed):
                raise check.StateCheckError(f"{check.ENV}: job {uid}'s held record taken from the tasks its last "
                                            f"object shares is {sorted(now.placed)} (whole {whole}), made anew "
                                            f"{sorted(want.placed)}")

    def _step_again(self, uid: str, was: Facts, job: JobInfo, old: _Held, fresh: list[tuple[str, TaskInfo]],
                    anchor: _Anchor, whole_ids: AbstractSet[int], checking: bool) -> bool:
        """`before_open`'s step for a job built again (or given a phase) whose tasks but `fresh` are
        those its last facts `was` were worked out on (`LEAN_STEP`): the reference's drop, `_add_again`,
        move and charge, doing only what changes something. When neither the last facts nor the new
        ones put the job in any of the test's sums (no phase to move, no flag, not in the backlog, no
        request allocate would try: a running gang, typically), dropping and adding the facts changes
        only the facts and inexact entries, which are all that is done (in the reference's order, so
        the maps keep its order); FutureIdle moves by the fresh keys' entries, the old entries given
        back first as `_Anchor.move` does; and the backlog watch moves by the difference of the kept
        sums allocated + inqueue - elastic of the two held records (`charge_kept`, forecast/quiet_held.py), the integers `_delta`
        sums, dimension for dimension in its order. False when the reference's step would answer None."""
        got = job_facts(anchor, job, anchor.gang, anchor.decides, anchor.enqueue)
        plain = in_no_sum(was) and in_no_sum(got)
        if not plain:
            self.drop(uid)
        self._add_again(uid, got, old, fresh, checking, plain)
        now = self._held[uid]
        if fresh and not anchor.move_keys(old.placed, now.placed, [key for key, _ in fresh], whole_ids, checking):
            return False
        watch = anchor.watch
        if watch is None:
            return True
        if old.amounts is None or now.amounts is None:
            return False
        if old.queue != now.queue:
            watch.charge(old.queue, old.amounts, None)
            watch.charge(now.queue, None, now.amounts)
        elif old.amounts == now.amounts:
            now.watched = old.watched  # equal amounts move no level, and have equal sums
        elif not backlog_watch.lean_charge:
            watch.charge(now.queue, old.amounts, now.amounts)
        else:
            charge_kept(watch, old, now, checking)
        return True

    def drop(self, uid: str) -> None:
        """`QuietTest.drop`, and the job's held record."""
        f = self._facts.get(uid)
        if f is not None and f.admission is not None:
            self._pairs_moved.add(f.admission)
        super().drop(uid)
        self._held.pop(uid, None)

    def _anchor_of(self, ssn: Session) -> _Anchor | None:
        """What the next early test starts from, or None when it could not be exact."""
        if self._unschedulable:
            return None  # their close reads the session's uid off the condition
        future = ssn.table.future_idle()
        if not whole_table(future):
            return None
        actions = list(ssn.conf.actions)
        watch = None
        if "enqueue" in actions:
            watch = BacklogWatch.of(ssn, self._backlog)
            if watch is None:
                return None
            self._pairs_moved = set()  # the watch holds the backlog's pairs
        _, gang = proof_blocker(ssn)
        return _Anchor(actions, gang, gang is not None and gang_decides(ssn), "enqueue" in ssn.enabled_actions,
                       dict(ssn.queues), ssn.table, future.copy(), watch, rows=self._rows_made)

    def before_open(self, view: EarlyView) -> Mapping[str, PodGroupPhase] | None:
        """The phases the session about to be opened would move when the quiet test, asked of it
        opened, would find it quiet; None when that cannot be shown without opening it."""
        anchor, self._anchor = self._anchor, None
        self._told = None
        if anchor is None or len(view.dirty) > EARLY_MOST:
            return None
        checking = check.enabled()
        inexact = self._inexact
        anchor.uid = view.session_uid
        self._table = anchor.table
        watch = anchor.watch
        facts, held = self._facts, self._held
        col = anchor.table.col
        kept, job_info, active = view.objects.kept, view.objects.job_info, view.active
        whole_ids = self._whole_of.whole
        # the last session's live jobs change only through the simulator afterwards (then they are
        # dirty): looked at once after each open; of the dirty ones, those changed since the last early
        # test (`DIRTY_SINCE`: the others it left handed out as they are. The self-check opens every
        # session, whose snapshot leaves none dirty but those changed since)
        dirty = view.dirty if view.since is None or not DIRTY_SINCE else view.since
        live = set() if anchor.live_seen else view.live
        touched = dirty | live if live else dirty
        anchor.live_seen = True
        for uid in sorted(touched):
            f = facts.get(uid)
            sj = active.get(uid)
            if f is not None and sj is not None:
                was = kept(sj)
                if was is f.job and was.version == f.version and was.phase is f.phase:
                    continue  # handed out again as it was (asking would clear the notes on it)
            new = None
            fresh = None
            if sj is not None:
                new = job_info(sj)
                if new is None:
                    return None  # the cache's job: its object is the snapshot's to make
                if f is not None and new is f.job and new.version == f.version and new.phase is f.phase:
                    continue
                if HELD_BY_SHARED and f is not None and uid not in inexact:
                    fresh = fresh_tasks(new, f)
                # a task shared with the last object had its columns when that one's facts were made
                if fresh is None:
                    if any(n not in col for t in new.tasks.values() for n in t.resreq.scalars):
                        return None  # the table would get a column
                elif fresh and not _columns_in(fresh, col):
                    return None
                if checking and fresh is not None and any(n not in col for t in new.tasks.values()
                                                          for n in t.resreq.scalars):
                    raise check.StateCheckError(f"{check.ENV}: job {uid}'s shared tasks name a column the node "
                                                f"table lacks")
            old = held.get(uid)
            if LEAN_STEP and fresh is not None and old is not None and f is not None and new is not None:
                if not self._step_again(uid, f, new, old, fresh, anchor, whole_ids, checking):
                    return None
                continue
            self.drop(uid)
            keys = None
            if new is not None:
                got = job_facts(anchor, new, anchor.gang, anchor.decides, anchor.enqueue)
                if fresh is None or old is None:
                    self.add(uid, got)
                else:
                    self._add_again(uid, got, old, fresh, checking)
                    keys = [key for key, _ in fresh]
            now = held.get(uid)
            # no key that may differ: nothing moves (`move` would look at none)
            if (keys is None or keys) and not anchor.move(old.placed if old is not None else {},
                                                          now.placed if now is not None else {}, keys, whole_ids,
                                                          checking):
                return None
            if watch is not None:
                if (old is not None and old.amounts is None) or (now is not None and now.amounts is None):
                    return None
                if old is not None and now is not None and old.queue == now.queue:
                    if old.amounts != now.amounts:  # equal amounts move no level
                        watch.charge(now.queue, old.amounts, now.amounts)
                else:
                    if old is not None:
                        watch.charge(old.queue, old.amounts, None)
                    if now is not None:
                        watch.charge(now.queue, None, now.amounts)
        if watch is not None:
            pairs = self._backlog.keys()
            if PAIRS_BY_MOVE:
                # the watch holds the backlog's pairs but those of the jobs whose facts moved
                moved, self._pairs_moved = self._pairs_moved, set()
                for key in moved:
                    if key not in pairs:
                        watch.drop_pair(key)
                    elif not watch.add_pair(key):
                        return None
                if checking and watch.pairs.keys() | watch.refused != set(pairs):
                    raise check.StateCheckError(f"{check.ENV}: the backlog watch's pairs told by the moved jobs are "
                                                f"not the backlog's")
            else:
                self._pairs_moved = set()
                for key in (watch.pairs.keys() | watch.refused) - pairs:
                    watch.drop_pair(key)
                for key in pairs - watch.pairs.keys() - watch.refused:
                    if not watch.add_pair(key):
                        return None
            admits = watch.admits_any
        else:
            def admits() -> bool:
                return True  # no enqueue in the conf: `decide` asks only with a backlog and enqueue
        why, phases = self.decide(anchor.actions, anchor.future, admits, anchor.bound.places_at_most, checking)
        if why or checking:
            # the session is opened: it answers the same (`_carry`; compared under the self-check)
            self._told = (why, phases, anchor)
        if why:
            return None
        self.early += 1
        self.count(why, phases)
        self._anchor = anchor
        return phases


def _columns_in(tasks: list[tuple[str, TaskInfo]], col: Mapping[str, int]) -> bool:
    """Every scalar the tasks request a column of the table (`col`)."""
    for _, t in tasks:
        for n in t.resreq.scalars:
            if n not in col:
                return False
    return True


def _same_placed(a: dict[str, _Placed], b: dict[str, _Placed]) -> bool:
    """The same placements: rows, request objects and their table rows (which are kept per request)."""
    return a.keys() == b.keys() and all(
        x[0] == y[0] and x[1] is y[1] and x[2] is y[2] for x, y in ((a[k], b[k]) for k in a))
