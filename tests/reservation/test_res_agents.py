"""Each interpreter with each agent, periodic jobs, update rollback, archiving, ORDER semantics."""

from __future__ import annotations

import pytest
from res_helpers import C1, alloc, body, definition, make_plan, message, rid, system
from res_invariants import check_agent_reservation, check_plan_within_capacity

from apportion.reservation.agents import make_agent
from apportion.reservation.agents.greedy import GREEDY_FAILED
from apportion.reservation.definition import R_ALL, R_ANY, R_ORDER, R_ORDER_NO_GAP
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.policies import CapacityOverTimePolicy

AGENTS = ["greedy", "greedy-left", "greedy-right", "aligned-left", "aligned-right"]
STEP = 1000


def stage_blocks(plan, res, stages):
    """Recover each stage's placement for ORDER checks: run the agent on each stage alone is not
    possible, so use the job structure: stages of distinct capabilities are told apart by memory."""
    out: dict[int, list[tuple[int, int]]] = {}
    for a, b, v in res.rle.nonzero_pieces():
        for i, s in enumerate(stages):
            c = s[0]
            if v[0] % c[0] == 0 and v[1] * c[0] == v[0] * c[1]:
                out.setdefault(i, []).append((a, b))
                break
    return out


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("interp", [R_ANY, R_ALL, R_ORDER, R_ORDER_NO_GAP])
def test_interpreters(agent, interp):
    s = system(agent, capacity=(8 * 1024, 16))
    p = s.plan
    # background load the agents must work around
    assert p.add_reservation(alloc(90, [(4000, 8000, (4 * 1024, 4))]))
    # capabilities with different memory:vCores ratios, so each piece tells which stage it holds
    stages = [((1024, 2), 4, 2, 3000), ((3072, 1), 2, 1, 2000)]
    resp = s.submit("bob", body(1, 0, 20_000, stages, interpreter=interp))
    assert resp[0] == 202, resp
    r = p.get(rid(1))
    check_agent_reservation(r, STEP)
    check_plan_within_capacity(p)
    blocks = stage_blocks(p, r, stages)
    if interp == R_ANY:
        assert len(blocks) == 1
    elif interp != R_ALL:
        assert set(blocks) == {0, 1}
    if interp in (R_ORDER, R_ORDER_NO_GAP):
        end0 = max(b for _a, b in blocks[0])
        start1 = min(a for a, _b in blocks[1])
        assert end0 <= start1  # stages keep their order and do not overlap
        if interp == R_ORDER_NO_GAP:
            tolerance = STEP if agent == "greedy" else 0
            assert start1 - end0 <= tolerance


@pytest.mark.parametrize("agent", AGENTS)
def test_unsatisfiable_request(agent):
    s = system(agent, capacity=(2048, 2))
    resp = s.submit("bob", body(1, 0, 3000, [((2048, 2), 4, 1, 2000)]))
    assert resp[0] == 400
    want = GREEDY_FAILED if agent == "greedy" else "The request cannot be satisfied"
    assert message(resp).endswith(want)
    assert s.plan.get(rid(1)) is None


@pytest.mark.parametrize("agent", AGENTS)
def test_zero_duration_stage_never_hangs(agent):
    s = system(agent)
    resp = s.submit("bob", body(1, 0, 5000, [(C1, 1, 1, 0)]))
    assert resp[0] == 400  # nothing placed: the request cannot be satisfied
    resp = s.submit("bob", body(2, 0, 5000, [(C1, 1, 1, 0), (C1, 1, 1, 1000)], interpreter=R_ALL))
    assert resp[0] == 202


@pytest.mark.parametrize("agent", AGENTS)
def test_periodic_reservation(agent):
    s = system(agent, capacity=(4096, 4), max_periodicity=24_000)
    resp = s.submit("bob", body(1, 0, 6000, [((2048, 2), 1, 1, 2000)], recurrence="6000"))
    assert resp[0] == 202, resp
    r = s.plan.get(rid(1))
    assert r.period == 6000
    check_agent_reservation(r, STEP)
    # the periodic load repeats in every period of maxPeriodicity
    for k in range(4):
        total = sum(s.plan.total_at(k * 6000 + t)[0] for t in range(0, 6000, 500))
        assert total == 2048 * 4  # 2000 ms of 2048 MB in 500 ms samples
    # a second identical periodic job fits, a third does not (capacity 4096)
    assert s.submit("bob", body(2, 0, 6000, [((2048, 2), 1, 1, 2000)], recurrence="6000"))[0] == 202
    assert s.submit("bob", body(3, 0, 6000, [((2048, 2), 6, 1, 2000)], recurrence="6000"))[0] == 400
    check_plan_within_capacity(s.plan)


def test_periodic_wrap_is_kept():
    """§12 row 1: an allocation whose folded window crosses the period end keeps its wrapped part."""
    s = system("greedy-left", capacity=(4096, 4), max_periodicity=10_000)
    resp = s.submit("bob", body(1, 8000, 12_000, [((1024, 1), 1, 1, 4000)], recurrence="5000"))
    assert resp[0] == 202, resp
    r = s.plan.get(rid(1))
    assert [(a, b) for a, b, _ in r.rle.nonzero_pieces()] == [(0, 2000), (3000, 5000)]
    assert s.plan.total_at(9500)[0] == 1024 and s.plan.total_at(1500)[0] == 1024


def test_update_rollback_keeps_old_version():
    plan = make_plan(capacity=(4096, 4))
    plan.add_reservation(alloc(1, [(0, 1000, (2048, 2))]))
    plan.add_reservation(alloc(2, [(1000, 2000, (4096, 4))], user="carol"))
    before = plan.load.breakpoints()
    # the new version overlaps reservation 2: the second validation refuses, the old one is put back
    bigger = alloc(1, [(0, 2000, (2048, 2))])
    with pytest.raises(PlanningException):
        plan.update_reservation(bigger)
    assert plan.load.breakpoints() == before
    # a policy that only refuses on the re-add shows the rollback path (update returns False)
    calls = []

    class SecondCallRefuses(type(plan.policy)):
        def validate(self, p, res):
            calls.append(res.id)
            if len(calls) == 2:
                raise PlanningException("refused")

    plan.policy = SecondCallRefuses()
    plan.now = 777
    assert plan.update_reservation(alloc(1, [(0, 1000, (1024, 1))])) is False
    assert plan.load.breakpoints() == before
    assert plan.get(rid(1)).acceptance_time == 777  # re-added: a new acceptance time


def test_update_through_rest_replans_and_counts_old_as_free():
    for agent in AGENTS:
        s = system(agent, capacity=(2048, 2))
        assert s.submit("bob", body(1, 0, 4000, [((2048, 2), 1, 1, 4000)]))[0] == 202
        # the only way to place the new version is on the old version's space
        assert s.update("bob", body(1, 0, 4000, [((1024, 1), 2, 1, 4000)])) == (200, {}), agent
        assert s.plan.total_at(0) == (2048, 2)


def test_archiving():
    plan = make_plan(policy=CapacityOverTimePolicy(1.0, 1.0, 10_000))
    plan.add_reservation(alloc(1, [(0, 1000, C1)]))
    plan.add_reservation(alloc(2, [(0, 5000, C1)]))
    plan.add_reservation(alloc(3, [(0, 1000, C1)], period=2000))
    assert plan.archive_completed(10_999) == []
    assert plan.archive_completed(11_000) == [rid(1)]  # end <= tick - window
    assert plan.archive_completed(20_000, valid_window=0) == [rid(2)]
    assert list(plan.reservations) == [rid(3)]  # periodic reservations are never archived (§12 row 2)
    assert plan.last_end_time() == -1


def test_greedy_seed_example_direct():
    plan = make_plan(capacity=(2048, 2))
    for n, (a, b, k) in enumerate([(1000, 2000, 1), (2000, 3000, 2), (3000, 4000, 1)], start=1):
        plan.add_reservation(alloc(n, [(a, b, (1024 * k, k))]))
    agent = make_agent("greedy")
    assert agent.create(plan, rid(4), "bob", definition(0, 5000, [((1024, 1), 2, 1, 2000)]))
    r = plan.get(rid(4))
    assert [(a, b) for a, b, _ in r.rle.nonzero_pieces()] == [(0, 2000), (3000, 5000)]
    assert (r.start, r.end) == (0, 5000)


def test_no_gap_refused_when_the_greedy_scan_leaves_a_gap():
    """Trunk's greedy allocator is not gap-aware: a blocked block pushes the next stage away."""
    s = system("greedy-left", capacity=(8 * 1024, 16))
    assert s.plan.add_reservation(alloc(90, [(4000, 8000, (6 * 1024, 6))]))
    stages = [((1024, 2), 4, 2, 3000), ((3072, 1), 2, 1, 2000)]
    resp = s.submit("bob", body(1, 0, 20_000, stages, interpreter=R_ORDER_NO_GAP))
    assert resp[0] == 400
    assert message(resp).endswith("The allocation found does not respect ORDER_NO_GAP")
    # R_ORDER accepts the same job, with the gap
    assert s.submit("bob", body(2, 0, 20_000, stages, interpreter=R_ORDER))[0] == 202
