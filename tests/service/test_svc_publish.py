"""The followers' queues published tick by tick (service/publish.py): what the cache holds after each
tick's changes is what `reservation_queues` (the reference) makes from the follower's state, the
active set and the reservations said to have flipped are right, and a queue that would be the same
is the same object. Random submit / update / delete / clock / settings sequences on a real
incremental follower (its steps are incremental or full, as it decides)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.reservation.allocation import ReservationAllocation
from apportion.reservation.definition import ReservationId
from apportion.reservation.follower_inc import IncrementalFollower
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import NoPolicy
from apportion.service.publish import PlanInputs, QueuePublisher, reservation_queues

CAP = (10240, 10)
DIMS = ("memory-mb", "vcores")

shape = st.tuples(st.integers(0, 30), st.integers(1, 12), st.integers(0, 4000), st.integers(0, 4), st.booleans(),
                  st.integers(0, 5), st.integers(0, 6))
op = st.one_of(
    st.tuples(st.just("add"), shape),
    st.tuples(st.just("update"), st.integers(0, 1000), shape),
    st.tuples(st.just("delete"), st.integers(0, 1000)),
    st.tuples(st.just("step"), st.integers(0, 4)),
    st.tuples(st.just("jump"), st.integers(0, 50)),
    st.tuples(st.just("settings"), st.sampled_from([None, {"cpu": "8"}, {"cpu": "8", "memory": "8Gi"}]),
              st.booleans()),
    st.tuples(st.just("capacity"), st.sampled_from([CAP, (8192, 8)])),
    st.tuples(st.just("reset"),),
)


def _alloc(n: int, s: tuple[int, int, int, int, bool, int, int]) -> ReservationAllocation:
    start, length, mem, vc, gang, gap, second = s
    pieces = [(start * 1000, (start + length) * 1000, (mem, vc))]
    if second:
        a = (start + length + gap) * 1000
        pieces.append((a, a + second * 1000, (mem // 2, vc)))
    return ReservationAllocation(ReservationId(1, n), f"u{n % 3}", None, pieces[0][0], pieces[-1][1], pieces,
                                 gang=gang)


def _check(ops: list[tuple[Any, ...]]) -> int:
    plan = InMemoryPlan("dedicated", CAP, step=1000, policy=NoPolicy(), dims=DIMS)
    follower = IncrementalFollower(plan)
    pub = QueuePublisher()
    cache: dict[str, dict[str, Any]] = {}
    active_before: set[str] = set()
    cap: Any = None
    overuse = True
    n = t = followed = 0
    for o in ops:
        kind = o[0]
        if kind == "add":
            n += 1
            plan.add_reservation(_alloc(n, o[1]))
        elif kind in ("update", "delete"):
            ids = sorted(plan.reservations)
            if not ids:
                continue
            rid = ids[o[1] % len(ids)]
            if kind == "delete":
                plan.delete_reservation(rid)
            else:
                plan.update_reservation(_alloc(rid.seq, o[2]))
        elif kind == "settings":
            cap, overuse = o[1], o[2]
        elif kind == "capacity":
            plan.set_capacity(o[1])
        elif kind == "reset":
            pub.reset()
            cache, active_before = {}, set()
        else:
            t = t + o[1] * 1000 if kind == "step" else o[1] * 1000
            state = follower.step(t)
            inputs: dict[str, PlanInputs] = {"dedicated": (cap, overuse, DIMS, state.plan_capacity,
                                                           state.default_queue)}
            held = dict(cache)
            out = pub.publish({"dedicated": state}, inputs)
            followed += state.changes is not None
            for name, obj in out.changed.items():
                if obj is None:
                    assert name in cache
                    del cache[name]
                else:
                    assert held.get(name) is not obj  # only what changed is sent
                    cache[name] = obj
            want, active = reservation_queues({"dedicated": state}, inputs)
            assert cache == {q["metadata"]["name"]: q for q in want}
            assert out.active == active
            assert out.flipped == active ^ active_before
            # a queue the publisher did not send is the object the cache held
            for name, obj in cache.items():
                if name not in out.changed:
                    assert held[name] is obj
            active_before = set(active)
    return followed


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(op, min_size=1, max_size=60))
def test_published_changes_keep_the_cache_equal_to_the_reference(ops: list[tuple[Any, ...]]) -> None:
    _check(ops)


def test_ordinary_ticks_are_published_from_the_followers_changes() -> None:
    """A run of ordinary steps takes the incremental path (and still equals the reference)."""
    ops: list[tuple[Any, ...]] = []
    for i in range(50):
        ops.append(("add", (i % 25, 2 + i % 6, 300 + 41 * i, i % 3, i % 4 == 0, i % 3, i % 4)))
        if i % 6 == 0:
            ops.append(("update", i * 5, (i % 15 + 3, 4, 700, 2, False, 1, 2)))
        if i % 7 == 0:
            ops.append(("delete", i * 3))
        ops.append(("step", 1))
    assert _check(ops) > 40
