"""The 400s seen in issue 18's submit benchmark (1-32 of 6,000 live submits refused with
`ResourceOverCommitException: Resources at time T would be overcommitted`, T the request's arrival),
reproduced without a server: they are decided by the plan and the request alone, not by a race.

Under the default calculator both planners of aligned-left fit gangs by memory only, while the
sharing policy admits component-wise (contract §2.3 item 2): when every vCore of the plan is held
at the request's arrival instant and memory is free (the benchmark's 1 GB / 1 vCore requests on a
plan of 128 GB and 32 vCores; a burst of submissions stamped with the same arrival millisecond fills
the vCores there), the low-cost planner places on the window starting at the arrival and its own
check refuses it, the greedy planner then places there by memory, and the policy refuses the result.
The same request arriving a few milliseconds later, after the vCores are free again, is accepted.
Live runs differ from run to run because the clients' arrival stamps do, and the plans they meet."""

from __future__ import annotations

from typing import Any

import pytest
from res_helpers import alloc

from apportion.reservation.agents import make_agent
from apportion.reservation.agents.common import TryMany
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import make_policy
from apportion.reservation.system import ReservationSystem
from gc_garbage import cyclic_garbage, named

A = 1_800_000_000_003


def _system() -> ReservationSystem:
    """The service's default plan (half of four 16-core, 64 GiB nodes) with the load the benchmark
    leaves: every vCore held on [A - 995, A + 5), and half the plan held from A + 1 s on."""
    plan = InMemoryPlan("dedicated", (131072, 32), step=1000, policy=make_policy({"type": "CapacityOverTime"}), now=A)
    system = ReservationSystem.single(plan, make_agent("aligned-left"))
    plan.add_reservation(alloc(1, [(A - 995, A + 5, (32768, 32))], user="other"), is_recovering=True)
    plan.add_reservation(alloc(2, [(A + 1000, A + 900_000, (16384, 16))], user="other"), is_recovering=True)
    return system


def _submit(system: ReservationSystem, arrival: int) -> tuple[int, Any]:
    rid = system.new_reservation("u1")[1]["reservation-id"]
    return system.submit("u1", {"queue": "dedicated", "reservation-id": rid, "reservation-definition": {
        "arrival": arrival, "deadline": arrival + 600_000, "reservation-name": "bench",
        "reservation-requests": {"reservation-request-interpreter": 0, "reservation-request": [
            {"capability": {"memory": 1024, "vCores": 1}, "num-containers": 1, "min-concurrency": 1,
             "duration": 1000}]}}})


@pytest.mark.parametrize("step_first", [False, True])
def test_a_request_arriving_when_the_vcores_are_all_held_is_refused_by_the_policy(step_first: bool) -> None:
    system = _system()
    if step_first:  # a tick of the plan follower between the requests changes nothing
        next(iter(system.plans.values())).follower.step(A)
    code, body = _submit(system, A)
    assert code == 400
    message = body["RemoteException"]["message"]
    assert "ResourceOverCommitException" in message
    assert f"Resources at time {A} would be overcommitted" in message
    assert len(system.plan.reservations) == 2


def test_the_same_request_arriving_after_the_vcores_are_free_is_accepted() -> None:
    system = _system()
    assert _submit(system, A + 5)[0] == 202
    placed = system.plan.get_reservations(None, None, "u1")
    assert [r.rle.nonzero_pieces() for r in placed] == [[(A + 5, A + 1005, (1024, 1))]]


def test_a_refusal_leaves_no_reference_cycle_behind() -> None:
    """The service freezes what is alive between ticks (service/collector.py), so a reference cycle
    alive at that moment is only freed by a collection over the whole heap. A refusal raised out of
    TryMany once held itself through the frame that raised it (exception -> traceback -> frame ->
    the exception): alive while the writer answered it, frozen if the settle ran then, and with it
    the agent's frames and step functions (the short load test's audit found them)."""
    system = _system()
    with cyclic_garbage(("frame", "traceback", "StepFunction")) as cyclic:
        assert _submit(system, A)[0] == 400
    assert not cyclic, named(cyclic)[:10]


class _Refuses:
    """An agent that refuses every request from a frame holding a large local (as a planner's step
    functions are), so a leaked frame shows."""

    def create(self, *_: Any) -> bool:
        held = bytearray(1 << 16)  # noqa: F841 - kept in the frame the refusal's traceback holds
        raise PlanningException("refused")


class _Accepts:
    def create(self, *_: Any) -> bool:
        return True


@pytest.mark.parametrize("agents,accepted", [((_Refuses, _Accepts), True), ((_Refuses, _Refuses), False)])
def test_trymany_leaves_no_cycle_whether_a_later_agent_accepts_or_all_refuse(agents: tuple[type, ...],
                                                                             accepted: bool) -> None:
    """A refusal kept while a later agent was tried held TryMany's frame through its traceback, and the
    frame held the refusal: a cycle when a later agent accepted (the frame outlives the call as an
    object), as when the last refusal was raised again."""
    many = TryMany("t", [a() for a in agents])
    with cyclic_garbage(("frame", "traceback", "PlanningException")) as cyclic:
        if accepted:
            assert many.create(None, None, "u", None)  # type: ignore[arg-type]
        else:
            with pytest.raises(PlanningException):
                many.create(None, None, "u", None)  # type: ignore[arg-type]
    assert not cyclic, named(cyclic)[:10]
