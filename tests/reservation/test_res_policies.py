"""Sharing policies, the replanner and the plan follower."""

from __future__ import annotations

import pytest
from res_helpers import C1, alloc, make_plan, rid

from apportion.reservation.exceptions import PlanningQuotaException, ResourceOverCommitException
from apportion.reservation.follower import PlanFollower
from apportion.reservation.policies import CapacityOverTimePolicy, NoOverCommitPolicy, NoPolicy, yarn_fraction
from apportion.reservation.replanner import SimpleCapacityReplanner

CAP = (10240, 10)


def test_fraction_and_limit_as_yarn_computes_them():
    from apportion.reservation.policies import scaled_limit

    assert scaled_limit((102400, 100), yarn_fraction(0.7)) == (71679, 69)


def test_no_over_commit():
    plan = make_plan(CAP, NoOverCommitPolicy())
    plan.add_reservation(alloc(1, [(0, 5000, (8192, 2))]))
    with pytest.raises(ResourceOverCommitException, match="Resources at time 1000 would be overcommitted"):
        plan.add_reservation(alloc(2, [(1000, 3000, (4096, 1))]))
    # vCores are checked too, even though the default calculator orders by memory only
    with pytest.raises(ResourceOverCommitException):
        plan.add_reservation(alloc(3, [(1000, 3000, (1024, 9))]))
    assert plan.add_reservation(alloc(4, [(1000, 3000, (2048, 8))]))
    assert NoPolicy().valid_window() == 0


def test_instantaneous_limit_per_user():
    plan = make_plan(CAP, CapacityOverTimePolicy(0.5, 1.0, 100_000))
    assert plan.add_reservation(alloc(1, [(0, 5000, (5120, 5))]))
    with pytest.raises(PlanningQuotaException) as e:
        plan.add_reservation(alloc(2, [(4000, 6000, C1)]))
    assert "ResourceOverCommitException: Resources at time 4000" in e.value.message
    # another user has their own half
    assert plan.add_reservation(alloc(3, [(0, 5000, (5120, 5))], user="carol"))
    avail = plan.available("alice", None, 0, 6000)
    assert avail.at(100) == (0, 0) and avail.at(5500) == (5120, 5)


def test_average_limit_and_updates():
    W = 10_000
    plan = make_plan(CAP, CapacityOverTimePolicy(1.0, 0.25, W))  # 2560 MB average over any 10 s
    # 5120 MB, 4 vCores for 5 s: exactly the average quota (2560 MB, 2 vCores)
    assert plan.add_reservation(alloc(1, [(0, 5000, (5120, 4))]))
    with pytest.raises(PlanningQuotaException, match=r"Integral \(avg over time\) quota capacity 0.25 over a "
                                                     r"window of 10 seconds,  would be exceeded"):
        plan.add_reservation(alloc(2, [(6000, 7000, C1)]))
    # far enough away the window no longer sees reservation 1
    assert plan.add_reservation(alloc(3, [(40_000, 41_000, C1)]))
    # an update that must be accepted: small reservation grows within the quota
    assert plan.add_reservation(alloc(4, [(100_000, 101_000, (5120, 4))]))
    assert plan.update_reservation(alloc(4, [(100_000, 102_000, (5120, 4))])) is True
    assert plan.get(rid(4)).end == 102_000
    # an update that must be refused: the grown version exceeds the average quota
    with pytest.raises(PlanningQuotaException):
        plan.update_reservation(alloc(4, [(100_000, 106_000, (5120, 4))]))
    assert plan.get(rid(4)).end == 102_000
    # YARN counts the old version twice on update (§12 row 3): an unchanged resubmission of a
    # reservation that uses the whole average quota is refused
    with pytest.raises(PlanningQuotaException):
        plan.update_reservation(alloc(1, [(0, 5000, (5120, 4))]))
    assert plan.get(rid(1)) is not None


def test_average_limit_is_per_user():
    plan = make_plan(CAP, CapacityOverTimePolicy(1.0, 0.25, 10_000))
    assert plan.add_reservation(alloc(1, [(0, 5000, (5120, 4))]))
    assert plan.add_reservation(alloc(2, [(0, 5000, (5120, 4))], user="carol"))


def test_replanner_removes_latest_accepted_first():
    plan = make_plan(CAP, NoPolicy())
    for n in (1, 2, 3):
        plan.now = n
        plan.add_reservation(alloc(n, [(0, 10_000, (3072, 3))]))
    plan.now = 4
    plan.add_reservation(alloc(4, [(5_000_000, 5_001_000, (8192, 8))]))  # outside the window
    plan.set_capacity((6144, 6))
    plan.add_reservation(alloc(5, [(5_000_000, 5_001_000, (4096, 4))]))  # over-committed, far away
    plan.now = 0
    removed = SimpleCapacityReplanner(3_600_000).plan(plan)
    assert removed == [rid(3)]
    assert sorted(plan.reservations) == [rid(1), rid(2), rid(4), rid(5)]
    # the over-commitment beyond the enforcement window is left alone
    assert plan.total_at(5_000_500) == (12288, 12)
    plan.set_capacity((3072, 3))
    assert SimpleCapacityReplanner(3_600_000).plan(plan) == [rid(2)]


def test_plan_follower_shares_over_time():
    plan = make_plan(CAP, NoPolicy(), move_on_expiry=True)
    plan.add_reservation(alloc(1, [(0, 4000, (5120, 5))]))
    plan.add_reservation(alloc(2, [(2000, 6000, (2048, 2))], gang=True))
    f = PlanFollower(plan)
    st = f.step(0)
    assert [s.id for s in st.active] == [rid(1)]
    assert st.queues[str(rid(1))].capacity == 0.5
    assert st.default_share == 0.5
    assert f.submit_app("app1", str(rid(1)))
    st = f.step(2500)  # rounded up to 3000
    assert st.now == 3000
    assert {str(s.id): s.capacity for s in st.active} == {str(rid(1)): 0.5, str(rid(2)): pytest.approx(0.2)}
    assert st.queues[str(rid(2))].max_capacity == st.queues[str(rid(2))].capacity  # a gang: max = capacity
    assert st.queues[str(rid(1))].max_capacity == 1.0
    assert st.default_share == pytest.approx(0.3)
    st = f.step(4000)  # reservation 1 expired: its application moves to the default queue
    assert str(rid(1)) not in st.queues
    assert st.queues["dedicated-default"].apps == ("app1",)
    assert st.moved_apps == ("app1",)
    st = f.step(7000)
    assert set(st.queues) == {"dedicated-default"}
    assert st.default_share == 1.0


def test_plan_follower_kill_on_expiry_and_replan():
    plan = make_plan(CAP, NoPolicy(), move_on_expiry=False)
    plan.add_reservation(alloc(1, [(0, 2000, (5120, 5))]))
    f = PlanFollower(plan, SimpleCapacityReplanner(), cluster=((20480, 20), 0.5))
    f.step(0)
    f.submit_app("a", str(rid(1)))
    st = f.step(3000)
    assert st.queues[str(rid(1))].capacity == 0.0 and st.queues[str(rid(1))].apps == ("a",)
    assert f.app_finished("a")
    assert str(rid(1)) not in f.step(4000).queues
    # a capacity drop below what is reserved now runs the replanner
    plan.add_reservation(alloc(2, [(10_000, 20_000, (8192, 8))]))
    f.cluster = ((8192, 8), 0.5)
    plan.now = 10_000
    st = f.step(10_000)
    assert st.replanned == (rid(2),)
    assert plan.capacity == (4096, 4)
