"""The plan follower whose step costs what changed since the last one (`IncrementalFollower`).

`PlanFollower.step` reads every active reservation, sorts them all and checks each one's entitlement:
at thousands of reservations that is tens of milliseconds a step, although a step changes only the
reservations that started, ended, were edited or moved to another piece of their allocation. This
follower keeps what the last step left (each active reservation's resources, the order YARN's step
visits them in, the children's capacity sum) and applies only those changes, publishing exactly what
`PlanFollower.step` would (property-tested against it). Where that cannot be done exactly it takes
the full step and rebuilds its state from it: the first step, a clock that went back, a new plan
capacity, a periodic reservation in the plan, and a plan the replanner must repair.

Why the changes alone give the same result: a reservation whose resources are unchanged and whose
queue already has its target capacity and maximum is never given an entitlement by the full step, so
only the others are (in the full step's order among themselves, which is the order of all of them
restricted to these); the default queue's share and the published order come from the full order,
kept in sorted maps keyed as the full step sorts.
"""

from __future__ import annotations

import heapq
import itertools
import operator
import weakref
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from sortedcontainers import SortedDict

from apportion.reservation.follower import (
    ChildQueue,
    FollowerState,
    PlanFollower,
    QueueView,
    ReservationShare,
)
from apportion.reservation.follower_rows import Key, LiveSums, Row, single_sum
from apportion.reservation.follower_views import PublishedViews
from apportion.reservation.published import LazyQueues, LazyShares
from apportion.reservation.resmath import Res, f32, radd, round_up, rsub

if TYPE_CHECKING:
    from apportion.reservation.definition import ReservationId
    from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
    from apportion.reservation.replanner import SimpleCapacityReplanner

_SHARE = operator.attrgetter("share")
#: step numbers, unique across followers, so that a reader never takes one follower's changes as
#: following another's step (a plan re-created with new settings gets a new follower)
_SERIALS = itertools.count(1)

class IncrementalFollower(PublishedViews, PlanFollower):
    """YARN's CapacitySchedulerPlanFollower whose step costs what changed (see the module)."""

    def __init__(
        self,
        plan: InMemoryPlan,
        replanner: SimpleCapacityReplanner | None = None,
        cluster: tuple[Res, float] | None = None,
    ) -> None:
        super().__init__(plan, replanner, cluster)
        plan.touched = []
        self._synced = False
        self._now = 0
        self._cap: Res = plan.capacity
        self._live: dict[str, Row] = {}
        #: reservations not active yet: (start, name, tie, allocation); stale entries are skipped when popped
        self._pending: list[tuple[int, str, int, ReservationAllocation]] = []
        #: active rows by when their resources next change or they end: (hi, name, tie, allocation)
        self._due: list[tuple[int, str, int, ReservationAllocation]] = []
        #: every non-periodic reservation by its end, for archiving: (end, name, tie, allocation)
        self._ends: list[tuple[int, str, int, ReservationAllocation]] = []
        self._periodic: set[str] = set()
        #: orders heap entries of the same time and name (an edited reservation's versions)
        self._tie = itertools.count()
        self._reserved: Res = plan.zero
        #: every active row by the full step's sort key, and those with a capacity above 0 (their
        #: targets summed in this order make the default queue's share)
        self._order: SortedDict = SortedDict()
        self._held: SortedDict = SortedDict()
        self._held_total: float | None = None
        #: queues expired but kept because applications remain in them
        self._lingering: set[str] = set()
        self._seq: dict[str, int] = {self.default_queue: 0}
        self._next_seq = 1
        self._sums: LiveSums | None = None
        self._views: SortedDict = SortedDict()
        self._dirty: set[str] = set()
        #: queues whose view in `_views` is older than the queue (made again when read)
        self._stale: set[str] = set()
        #: the last step's published `active` and `queues` (see published.py), held weakly: one still
        #: read elsewhere when the next step starts is made then, before the structures change; the
        #: full step's dict of queues is held as it is
        self._active_ref: weakref.ref[LazyShares] | None = None
        self._queues_ref: weakref.ref[LazyQueues] | None = None
        self._queues_dict: Mapping[str, QueueView] | None = None
        #: the rows the last step visited: filed under their keys for the next step when it starts
        #: (after any published view still read is made)
        self._deferred: list[Row] = []
        #: the order changed since the published `active` was made
        self._reordered = False
        #: rows whose queue did not get its target (an entitlement refused): visited again next step
        self._unsettled: set[str] = set()
        #: the number of the last step (FollowerState.serial; 0 before the first)
        self._serial = 0
        #: rows `prepare` brought up to date since the last step (the step visits them), and the
        #: instant it brought them to (0: none since the last step)
        self._carried: set[str] = set()
        self._prepared_at = 0

    # -- applications (their queues' views change) -------------------------------------------------
    def submit_app(self, app_id: str, queue: str) -> bool:
        """Place an application directly into an existing child queue."""
        self._settle_published()  # a view still held reads the queue as the last step left it
        ok = super().submit_app(app_id, queue)
        if ok:
            self._dirty.add(queue)
        return ok

    def app_finished(self, app_id: str) -> bool:
        """Remove a finished application from its child queue; False if no queue holds it."""
        self._settle_published()
        name = self._remove_app(app_id)
        if name is not None:
            self._dirty.add(name)
        return name is not None

    # -- the full step, and the state rebuilt from it ---------------------------------------------
    def _full(self, clock: int) -> FollowerState:
        state = super().step(clock)
        self._resync(state)
        self._serial = next(_SERIALS)
        return replace(state, serial=self._serial)

    def _resync(self, state: FollowerState) -> None:
        plan = self.plan
        now = state.now
        assert plan.touched is not None
        plan.touched.clear()
        self._now, self._cap = now, plan.capacity
        self._live, self._pending, self._due, self._ends = {}, [], [], []
        self._periodic = set()
        self._order, self._held, self._held_total = SortedDict(), SortedDict(), None
        for r in plan.reservations.values():
            self._track(r, now)
        for share in state.active:
            row = self._live.get(str(share.id))
            if row is not None:  # not a periodic one, which is never followed incrementally
                row.share = share
        self._reserved = plan.zero
        cap, zero = plan.capacity, plan.zero
        with_ratio = cap[0] > 0 and cap[1] > 0
        self._unsettled = set()
        for row in self._live.values():
            self._reserved = radd(self._reserved, row.v)
            row.target = plan.calc.ratio(row.v, cap) if with_ratio and row.v != zero else 0.0
            self._rekey(row)
            q = self.queues[row.name]
            if q.capacity != row.target or q.max_capacity != (row.target if row.r.contains_gangs() else 1.0):
                self._unsettled.add(row.name)
        self._lingering = {n for n, q in self.queues.items() if q.expired}
        # a child queue the full step published for a reservation that is no longer active (the
        # replanner removed it within that step, after the step had listed the active ones) goes at
        # the next step, as the full step expires every child not active then: visited as gone
        self._unsettled.update(n for n, q in self.queues.items()
                               if not q.expired and n != self.default_queue and n not in self._live
                               and n not in self._periodic)
        self._seq = {n: i for i, n in enumerate(self.queues)}
        self._next_seq = len(self._seq)
        self._sums = LiveSums(self.queues)
        self._views = SortedDict(state.queues)
        self._dirty, self._stale = set(), set()
        # the next step sorts by the capacities this one left, which may reorder what it published
        self._active_ref, self._queues_ref, self._queues_dict = None, None, state.queues
        self._deferred = []
        self._carried, self._prepared_at = set(), 0
        self._synced = True

    def _track(self, r: ReservationAllocation, now: int) -> None:
        """Index a reservation of the plan at `now` (active, pending, or over); the row of an active one
        gets its resources but no key (the caller keys it)."""
        name = str(r.id)
        if r.period > 0:
            self._periodic.add(name)
            return
        heapq.heappush(self._ends, (r.end, name, next(self._tie), r))
        if now < r.start:
            heapq.heappush(self._pending, (r.start, name, next(self._tie), r))
        elif now < r.end:
            self._activate(r, name, now)

    def _activate(self, r: ReservationAllocation, name: str, now: int) -> Row:
        _, hi, v = self._piece(r, now)
        row = self._live[name] = Row(r, name, hi, v)
        heapq.heappush(self._due, (hi, name, next(self._tie), r))
        # every live row's resources are in the reserved sum (`_drop` takes them out); `_resync`
        # sums them afresh
        self._reserved = radd(self._reserved, v)
        return row

    def _key(self, row: Row) -> Key:
        v = row.v
        q = self.queues.get(row.name)
        if q is not None and q.capacity != 0.0:
            v = rsub(v, tuple(int(c * q.capacity) for c in self._cap))
        return (*v, row.r.id.cluster_timestamp, row.r.id.seq)

    def _unkey(self, row: Row) -> None:
        if row.key:
            self._reordered = True
            del self._order[row.key]
            if row.key in self._held:
                del self._held[row.key]
                self._held_total = None
            row.key = ()

    def _rekey(self, row: Row) -> None:
        """File the row under its key for the next step (its queue's capacity as it is now)."""
        key = self._key(row)
        if key == row.key and bool(row.target) == (key in self._held) and \
                (not row.target or self._held[key] == row.target):
            return
        self._unkey(row)
        row.key = key
        self._order[key] = row
        self._reordered = True
        if row.target:
            self._held[row.key] = row.target
            self._held_total = None

    # -- ahead of a step ---------------------------------------------------------------------------
    def prepare(self, clock: int, budget: int) -> int:
        """Do ahead of the next step, at most `budget` reservations' worth, what that step does first:
        file the rows the last step visited under their new keys and make the views it left stale
        (after making the published views still held), then bring the rows of the reservations added,
        edited or removed since, and of those that started or entered another piece of their
        allocation, to `clock` (rounded up to the plan's step), with their targets and keys.
        Returns the budget left (0: there may be more). Nothing the plan, the child queues or the last
        step's published views hold changes, so a step that follows publishes what it would have
        without this: a row brought to an earlier instant than the step's is brought on by the step
        as from one step to the next (its piece ends on the `_due` heap), and the step visits every
        row brought here. A server runs this in bounded pieces between requests, so that the step,
        which must be one piece, is left with less."""
        if not self._synced or self._periodic or budget <= 0:
            return budget
        now = round_up(clock, self.plan.step)
        if now < self._now or now < self._prepared_at:
            return budget  # the clock went back: the step will be a full one
        self._prepared_at = now
        # in quarters of a reservation's worth: filing a row the last step visited and making a view
        # it left stale cost a few microseconds each, bringing a reservation's row some tens
        work = 4 * budget
        work -= self._settle_published(work)
        work -= self._refresh_views(work)
        if work < 4:
            return 0
        fresh, left = self._bring(now, work // 4)
        self._carried |= fresh
        plan = self.plan
        cap = plan.capacity
        if cap == self._cap:  # else the step is a full one
            # what the step's visit does first for a row made since the last step, done here: its
            # target and its key, the capacity its queue has until the step (only a step changes it)
            calc, zero, rows = plan.calc, plan.zero, self._live
            with_ratio = cap[0] > 0 and cap[1] > 0
            for name in fresh:
                row = rows.get(name)
                if row is not None:
                    row.target = calc.ratio(row.v, cap) if with_ratio and row.v != zero else 0.0
                    self._rekey(row)
        return left

    # -- one step ----------------------------------------------------------------------------------
    def step(self, clock: int) -> FollowerState:
        """One synchronisation at `clock`, as `PlanFollower.step` makes it (contract §11)."""
        plan = self.plan
        self._settle_published()
        now = self._start_step(clock)
        if not self._synced or now < self._now or now < self._prepared_at or plan.capacity != self._cap:
            return self._full(clock)
        self._prepared_at = 0
        changed = self._advance(now)
        if self._periodic:
            return self._full(clock)
        cap = plan.capacity
        if self.replanner is not None and plan.calc.greater(self._reserved, cap, cap):
            return self._full(clock)
        self._now = now
        queues = self.queues
        sums = self._sums
        assert sums is not None

        # expired reservation queues, in the queue dict's order (the full step walks the dict)
        moved: list[str] = []
        default = queues[self.default_queue]
        self._lingering.difference_update([n for n in self._lingering if n in self._live])
        for name in sorted(self._lingering, key=self._seq.__getitem__):
            q = queues[name]
            q.capacity = 0.0
            q.max_capacity = 0.0
            q.expired = True
            sums.set(name, 0.0)
            self._dirty.add(name)
            if plan.move_on_expiry and q.apps:
                moved.extend(q.apps)
                default.apps.extend(q.apps)
                self._dirty.add(self.default_queue)
                q.apps.clear()
            if not q.apps:
                del queues[name]
                sums.remove(name)
                del self._seq[name]
                self._lingering.discard(name)
            else:
                self._lingering.add(name)

        self._set_entitlement(default, 0.0, 1.0, sums)
        calc = plan.calc
        zero = plan.zero
        with_ratio = cap[0] > 0 and cap[1] > 0
        visit = [self._live[n] for n in changed if n in self._live]
        for row in visit:
            # the key the full step sorts by: the capacity before this step's change. A row keyed
            # already has it (one `prepare` made, or one whose entitlement was refused, filed when
            # the step started): neither its resources, the plan's capacity nor its queue changed since
            if not row.key:
                row.target = calc.ratio(row.v, cap) if with_ratio and row.v != zero else 0.0
                self._rekey(row)
        if self._held_total is None:
            self._held_total = single_sum(self._held.values())
        total = self._held_total
        for row in sorted(visit, key=lambda row: row.key):
            name, r = row.name, row.r
            child = queues.get(name)
            if child is None:
                child = queues[name] = ChildQueue(name)
                sums.add(name, 0.0)
                self._seq[name] = self._next_seq
                self._next_seq += 1
            child.expired = False
            target = row.target
            max_cap = target if r.contains_gangs() else 1.0
            if child.capacity != target or child.max_capacity != max_cap:
                self._set_entitlement(child, target, max_cap, sums)
            row.share = ReservationShare(r.id, r.user, row.v, child.capacity, child.max_capacity, r.gang)
            self._dirty.add(name)
        self._set_entitlement(default, f32(1.0 - total), 1.0, sums)
        self._dirty.add(self.default_queue)
        active = self._active_ref() if self._active_ref is not None else None
        if self._reordered or active is None:
            # in key order, without a Python-level step per row (a SortedDict iterates its sorted
            # keys), when read: the order is left as it is until the next step starts
            order = self._order
            active = LazyShares(lambda: tuple(map(_SHARE, map(order.__getitem__, order))))
            self._active_ref = weakref.ref(active)
            self._reordered = False
        archived = self._archive(now)
        # the next step sorts by the capacities as this one left them (filed when it starts)
        self._deferred = visit
        # every share that differs from the last step's is a visited row's (the others keep theirs),
        # and every reservation no longer active was visited too
        live = self._live
        shares = {name: (kept.share if (kept := live.get(name)) is not None else None) for name in changed}
        since, self._serial = self._serial, next(_SERIALS)
        return FollowerState(
            now=now,
            plan_capacity=cap,
            default_queue=self.default_queue,
            default_share=default.capacity,
            active=active,
            queues=self._publish_queues(),
            replanned=(),
            archived=tuple(archived),
            moved_apps=tuple(moved),
            serial=self._serial,
            changes=(since, shares),
        )

    def _settle_published(self, limit: int | None = None) -> int:
        """Before a step changes anything: make the last step's published views that are still read
        elsewhere, then file (at most `limit` of) the rows it visited under the keys the new step sorts
        by (one whose entitlement was refused is visited again; one dropped since is not filed).
        Returns how many it filed."""
        for ref in (self._active_ref, self._queues_ref):
            view = ref() if ref is not None else None
            if isinstance(view, LazyShares):
                view.rows()
            elif isinstance(view, LazyQueues):
                view.queues()
        deferred = self._deferred
        if limit is None or limit >= len(deferred):
            visit, self._deferred = deferred, []
        else:
            visit = deferred[len(deferred) - limit:]
            del deferred[len(deferred) - limit:]
        queues, live = self.queues, self._live
        for row in visit:
            if live.get(row.name) is not row:
                continue
            self._rekey(row)
            q = queues[row.name]
            if q.capacity != row.target or q.max_capacity != (row.target if row.r.contains_gangs() else 1.0):
                self._unsettled.add(row.name)
        return len(visit)

    def _advance(self, now: int) -> set[str]:
        """Bring the rows to `now`: edited reservations, those that started, ended or entered another
        piece of their allocation. Returns the names of the rows to visit (gone ones included): those,
        with the rows `prepare` brought and those whose entitlement was refused."""
        changed, self._unsettled = self._unsettled, set()
        changed |= self._carried
        self._carried = set()
        fresh, _ = self._bring(now, None)
        changed |= fresh
        rows = self._live
        gone = [n for n in changed if n not in rows and n in self.queues]
        self._lingering.update(gone)
        return changed

    def _bring(self, now: int, budget: int | None) -> tuple[set[str], int]:
        """`_advance`'s work on at most `budget` reservations (None: all): the names of the rows it
        brought to `now` (or dropped), and the budget left (0 when `budget` is None)."""
        plan = self.plan
        fresh: set[str] = set()
        left = budget if budget is not None else -1
        touched = plan.touched
        assert touched is not None
        if touched:
            if budget is None or len(touched) <= budget:
                take = list(touched)
                touched.clear()
            else:
                take = touched[:budget]
                del touched[:budget]
            if budget is not None:
                left -= len(take)
            for rid in {r.id for r in take}:
                name = str(rid)
                self._drop(name)
                self._periodic.discard(name)
                cur = plan.reservations.get(rid)
                if cur is not None:
                    self._track(cur, now)
                fresh.add(name)
        pending, due, rows = self._pending, self._due, self._live
        while left and pending and pending[0][0] <= now:
            _, name, _, r = heapq.heappop(pending)
            left -= budget is not None
            if plan.reservations.get(r.id) is r and name not in rows and now < r.end:
                self._activate(r, name, now)
                fresh.add(name)
        while left and due and due[0][0] <= now:
            _, name, _, r = heapq.heappop(due)
            left -= budget is not None
            row = rows.get(name)
            if row is None or row.r is not r:
                continue
            self._drop(name)
            if now < r.end:
                self._activate(r, name, now)
            fresh.add(name)
        return fresh, max(left, 0)

    def _drop(self, name: str) -> None:
        row = self._live.pop(name, None)
        if row is not None:
            self._unkey(row)
            self._reserved = rsub(self._reserved, row.v)

    def _archive(self, now: int) -> list[ReservationId]:
        """archiveCompletedReservations: the reservations whose end is at most now less the window."""
        plan = self.plan
        limit = now - plan.policy.valid_window()
        ends = self._ends
        gone: list[ReservationId] = []
        while ends and ends[0][0] <= limit:
            _, _, _, r = heapq.heappop(ends)
            # a reservation tracked twice (touched again while `prepare` ran in pieces) has two
            # entries, popped one after the other
            if plan.reservations.get(r.id) is r and (not gone or gone[-1] != r.id):
                gone.append(r.id)
        gone.sort()
        plan.archive(gone)
        return gone
