"""Builders shared by the reservation tests."""

from __future__ import annotations

from typing import Any

from apportion.reservation.agents import make_agent
from apportion.reservation.definition import ReservationDefinition, ReservationId, Stage
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.policies import NoOverCommitPolicy, SharingPolicy
from apportion.reservation.replanner import SimpleCapacityReplanner
from apportion.reservation.resmath import Calculator
from apportion.reservation.system import ReservationSystem

C1 = (1024, 1)


def rid(n: int) -> ReservationId:
    return ReservationId(1700000000000, n)


def make_plan(capacity=(10 * 1024, 10), policy: SharingPolicy | None = None, step: int = 1000, **kw: Any) -> InMemoryPlan:
    return InMemoryPlan("dedicated", capacity, step=step, policy=policy or NoOverCommitPolicy(),
                        calculator=Calculator(kw.pop("calc", "default")), **kw)


def system(agent: str = "aligned-left", replanner: SimpleCapacityReplanner | None = None, **kw: Any) -> ReservationSystem:
    return ReservationSystem.single(make_plan(**kw), make_agent(agent), replanner)


def alloc(n: int, intervals, user: str = "alice", start=None, end=None, period: int = 0, gang: bool = False) -> ReservationAllocation:
    s = min(a for a, _b, _r in intervals) if start is None else start
    e = max(b for _a, b, _r in intervals) if end is None else end
    return ReservationAllocation(rid(n), user, None, s, e, list(intervals), period=period, gang=gang)


def definition(arrival: int, deadline: int, stages, interpreter: int = 1, recurrence: str = "0") -> ReservationDefinition:
    return ReservationDefinition(arrival, deadline, tuple(Stage(*s) for s in stages), interpreter, "t", 0, recurrence)


def body(n: int, arrival: int, deadline: int, stages, interpreter: int | None = 1, queue: str = "dedicated",
         recurrence: str | None = None) -> dict[str, Any]:
    reqs: dict[str, Any] = {"reservation-request": [
        {"capability": {"memory": c[0], "vCores": c[1]}, "num-containers": k, "min-concurrency": g, "duration": d}
        for c, k, g, d in stages]}
    if interpreter is not None:
        reqs["reservation-request-interpreter"] = interpreter
    d: dict[str, Any] = {"arrival": arrival, "deadline": deadline, "reservation-name": "t", "reservation-requests": reqs}
    if recurrence is not None:
        d["recurrence-expression"] = recurrence
    return {"queue": queue, "reservation-id": str(rid(n)), "reservation-definition": d}


def message(resp) -> str:
    return resp[1]["RemoteException"]["message"]
