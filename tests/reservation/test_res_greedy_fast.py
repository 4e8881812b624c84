"""The fast `greedy` agent against the seed's step-by-step reference (issue 7): identical results.

Random plans hold existing reservations (periodic ones, ones off the step grid, and over-commitment
after a capacity drop, so free resources go negative), random definitions use every interpreter,
durations that are not multiples of the step, and sometimes an old version (an update). Both
agents must produce the same reservation, or refuse with the same exception and message.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from res_helpers import body, make_plan, rid, system

from apportion.reservation.agents import REFERENCE_AGENT, GreedyAgent, GreedyReferenceAgent
from apportion.reservation.definition import ReservationDefinition, Stage
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.plan import ReservationAllocation
from apportion.reservation.policies import CapacityOverTimePolicy, NoPolicy

T = 60_000
caps = st.sampled_from([(1024, 1), (2048, 1), (1024, 2), (3072, 3), (512, 4)])
existing = st.tuples(
    st.integers(0, 40_000),  # start, off the grid
    st.integers(1, 8_000),  # length
    caps,
    st.integers(1, 2),  # multiplier
    st.sampled_from([0, 0, 0, 20_000, 30_000, 60_000]),  # period
)
stage = st.tuples(caps, st.integers(1, 4), st.integers(1, 2), st.integers(0, 6_000), st.booleans())
job = st.tuples(
    st.integers(0, 30_000),  # arrival
    st.integers(2_500, 40_000),  # window
    st.lists(stage, min_size=1, max_size=3),
    st.integers(0, 3),
    st.booleans(),  # periodic (30 s) when the window allows it
)


def _definition(arrival: int, window: int, stages: list[Any], interp: int, periodic: bool) -> ReservationDefinition:
    sts = []
    for cap, gangs, size, dur, bad in stages:
        # now and then a container count that is not a multiple of the gang size (invalid stage)
        n = gangs * size + (1 if bad and size > 1 and dur % 5 == 0 else 0)
        sts.append(Stage(cap, n, size, dur))
    rec = "30000" if periodic and window <= 30_000 else "0"
    return ReservationDefinition(arrival, arrival + window, tuple(sts), interp, "t", 0, rec)


def _outcome(agent: GreedyReferenceAgent, plan, definition, old: ReservationAllocation | None) -> Any:
    try:
        r = agent.plan_job(plan, old.id if old is not None else rid(99), "bob", definition, old)
    except PlanningException as e:
        return (type(e).__name__, e.message)
    return (r.start, r.end, r.period, r.intervals, r.rle.breakpoints())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    step=st.sampled_from([1000, 700, 1500]),
    calc=st.sampled_from(["default", "dominant"]),
    capacity=st.tuples(st.integers(4, 16).map(lambda k: k * 1024), st.integers(4, 16)),
    loads=st.lists(existing, max_size=14),
    drop=st.integers(0, 3),
    jobs=st.lists(job, min_size=1, max_size=3),
    use_old=st.integers(-1, 1),
)
def test_fast_greedy_places_exactly_like_the_reference(step, calc, capacity, loads, drop, jobs, use_old):
    plan = make_plan(capacity, NoPolicy(), step=step, calc=calc, max_periodicity=T)
    ids = []
    for n, (a, ln, c, k, period) in enumerate(loads, start=1):
        ln = min(ln, period) if period else ln
        r = ReservationAllocation(rid(n), "alice" if n % 2 else "bob", None, a, a + ln,
                                  [(a, a + ln, (c[0] * k, c[1] * k))], period=period)
        plan.add_reservation(r)
        ids.append(rid(n))
    if drop == 0:
        plan.set_capacity((capacity[0] // 2, capacity[1] // 2))  # over-committed: negative free
    old = plan.get(ids[use_old]) if 0 <= use_old < len(ids) else None
    fast, ref = GreedyAgent(), GreedyReferenceAgent()
    for args in jobs:
        d = _definition(*args)
        assert _outcome(fast, plan, d, old) == _outcome(ref, plan, d, old)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=st.lists(st.tuples(st.sampled_from(["submit", "submit", "update", "delete"]), st.integers(1, 4), job),
                     min_size=1, max_size=8))
def test_fast_and_reference_systems_stay_identical(jobs):
    """The same REST stream through both agents leaves identical answers and identical plans."""
    systems = [system(name, capacity=(8192, 6), max_periodicity=T, policy=CapacityOverTimePolicy(1.0, 0.6, 40_000))
               for name in ("greedy", REFERENCE_AGENT)]
    for op, n, (arrival, window, stages, interp, periodic) in jobs:
        sts = [(c, g * k, k, d) for c, g, k, d, _bad in stages]
        b = body(n, arrival, arrival + max(window, 1), sts, interpreter=interp,
                 recurrence="30000" if periodic and window <= 30_000 else None)
        answers = []
        for s in systems:
            if op == "submit":
                answers.append(s.submit("bob", b))
            elif op == "update":
                answers.append(s.update("bob", b))
            else:
                answers.append(s.delete("bob", {"reservation-id": str(rid(n))}))
        assert answers[0] == answers[1]
        fp, rp = systems[0].plan, systems[1].plan
        assert fp.load == rp.load and fp.periodic_load == rp.periodic_load
        assert {k: v.intervals for k, v in fp.reservations.items()} == {k: v.intervals for k, v in rp.reservations.items()}


def test_a_failed_stage_gives_its_partial_placements_back():
    """R_ANY: the last stage places 4 of its 5 gangs, fails and is undone; the first stage then needs
    the whole plan, so it fits only if the undo also restored the free resources."""
    plan = make_plan((4096, 4), NoPolicy())
    d = ReservationDefinition(0, 4000, (Stage((4096, 4), 1, 1, 4000), Stage((2048, 1), 5, 1, 2000)), 0, "t", 0, "0")
    for agent in (GreedyAgent(), GreedyReferenceAgent()):
        r = agent.plan_job(plan, rid(1), "bob", d, None)
        assert r.rle.nonzero_pieces() == [(0, 4000, (4096, 4))]
