"""The service's reservation system: one plan per reservable queue, behind the shared REST handlers.

A Queue annotated `apportion.io/reservable: "true"` owns a plan; its optional `apportion.io/plan`
annotation (a JSON object) sets the plan as the scenario format's `plans` entries do, plus the agent:
`{"agent": "aligned-left", "policy": {"type": "CapacityOverTime", "instantaneousMaxCapacity": 1.0,
"averageCapacity": 1.0, "window": 86400}, "step": 1, "moveOnExpiry": true, "replanner": true}` (times
in seconds). The plan's capacity is what the tree promises the queue: its guarantee, else its
capability, else the whole cluster (memory in MB, whole vCores).

Each plan sits in a `reservation.api.ReservationSystem`, so every answer comes from the same handlers
as `plan replay`. `ServiceReservations` routes a request to the right one (by the body's queue, or by
the id -> queue record) and keeps what spans plans: the id sequence and the id record. When the
multi-plan ReservationSystem with a PlanStore lands, this router is what it replaces.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from apportion.errors import InputError
from apportion.reservation.agents import AGENT_NAMES, make_agent
from apportion.reservation.api import NO_QUEUE, ReservationSystem, Response, error
from apportion.reservation.definition import BadRequest, ReservationId
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import make_policy
from apportion.reservation.replanner import SimpleCapacityReplanner
from apportion.reservation.stepfn import Res

RESERVABLE_KEY = "apportion.io/reservable"
PLAN_KEY = "apportion.io/plan"


@dataclass(frozen=True)
class PlanSettings:
    """A reservable queue's plan settings (scenario `plans` format, plus `agent`)."""

    agent: str = "aligned-left"
    policy: str = '{"type": "CapacityOverTime"}'
    step_ms: int = 1000
    move_on_expiry: bool = True
    overuse: bool = True
    replanner_ms: int | None = 3_600_000


def _seconds_ms(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
        raise InputError("expected a positive number of seconds", where=where)
    return int(round(float(v) * 1000))


def parse_plan_settings(text: str, where: str) -> PlanSettings:
    """The `apportion.io/plan` annotation; InputError naming the field."""
    try:
        raw = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as e:
        raise InputError(f"not a JSON object: {e.msg}", where=where) from None
    if not isinstance(raw, dict):
        raise InputError("expected a JSON object", where=where)
    agent = raw.get("agent", "aligned-left")
    if agent not in AGENT_NAMES:
        raise InputError(f"unknown agent {agent!r} (one of {', '.join(AGENT_NAMES)})", where=f"{where}.agent")
    pol = raw.get("policy") or {"type": "CapacityOverTime"}
    if not isinstance(pol, dict):
        raise InputError("expected an object", where=f"{where}.policy")
    spec = dict(pol)
    if "window" in spec:
        spec["window"] = _seconds_ms(spec["window"], f"{where}.policy.window")
    try:
        make_policy(spec)
    except ValueError as e:
        raise InputError(str(e), where=f"{where}.policy") from None
    step = _seconds_ms(raw["step"], f"{where}.step") if "step" in raw else 1000
    rp = raw.get("replanner", True)
    if isinstance(rp, dict):
        rep: int | None = _seconds_ms(rp.get("enforcementWindow", 3600), f"{where}.replanner.enforcementWindow")
    elif isinstance(rp, bool):
        rep = 3_600_000 if rp else None
    else:
        raise InputError("expected true, false or {enforcementWindow}", where=f"{where}.replanner")
    for key in ("moveOnExpiry", "overuse"):
        if not isinstance(raw.get(key, True), bool):
            raise InputError("expected true or false", where=f"{where}.{key}")
    return PlanSettings(agent=agent, policy=json.dumps(spec, sort_keys=True), step_ms=step,
                        move_on_expiry=raw.get("moveOnExpiry", True), overuse=raw.get("overuse", True),
                        replanner_ms=rep)


def short_name(queue: str) -> str:
    """`root.dedicated` and `dedicated` name the same plan."""
    return queue[5:] if queue.startswith("root.") else queue


class ServiceReservations:
    """Every plan of the service, and the request routing between them."""

    def __init__(self, cluster_timestamp: int) -> None:
        self.cluster_timestamp = cluster_timestamp
        self.systems: dict[str, ReservationSystem] = {}
        self.settings: dict[str, PlanSettings] = {}
        #: id -> short queue name of every accepted submit, never removed (spec §5.6)
        self.queue_of: dict[ReservationId, str] = {}
        self._seq = 0

    # -- the set of plans follows the reservable queues ----------------------------------------
    def configure(self, queues: dict[str, tuple[PlanSettings, Res]], now_ms: int) -> None:
        """Create, re-create (settings changed) or drop plans; set each plan's capacity."""
        for name in list(self.systems):
            if name not in queues:
                del self.systems[name]
                del self.settings[name]
        for name, (settings, capacity) in sorted(queues.items()):
            sys_ = self.systems.get(name)
            if sys_ is None or self.settings[name] != settings:
                old = sys_.plan.reservations if sys_ is not None else {}
                sys_ = self._new_system(name, settings, capacity, now_ms)
                for r in sorted(old.values(), key=lambda r: (r.acceptance_time, r.id)):
                    accepted = r.acceptance_time
                    sys_.plan.add_reservation(r, is_recovering=True)
                    r.acceptance_time = accepted
                self.systems[name] = sys_
                self.settings[name] = settings
            sys_.plan.set_capacity(capacity)
            sys_.queue_of = self.queue_of

    def _new_system(self, name: str, s: PlanSettings, capacity: Res, now_ms: int) -> ReservationSystem:
        plan = InMemoryPlan(name, capacity, step=s.step_ms, policy=make_policy(json.loads(s.policy)),
                            now=now_ms, move_on_expiry=s.move_on_expiry)
        replanner = SimpleCapacityReplanner(s.replanner_ms) if s.replanner_ms is not None else None
        sys_ = ReservationSystem(plan, make_agent(s.agent), replanner, None, self.cluster_timestamp)
        sys_.queue_of = self.queue_of
        return sys_

    def set_now(self, now_ms: int) -> None:
        """The plans' clock: the validator's now and the acceptance time of what is added next."""
        for s in self.systems.values():
            s.plan.now = now_ms

    def plan(self, queue: str) -> InMemoryPlan | None:
        """The plan of a reservable queue (short or `root.` name)."""
        s = self.systems.get(short_name(queue))
        return None if s is None else s.plan

    # -- the five handlers, routed --------------------------------------------------------------
    def new_reservation(self, user: str | None) -> Response:
        """A fresh id, unique across every plan and every id ever accepted."""
        if user is None:
            return error(401, "Unable to obtain user name, user not authenticated")
        while True:
            self._seq += 1
            rid = ReservationId(self.cluster_timestamp, self._seq)
            if rid not in self.queue_of and all(rid not in s.plan.reservations for s in self.systems.values()):
                return 200, {"reservation-id": str(rid)}

    def _by_queue(self, queue: Any) -> ReservationSystem | None:
        if isinstance(queue, str) and queue:
            return self.systems.get(short_name(queue))
        return None

    def _by_id(self, body: Any) -> ReservationSystem | None:
        if isinstance(body, dict) and isinstance(body.get("reservation-id"), str):
            try:
                rid = ReservationId.parse(body["reservation-id"])
            except BadRequest:
                return None
            q = self.queue_of.get(rid)
            if q is not None:
                return self.systems.get(q)
        return None

    def _any(self) -> ReservationSystem | None:
        return next(iter(self.systems.values()), None)

    def submit(self, user: str | None, body: Any) -> Response:
        """Submit to the plan of the body's queue (any plan answers the errors that come first)."""
        target = self._by_queue(body.get("queue") if isinstance(body, dict) else None) or self._any()
        if target is None:
            return self._no_plans(user, body, "queue")
        return target.submit(user, body)

    def update(self, user: str | None, body: Any) -> Response:
        """Update in the plan that accepted the id."""
        target = self._by_id(body) or self._any()
        if target is None:
            return self._no_plans(user, body, None)
        return target.update(user, body)

    def delete(self, user: str | None, body: Any) -> Response:
        """Delete from the plan that accepted the id."""
        target = self._by_id(body) or self._any()
        if target is None:
            return self._no_plans(user, body, None)
        return target.delete(user, body)

    def list(self, user: str | None, query: dict[str, str]) -> Response:
        """List the plan of the query's queue."""
        target = self._by_queue(query.get("queue", "default")) or self._any()
        if target is None:
            return self._no_plans(user, query, "queue")
        return target.list(user, query)

    @staticmethod
    def _no_plans(user: str | None, body: Any, queue_key: str | None) -> Response:
        """No reservable queue at all: the answers a plan-less RM gives."""
        if user is None:
            return error(401, "Unable to obtain user name, user not authenticated")
        if queue_key is not None:
            q = body.get(queue_key, "default") if isinstance(body, dict) else ""
            if not q:
                return error(400, NO_QUEUE)
            return error(400, f"The specified queue: {q} is not managed by reservation system. "
                              "Please try again with a valid reservable queue.")
        return error(400, "There is no reservable queue in this cluster.")
