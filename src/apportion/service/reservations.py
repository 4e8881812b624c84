"""The service's plans: which queues are reservable, and their plan settings.

A Queue annotated `apportion.io/reservable: "true"` owns a plan; its optional `apportion.io/plan`
annotation (a JSON object) sets the plan as the scenario format's `plans` entries do, plus the agent:
`{"agent": "aligned-left", "policy": {"type": "CapacityOverTime", "instantaneousMaxCapacity": 1.0,
"averageCapacity": 1.0, "window": 86400}, "step": 1, "moveOnExpiry": true, "replanner": true}` (times
in seconds). The plan's capacity is what the tree promises the queue: its guarantee, else its
capability, else the whole cluster (memory in MB, whole vCores).

The plans live in one `reservation.system.ReservationSystem` (the same handlers as `plan replay`
answer every request); `configure_plans` keeps its set of plans equal to the reservable queues.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from apportion.errors import InputError
from apportion.reservation.agents import AGENT_NAMES, make_agent
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import make_policy
from apportion.reservation.replanner import SimpleCapacityReplanner
from apportion.reservation.stepfn import Res
from apportion.reservation.store import PlanStore
from apportion.reservation.system import ReservationSystem

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


def configure_plans(system: ReservationSystem, settings: dict[str, PlanSettings],
                    queues: dict[str, tuple[PlanSettings, Res]], store: PlanStore | None, now_ms: int) -> None:
    """Make the system's plans follow the reservable queues: a new one is created and recovers its
    stored reservations, one whose settings changed is re-created with the same reservations, one no
    longer reservable is dropped (its reservations stay stored); every plan gets its capacity."""
    for name in list(system.plans):
        if name not in queues:
            del system.plans[name]
            settings.pop(name, None)
    for name, (wanted, capacity) in sorted(queues.items()):
        entry = system.plans.get(name)
        if entry is not None and settings.get(name) == wanted:
            entry.plan.set_capacity(capacity)
            continue
        held = list(entry.plan.reservations.values()) if entry is not None else None
        if entry is not None:
            del system.plans[name]
        plan = InMemoryPlan(name, capacity, step=wanted.step_ms, policy=make_policy(json.loads(wanted.policy)),
                            now=now_ms, move_on_expiry=wanted.move_on_expiry)
        replanner = SimpleCapacityReplanner(wanted.replanner_ms) if wanted.replanner_ms is not None else None
        system.add_plan(plan, make_agent(wanted.agent), replanner)
        settings[name] = wanted
        if held is not None:
            for r in sorted(held, key=lambda r: r.id):
                plan.add_reservation(r, is_recovering=True)
        elif store is not None:
            plan.recover(store.reservations(name))
