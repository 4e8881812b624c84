"""The reservation system (issue 17): one plan per reservable queue, YARN-formed ids, the id
sequence and queue records in the system's state, and recovery from a PlanStore."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from res_helpers import alloc, body, make_plan, rid

from apportion.reservation.agents import make_agent
from apportion.reservation.definition import ReservationId
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import CapacityOverTimePolicy, NoOverCommitPolicy
from apportion.reservation.resmath import Calculator
from apportion.reservation.store import InMemoryPlanStore
from apportion.reservation.system import ReservationSystem

TS = 1_764_000_000_000


def _plans() -> list[InMemoryPlan]:
    return [
        InMemoryPlan("dedicated", (8192, 8), step=1000, calculator=Calculator("default"),
                     policy=CapacityOverTimePolicy(0.75, 0.5, 20_000), max_periodicity=20_000),
        InMemoryPlan("batch", (4096, 4), step=1000, calculator=Calculator("default"), policy=NoOverCommitPolicy(),
                     max_periodicity=20_000),
    ]


def _system(store: InMemoryPlanStore, agent: str = "aligned-left") -> ReservationSystem:
    s = ReservationSystem(TS, store)
    for p in _plans():
        s.add_plan(p, make_agent(agent))
    return s


def _state(s: ReservationSystem):
    out = {"seq": s.sequence, "queue_of": dict(s.queue_of)}
    for q, e in s.plans.items():
        p = e.plan
        out[q] = (
            sorted((str(r.id), r.user, r.start, r.end, r.period, r.gang, r.acceptance_time, tuple(r.intervals),
                    tuple(r.rle.breakpoints()), r.definition) for r in p.reservations.values()),
            p.load.breakpoints(), p.periodic_load.base.breakpoints(),
            {u: f.breakpoints() for u, f in p.user_load.items() if not f.is_empty()},
            {u: f.base.breakpoints() for u, f in p.user_periodic.items() if not f.is_empty()},
        )
    return out


def test_one_plan_per_queue_and_yarn_ids():
    s = _system(InMemoryPlanStore())
    assert s.new_reservation(None)[0] == 401
    ids = [s.new_reservation("alice")[1]["reservation-id"] for _ in range(3)]
    assert ids == [f"reservation_{TS}_000{n}" for n in (1, 2, 3)]
    assert s.submit("alice", body(1, 0, 10_000, [((1024, 1), 2, 1, 2000)], queue="batch"))[0] == 202
    assert s.submit("bob", body(2, 0, 10_000, [((1024, 1), 2, 1, 2000)], queue="root.dedicated"))[0] == 202
    assert s.queue_of == {rid(1): "batch", rid(2): "dedicated"}
    assert set(s.entry("batch").plan.reservations) == {rid(1)}
    assert set(s.plans["dedicated"].plan.reservations) == {rid(2)}
    status, resp = s.submit("bob", body(3, 0, 10_000, [((1024, 1), 1, 1, 1000)], queue="other"))
    assert status == 400 and "other is not managed by reservation system" in resp["RemoteException"]["message"]
    # update and delete find the plan through the id record
    b = body(1, 0, 10_000, [((2048, 2), 1, 1, 1000)])
    del b["queue"]
    assert s.update("alice", b)[0] == 200
    assert s.entry("batch").plan.get(rid(1)).rle.nonzero_pieces()[0][2] == (2048, 2)
    assert s.delete("alice", {"reservation-id": str(rid(1))})[0] == 200
    assert s.queue_of[rid(1)] == "batch"  # never removed


stage = st.tuples(st.sampled_from([(1024, 1), (2048, 1), (1024, 2)]), st.integers(1, 4), st.integers(1, 2000))
submit = st.tuples(st.just("submit"), st.integers(1, 8), st.sampled_from(["dedicated", "batch"]),
                   st.sampled_from(["alice", "bob"]), st.integers(0, 15_000), st.integers(4000, 20_000),
                   st.lists(stage, min_size=1, max_size=2), st.sampled_from([None, None, "20000", "10000"]))
op = st.one_of(
    submit, submit, submit,
    st.tuples(st.just("update"), st.integers(1, 6), st.integers(0, 15_000), st.integers(1000, 20_000),
              st.lists(stage, min_size=1, max_size=2)),
    st.tuples(st.just("delete"), st.integers(1, 6)),
    st.tuples(st.just("advance"), st.integers(0, 30_000)),
    st.tuples(st.just("archive"), st.integers(0, 60_000)),
    st.tuples(st.just("new"),),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op, max_size=20), agent=st.sampled_from(["aligned-left", "greedy-right", "greedy"]))
def test_recovery_from_the_store_gives_identical_plans(ops, agent):
    """Random submit/update/delete sequences (with clock moves and archiving): a new system
    recovered from the store holds the same reservations, allocations, acceptance times, loads,
    id sequence and id records, and goes on handing out the same ids."""
    store = InMemoryPlanStore()
    s = _system(store, agent)
    owner: dict[int, str] = {}
    for o in ops:
        if o[0] == "submit":
            _, n, queue, user, arrival, length, stages, rec = o
            if rec is not None:
                length = min(length, int(rec))
            st_ = [(c, k, 1, min(d, length)) for c, k, d in stages]
            if s.submit(user, body(n, arrival, arrival + length, st_, queue=queue, recurrence=rec))[0] == 202:
                owner.setdefault(n, user)
        elif o[0] == "update":
            _, n, arrival, length, stages = o
            b = body(n, arrival, arrival + length, [(c, k, 1, min(d, length)) for c, k, d in stages])
            del b["queue"]
            s.update(owner.get(n, "alice"), b)
        elif o[0] == "delete":
            s.delete("alice", {"reservation-id": str(rid(o[1]))})
        elif o[0] == "advance":
            for e in s.plans.values():
                e.plan.now = o[1]
        elif o[0] == "archive":
            for e in s.plans.values():
                e.plan.archive_completed(o[1])
        else:
            s.new_reservation("carol")
    again = _system(store, agent)
    again.recover()
    assert _state(again) == _state(s)
    assert again.new_reservation_id() == s.new_reservation_id()


def test_recovery_does_not_recheck_the_policy():
    """A reservation the policy would now refuse (the plan shrank) comes back as stored."""
    store = InMemoryPlanStore()
    s = ReservationSystem.single(make_plan((4096, 4), NoOverCommitPolicy()), make_agent("aligned-left"),
                                 cluster_timestamp=TS, store=store)
    s.plan.now = 500
    assert s.plan.add_reservation(alloc(1, [(0, 5000, (4096, 4))]))
    again = ReservationSystem.single(make_plan((2048, 2), NoOverCommitPolicy()), make_agent("aligned-left"),
                                     cluster_timestamp=TS, store=store)
    again.recover()
    r = again.plan.get(rid(1))
    assert r is not None and r.acceptance_time == 500 and r.rle.nonzero_pieces() == [(0, 5000, (4096, 4))]
    assert again.plan.total_at(0) == (4096, 4)
    assert isinstance(next(iter(again.plan.reservations)), ReservationId)
