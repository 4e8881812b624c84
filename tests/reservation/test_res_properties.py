"""Property tests: any sequence of accepted operations keeps the plan and every reservation valid."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from res_helpers import body, rid, system
from res_invariants import check_agent_reservation, check_load_is_sum, check_plan_within_capacity

from apportion.reservation.policies import CapacityOverTimePolicy

AGENTS = ["greedy", "greedy-left", "greedy-right", "aligned-left", "aligned-right"]
STEP = 1000

stage = st.tuples(
    st.sampled_from([(1024, 1), (2048, 1), (1024, 2), (3072, 2)]),
    st.integers(1, 3),  # gangs
    st.integers(1, 2),  # gang size
    st.integers(1, 6).map(lambda k: k * 500),  # durations, some off the step grid
)
job = st.tuples(
    st.integers(0, 20).map(lambda k: k * 700),  # arrival
    st.integers(2, 30).map(lambda k: k * 900),  # window length
    st.lists(stage, min_size=1, max_size=3),
    st.integers(0, 3),  # interpreter
    st.sampled_from([None, None, "30000", "60000"]),  # recurrence
)
ops = st.lists(st.tuples(st.sampled_from(["submit", "submit", "update", "delete"]), st.integers(1, 5), job),
               min_size=1, max_size=10)


@pytest.mark.parametrize("agent", AGENTS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops)
def test_random_operations_keep_invariants(agent, ops):
    s = system(agent, capacity=(8192, 6), max_periodicity=60_000,
               policy=CapacityOverTimePolicy(1.0, 0.8, 120_000))
    plan = s.plan
    for op, n, (arrival, length, stages, interp, rec) in ops:
        stages_b = [(c, g * k, k, d) for c, g, k, d in stages]
        b = body(n, arrival, arrival + length, stages_b, interpreter=interp, recurrence=rec)
        before = plan.load.breakpoints(), plan.periodic_load.base.breakpoints()
        existed = plan.get(rid(n)) is not None
        if op == "submit":
            status, _ = s.submit("bob", b)
            if status == 202 and not existed:
                check_agent_reservation(plan.get(rid(n)), STEP)
                # deleting what was added restores the plan exactly
                snapshot = plan.get(rid(n))
                assert s.delete("bob", {"reservation-id": str(rid(n))})[0] == 200
                assert (plan.load.breakpoints(), plan.periodic_load.base.breakpoints()) == before
                plan.add_reservation(snapshot)
        elif op == "update":
            status, _ = s.update("bob", b)
            if status == 200:
                check_agent_reservation(plan.get(rid(n)), STEP)
            else:
                # a refused update leaves the plan as it was
                assert (plan.load.breakpoints(), plan.periodic_load.base.breakpoints()) == before
        else:
            s.delete("bob", {"reservation-id": str(rid(n))})
        check_plan_within_capacity(plan)
        check_load_is_sum(plan)
        for r in plan.reservations.values():
            check_agent_reservation(r, STEP)
