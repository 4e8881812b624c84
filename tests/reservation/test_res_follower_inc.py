"""The incremental plan follower publishes, step after step, exactly what the full step does: the same
`FollowerState` (queues, capacities, shares in the same order, moves, archives, replans) and the same
child queues, over random submit / update / delete / application / capacity / clock sequences."""

from __future__ import annotations

import weakref
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from res_helpers import alloc, make_plan, rid

from apportion.reservation.follower import PlanFollower
from apportion.reservation.follower_inc import IncrementalFollower
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.policies import NoPolicy
from apportion.reservation.published import LazyQueues, LazyShares
from apportion.reservation.replanner import SimpleCapacityReplanner

CAP = (10240, 10)

#: a reservation: start (s), length, memory, vCores, gang, gap and length of a second piece (0: none),
#: and a periodic one now and then
shape = st.tuples(st.integers(0, 40), st.integers(1, 15), st.integers(1, 4000), st.integers(1, 4), st.booleans(),
                  st.integers(0, 5), st.integers(0, 8))
op = st.one_of(
    st.tuples(st.just("add"), shape),
    st.tuples(st.just("update"), st.integers(0, 1000), shape),
    st.tuples(st.just("delete"), st.integers(0, 1000)),
    st.tuples(st.just("step"), st.integers(0, 4)),
    st.tuples(st.just("jump"), st.integers(0, 60)),
    st.tuples(st.just("app"), st.integers(0, 1000)),
    st.tuples(st.just("finish"), st.integers(0, 1000)),
    st.tuples(st.just("capacity"), st.sampled_from([CAP, (8192, 8), (20480, 10), (0, 0)])),
    st.tuples(st.just("periodic"), shape),
    # the incremental follower's work ahead of a step (what the server runs between requests), at
    # an instant up to 6 s past the last step (so at times after the next step's: a clock gone back)
    st.tuples(st.just("prepare"), st.integers(0, 6), st.sampled_from([1, 2, 3, 100])),
)


def _pieces(s: tuple[int, int, int, int, bool, int, int]) -> list[tuple[int, int, tuple[int, int]]]:
    start, length, mem, vc, _gang, gap, second = s
    out = [(start * 1000, (start + length) * 1000, (mem, vc))]
    if second:
        s2 = (start + length + gap) * 1000
        out.append((s2, s2 + second * 1000, (mem // 2 + 1, vc)))
    return out


def _queues(f: PlanFollower) -> dict[str, tuple[Any, ...]]:
    return {n: (q.capacity, q.max_capacity, tuple(q.apps), q.expired) for n, q in f.queues.items()}


def _run(ops: list[tuple[Any, ...]], replan: bool, move: bool, late: bool = False) -> int:
    """Both followers through ops; every published state compared at once, or (`late`) only after
    every later step was taken (the incremental follower's published views are made when read, so a
    view held across steps must still read as that step's)."""
    plans: list[InMemoryPlan] = [make_plan(CAP, NoPolicy(), move_on_expiry=move, max_periodicity=120_000) for _ in range(2)]
    ref = PlanFollower(plans[0], SimpleCapacityReplanner() if replan else None)
    inc = IncrementalFollower(plans[1], SimpleCapacityReplanner() if replan else None)
    n, t, apps, incremental = 0, 0, 0, 0
    # what a reader keeps of the published steps, by applying each step's changes
    kept: dict[str, Any] = {}
    kept_serial = 0
    held: list[tuple[Any, Any]] = []
    for o in ops:
        kind = o[0]
        if kind in ("add", "periodic"):
            n += 1
            for plan in plans:
                if kind == "add":
                    plan.add_reservation(alloc(n, _pieces(o[1]), gang=o[1][4]))
                else:
                    start, length, mem, vc, gang, _, _ = o[1]
                    plan.add_reservation(alloc(n, [(0, length * 1000, (mem, vc))], start=start * 1000,
                                               end=start * 1000 + 120_000,
                                               period=(20_000, 30_000, 40_000, 60_000)[length % 4]))
        elif kind in ("update", "delete"):
            ids = sorted(plans[0].reservations)
            if not ids:
                continue
            rid = ids[o[1] % len(ids)]
            for plan in plans:
                if kind == "delete":
                    plan.delete_reservation(rid)
                else:
                    r = alloc(rid.seq, _pieces(o[2]), gang=o[2][4])
                    plan.update_reservation(r)
        elif kind == "capacity":
            for plan in plans:
                plan.set_capacity(o[1])
        elif kind == "prepare":
            left = inc.prepare(t + o[1] * 1000, o[2])
            assert 0 <= left <= o[2]
        elif kind == "app":
            names = sorted(ref.queues)
            apps += 1
            q = names[o[1] % len(names)]
            assert ref.submit_app(f"app{apps}", q) == inc.submit_app(f"app{apps}", q)
        elif kind == "finish":
            if apps:
                a = f"app{o[1] % apps + 1}"
                assert ref.app_finished(a) == inc.app_finished(a)
        else:
            t = t + o[1] * 1000 if kind == "step" else o[1] * 1000
            synced = inc._synced
            a, b = ref.step(t), inc.step(t)
            assert _queues(ref) == _queues(inc)
            if late:
                held.append((a, b))
                incremental += synced and inc._now == b.now and not inc._periodic
                continue
            assert a == b
            assert list(a.active) == list(b.active)  # the order too
            assert list(a.queues) == list(b.queues)
            assert _queues(ref) == _queues(inc)
            assert sorted(plans[0].reservations) == sorted(plans[1].reservations)
            incremental += synced and inc._now == b.now and not inc._periodic
            # the changes lead from the step before to this one's active reservations
            assert b.serial > kept_serial
            if b.changes is None:
                kept = {str(sh.id): sh for sh in b.active}
            else:
                assert b.changes[0] == kept_serial
                for name, share in b.changes[1].items():
                    if share is None:
                        kept.pop(name, None)
                    else:
                        kept[name] = share
            assert kept == {str(sh.id): sh for sh in b.active}
            kept_serial = b.serial
    for a, b in held:
        assert a == b
        assert list(a.active) == list(b.active)
        assert list(a.queues) == list(b.queues)
    return incremental


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(op, min_size=1, max_size=60), replan=st.booleans(), move=st.booleans(), late=st.booleans())
def test_the_incremental_step_publishes_what_the_full_step_does(ops: list[tuple[Any, ...]], replan: bool,
                                                               move: bool, late: bool) -> None:
    _run(ops, replan, move, late)


def test_queues_the_replanner_emptied_within_a_full_step_go_at_the_next_step() -> None:
    """The full step lists the active reservations before the replanner runs, so it publishes queues
    for reservations the replanner then removes (plan capacity 0 here); the next step expires them.
    The incremental step that follows a full one must expire them too, and say they are gone."""
    one = ("add", (0, 1, 1, 1, False, 0, 0))
    for late in (False, True):
        _run([one] * 4 + [("capacity", (0, 0))] + [one] * 4 + [("step", 0), ("step", 0)],
             replan=True, move=False, late=late)


def test_steps_without_change_are_incremental_and_equal() -> None:
    """A long run of ordinary steps (no periodic reservation, no capacity change) is served by the
    incremental step, and still equals the full one."""
    ops: list[tuple[Any, ...]] = []
    for i in range(60):
        ops.append(("add", (i % 30, 3 + i % 7, 500 + 37 * i, 1 + i % 3, i % 4 == 0, i % 3, i % 5)))
        if i % 5 == 0:
            ops.append(("update", i * 7, (i % 20 + 5, 4, 800, 2, False, 1, 2)))
        if i % 9 == 0:
            ops.append(("delete", i * 3))
        ops.append(("step", 1))
        ops.append(("app", i))
    assert _run(ops, replan=False, move=True) > 40


def test_what_nobody_reads_of_a_step_is_never_made() -> None:
    """The incremental step's `active` and `queues` are made when read: a state dropped before the
    next step costs nothing, one held across steps is made before the next step changes anything,
    and equals the full step's."""
    plans = [make_plan(CAP, NoPolicy(), max_periodicity=120_000) for _ in range(2)]
    ref, inc = PlanFollower(plans[0]), IncrementalFollower(plans[1])
    for plan in plans:
        for i in range(1, 30):
            plan.add_reservation(ReservationAllocation(rid(i), "u", None, i * 1000, (i + 40) * 1000,
                                                       [(i * 1000, (i + 40) * 1000, (512 * (1 + i % 3), 1))]),
                                 is_recovering=True)
    ref.step(0), inc.step(0)  # the first step is a full one
    want, st = ref.step(5000), inc.step(5000)
    assert isinstance(st.active, LazyShares) and isinstance(st.queues, LazyQueues)
    active = st.active
    assert active._rows is None and st.queues._queues is None  # nothing made yet
    for t in (9000, 14000, 33000):
        ref.step(t)
        dropped = inc.step(t)
        view = weakref.ref(dropped.active)
        del dropped
        assert view() is None  # freed unread: never made
    assert active._rows is not None  # made when the next step started: it was still held
    assert st == want
    assert list(st.active) == list(want.active) and list(st.queues) == list(want.queues)


def test_steps_after_work_done_ahead_in_pieces_are_incremental_and_equal() -> None:
    """The server brings the rows up to date in bounded pieces between requests (`prepare`), with
    reservations added, edited and deleted between the pieces: every step that follows is still served
    incrementally and equals the full step, including pieces that met a reservation twice (added,
    then edited while the pieces ran)."""
    ops: list[tuple[Any, ...]] = []
    for i in range(60):
        ops.append(("add", (i % 30, 3 + i % 7, 500 + 37 * i, 1 + i % 3, i % 4 == 0, i % 3, i % 5)))
        ops.append(("prepare", 0, 2))
        if i % 5 == 0:
            ops.append(("update", i * 7, (i % 20 + 5, 4, 800, 2, False, 1, 2)))
            ops.append(("add", (i % 25, 2, 700, 1, False, 0, 0)))
            ops.append(("prepare", 1, 1))
        if i % 9 == 0:
            ops.append(("delete", i * 3))
        ops.append(("prepare", 1, 3))
        ops.append(("step", 1))
    assert _run(ops, replan=False, move=True) > 50


def test_prepare_brings_rows_ahead_and_the_step_visits_them() -> None:
    """What `prepare` did is carried into the step (which visits those rows) and costs the step
    nothing more: the budget bounds each piece, and a clock gone back makes the step a full one."""
    plans = [make_plan(CAP, NoPolicy(), max_periodicity=120_000) for _ in range(2)]
    ref, inc = PlanFollower(plans[0]), IncrementalFollower(plans[1])
    ref.step(0), inc.step(0)
    for plan in plans:
        for i in range(1, 11):
            plan.add_reservation(ReservationAllocation(rid(i), "u", None, i * 1000, (i + 40) * 1000,
                                                       [(i * 1000, (i + 40) * 1000, (512, 1))]))
    assert inc.prepare(3000, 4) == 0 and len(inc._carried) == 4
    assert inc.prepare(3000, 100) > 0 and len(inc._carried) == 10
    assert plans[1].touched == []
    want, got = ref.step(4000), inc.step(4000)
    assert got.changes is not None and set(got.changes[1]) == {str(rid(i)) for i in range(1, 11)}
    assert want == got and list(want.active) == list(got.active)
    assert inc.prepare(9000, 100) > 0
    want, got = ref.step(8000), inc.step(8000)  # before the prepared instant: a full step
    assert got.changes is None and want == got and list(want.active) == list(got.active)
