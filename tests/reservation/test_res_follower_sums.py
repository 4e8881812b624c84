"""The plan follower's sum of its children's capacities (YARN's `sumOfChildCapacities`, a Java float
accumulated child by child) kept as a float32 array for a step: always equal to the reference loop."""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from res_helpers import alloc, make_plan

from apportion.reservation.follower import ChildQueue, PlanFollower, _ChildSums
from apportion.reservation.plan import ReservationAllocation
from apportion.reservation.policies import NoPolicy
from apportion.reservation.resmath import Res, f32

CAP = (10240, 10)


def _reference(queues: dict[str, ChildQueue]) -> float:
    total = 0.0
    for q in queues.values():
        total = f32(total + q.capacity)
    return total


#: single-precision capacities, with the tiny and the near-1 values where rounding differs by order
capacities = st.one_of(
    st.floats(0.0, 1.0, width=32),
    st.sampled_from([0.0, 1.0, f32(1 / 3), f32(1e-7), f32(0.1), f32(0.9999)]),
    st.integers(1, 32).map(lambda k: f32(k / 32)),
)
ops = st.lists(st.tuples(st.booleans(), st.integers(0, 10_000), capacities), max_size=200)


@settings(max_examples=200, deadline=None)
@given(start=st.lists(capacities, max_size=60), edits=ops)
def test_the_float32_sum_is_the_sequential_single_precision_sum(start: list[float], edits: list[tuple[bool, int, float]]
                                                               ) -> None:
    queues = {f"q{i}": ChildQueue(f"q{i}", c) for i, c in enumerate(start)}
    sums = _ChildSums(queues)
    assert sums.total() == _reference(queues)
    for add, k, c in edits:
        if add or not queues:
            name = f"n{len(queues)}-{k}"
            if name in queues:
                continue
            queues[name] = ChildQueue(name, c)
            sums.add(name, c)
        else:
            name = list(queues)[k % len(queues)]
            queues[name].capacity = c
            sums.set(name, c)
        assert sums.total() == _reference(queues)


def test_a_capacity_that_is_not_single_precision_is_summed_as_the_reference_loop() -> None:
    queues = {"a": ChildQueue("a", 0.1), "b": ChildQueue("b", f32(0.2))}  # 0.1 is a double, not a float
    assert struct.unpack("f", struct.pack("f", 0.1))[0] != 0.1
    sums = _ChildSums(queues)
    assert sums.total() == _reference(queues)
    queues["b"].capacity = 0.3
    sums.set("b", 0.3)
    assert sums.total() == _reference(queues)


class _ReferenceFollower(PlanFollower):
    """The follower summing its children in Python on every entitlement (as before the float32 mirror)
    and reading every reservation's resources again at every step (as before the pieces were kept)."""

    def _set_entitlement(self, q: ChildQueue, capacity: float, max_capacity: float,
                         sums: _ChildSums | None = None) -> bool:
        return super()._set_entitlement(q, capacity, max_capacity, None)

    def _rows(self, active: list[ReservationAllocation], now: int) -> list[tuple[ReservationAllocation, str, Res]]:
        return [(r, str(r.id), r.resources_at(now)) for r in active]


#: a reservation: its first piece (start s, length), resources, a gang flag, and a second piece after a
#: gap (length 0: none), so that its resources change while it is active
reservations = st.lists(st.tuples(st.integers(0, 20), st.integers(1, 20), st.integers(1, 3000), st.integers(1, 4),
                                  st.booleans(), st.integers(0, 5), st.integers(0, 8)), min_size=1, max_size=120)


@settings(max_examples=60, deadline=None)
@given(rs=reservations, times=st.lists(st.integers(0, 50_000), min_size=1, max_size=12))
def test_a_step_publishes_the_same_queues_as_the_reference(rs: list[tuple[int, int, int, int, bool, int, int]],
                                                          times: list[int]) -> None:
    """Over-committed plans included (NoPolicy), where entitlements are refused at the sum's limit; the
    clock goes forward in steps, then to arbitrary times (backwards too)."""
    plans = [make_plan(CAP, NoPolicy()) for _ in range(2)]
    for i, (start, length, mem, vc, gang, gap, second) in enumerate(rs):
        pieces = [(start * 1000, (start + length) * 1000, (mem, vc))]
        if second:
            s2 = (start + length + gap) * 1000
            pieces.append((s2, s2 + second * 1000, (mem // 2 + 1, vc)))
        for plan in plans:
            plan.add_reservation(alloc(i + 1, pieces, gang=gang))
    fast, ref = PlanFollower(plans[0]), _ReferenceFollower(plans[1])
    for t in [*range(0, 45_000, 1000), *times]:
        a, b = fast.step(t), ref.step(t)
        assert a == b
        assert {n: (q.capacity, q.max_capacity) for n, q in fast.queues.items()} == \
            {n: (q.capacity, q.max_capacity) for n, q in ref.queues.items()}
