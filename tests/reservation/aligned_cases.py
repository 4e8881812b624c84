"""Random plans and definitions for the aligned allocator's property tests, and what a planning gives.

Shared by the tests comparing the allocator's fast paths (`ArrayWindows`, `BoundedWindows`) with its
walk: the same strategies and the same outcome, so that both compare like with like.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from res_helpers import make_plan, rid

from apportion.reservation.agents import aligned
from apportion.reservation.definition import ReservationDefinition, Stage
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.plan import ReservationAllocation
from apportion.reservation.policies import CapacityOverTimePolicy, NoPolicy

#: the plans' periodicity and time scale (ms)
T = 60_000
#: container capabilities (memory, vCores)
caps = st.sampled_from([(1024, 1), (2048, 1), (1024, 2), (3072, 3), (512, 4)])
#: a reservation in the plan: start, length, capability, containers, period
existing = st.tuples(st.integers(0, 40_000), st.integers(1, 8_000), caps, st.integers(1, 2),
                     st.sampled_from([0, 0, 0, 20_000, 30_000, 60_000]))
#: a stage: capability, gangs, gang size, duration
stage = st.tuples(caps, st.integers(1, 6), st.integers(1, 2), st.integers(1, 6_000))
#: a job: arrival, window, stages, interpreter, periodic
job = st.tuples(st.integers(0, 30_000), st.integers(2_500, 40_000), st.lists(stage, min_size=1, max_size=3),
                st.integers(0, 3), st.booleans())


def definition(arrival: int, window: int, stages: list[Any], interp: int, periodic: bool) -> ReservationDefinition:
    """The definition a drawn `job` describes (periodic every 30 s when its window allows)."""
    sts = tuple(Stage(cap, gangs * size, size, dur) for cap, gangs, size, dur in stages)
    rec = "30000" if periodic and window <= 30_000 else "0"
    return ReservationDefinition(arrival, arrival + window, sts, interp, "t", 0, rec)


def outcome(left: bool, plan: Any, d: ReservationDefinition, old: ReservationAllocation | None) -> Any:
    """What the aligned planner (left or right) gives for `d`: the allocation's shape, or the refusal."""
    planner = aligned.aligned_agent(left).agents[0]
    try:
        r = planner.plan_job(plan, old.id if old is not None else rid(99), "bob", d, old)
    except PlanningException as e:
        return (type(e).__name__, e.message)
    return (r.start, r.end, r.period, r.intervals, r.rle.breakpoints())


def random_plan(capacity: tuple[int, int], capped: bool, step: int, calc: str, loads: list[Any], drop: int,
                use_old: int, mirrors: bool | None = None) -> tuple[Any, ReservationAllocation | None]:
    """A plan of the drawn `existing` reservations (users alternating), its capacity halved when
    `drop` is 0 (over-committed: negative free), and the version `use_old` names (None out of range).
    `mirrors`: the plan's arrays on from the start (True), its step functions turned into arrays
    later (False), or the plan's own choice (None)."""
    policy = CapacityOverTimePolicy(0.5, 1.0, T) if capped else NoPolicy()
    plan = make_plan(capacity, policy, step=step, calc=calc, max_periodicity=T)
    if mirrors is not None:
        plan._mirrored, plan._mirrors_off = mirrors, not mirrors
    ids = []
    for n, (a, ln, c, k, period) in enumerate(loads, start=1):
        ln = min(ln, period) if period else ln
        r = ReservationAllocation(rid(n), "alice" if n % 2 else "bob", None, a, a + ln,
                                  [(a, a + ln, (c[0] * k, c[1] * k))], period=period)
        plan.add_reservation(r, is_recovering=True)
        ids.append(rid(n))
    if drop == 0:
        plan.set_capacity((capacity[0] // 2, capacity[1] // 2))
    return plan, (plan.get(ids[use_old]) if 0 <= use_old < len(ids) else None)
