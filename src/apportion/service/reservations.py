"""The service's plans: which queues are reservable, and their plan settings.

A Queue annotated `apportion.io/reservable: "true"` owns a plan; its optional `apportion.io/plan`
annotation (a JSON object) sets the plan as the scenario format's `plans` entries do, plus the agent:
`{"agent": "aligned-left", "policy": {"type": "CapacityOverTime", "instantaneousMaxCapacity": 1.0,
"averageCapacity": 1.0, "window": 86400}, "step": 1, "moveOnExpiry": true, "replanner": true}` (times
in seconds). The plan's capacity is what the tree promises the queue: its guarantee, else its
deserved; a queue promised neither gets its capability, else the whole cluster (memory in MB, whole
vCores), as `core.plan_capacities` works it out.

A plan's dimensions are YARN 3's resource types: `memory-mb`, `vcores`, then every other resource
type the cluster's nodes have (`nvidia.com/gpu`, any extended resource, in whole units; `pods` is not
planned), sorted by name. A cluster of memory and CPU only has two-type plans, exactly as before. A
plan never loses a type while it lives (a type whose nodes all left keeps capacity 0), so the
reservations it holds keep their vectors.

The plans live in one `reservation.system.ReservationSystem` (the same handlers as `plan replay`
answer every request); `configure_plans` keeps its set of plans equal to the reservable queues.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from apportion.errors import InputError
from apportion.lean_dataclass import dataclass
from apportion.reservation.agents import AGENT_NAMES, make_agent
from apportion.reservation.allocation import ReservationAllocation
from apportion.reservation.definition import YARN_DIMS
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import make_policy
from apportion.reservation.replanner import SimpleCapacityReplanner
from apportion.reservation.stepfn import Res
from apportion.reservation.system import ReservationSystem
from apportion.resources import CPU, MEMORY, PODS, Resource
from apportion.service.store import SqlStore

MIB = 1024 * 1024
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


#: a reservable queue's plan as the tree asks for it: settings, capacity, dimensions
PlanShape = tuple[PlanSettings, Res, tuple[str, ...]]


def cluster_dims(nodes: list[Resource]) -> tuple[str, ...]:
    """The plan dimensions of a cluster: memory-mb, vcores, then every other resource type some node
    has (pods excepted), sorted by name."""
    names: set[str] = set()
    for a in nodes:
        names.update(n for n in a.scalars if n != PODS and a.get(n) > 0)
    return (*YARN_DIMS, *sorted(names))


def to_plan_vector(r: Resource, dims: tuple[str, ...]) -> Res:
    """A Volcano resource in a plan's units, truncated: memory in MB, whole vCores, whole units of every
    other type (Volcano holds them in milli-units); a type `r` lacks is 0."""
    out = [int(r.get(MEMORY) // MIB), int(r.get(CPU) // 1000)]
    out.extend(int(r.get(n) // 1000) for n in dims[2:])
    return tuple(out)


def vector_json(v: Res, dims: tuple[str, ...]) -> dict[str, str]:
    """A plan vector as a Volcano queue's resource list (`cpu`, `memory`, and every other type of the
    plan that is not 0); a two-type vector gives exactly the `{cpu, memory}` of before."""
    out = {"cpu": str(v[1]), "memory": f"{v[0]}Mi"}
    for name, x in zip(dims[2:], v[2:]):
        if x:
            out[name] = str(x)
    return out


def reproject(v: Res, old: tuple[str, ...], new: tuple[str, ...]) -> Res:
    """A vector of dimensions `old` in dimensions `new` (a superset: plans only gain types)."""
    named = dict(zip(old, v))
    return tuple(named.get(n, 0) for n in new)


def _reprojected(r: ReservationAllocation, old: tuple[str, ...], new: tuple[str, ...]) -> ReservationAllocation:
    """A held reservation moved to a plan that gained resource types (the new ones are 0)."""
    if old == new:
        return r
    stored = r.stored()
    d = stored.definition
    if d is not None:
        d = replace(d, stages=tuple(replace(s, capability=reproject(s.capability, old, new)) for s in d.stages))
    return ReservationAllocation.from_stored(replace(
        stored, definition=d, intervals=tuple((a, b, reproject(v, old, new)) for a, b, v in stored.intervals)))


def new_plan(name: str, wanted: PlanSettings, capacity: Res, dims: tuple[str, ...], now_ms: int
             ) -> tuple[InMemoryPlan, SimpleCapacityReplanner | None]:
    """An empty plan of queue `name` with these settings, and its replanner (None: none)."""
    plan = InMemoryPlan(name, capacity, step=wanted.step_ms, policy=make_policy(json.loads(wanted.policy)),
                        now=now_ms, move_on_expiry=wanted.move_on_expiry, dims=dims)
    replanner = SimpleCapacityReplanner(wanted.replanner_ms) if wanted.replanner_ms is not None else None
    return plan, replanner


def configure_plans(system: ReservationSystem, settings: dict[str, PlanSettings],
                    queues: dict[str, PlanShape], store: SqlStore | None, now_ms: int) -> None:
    """Make the system's plans follow the reservable queues: a new one is created and recovers its
    stored reservations, one whose settings changed, or which gained a resource type, is re-created
    with the same reservations, one no longer reservable is dropped (its reservations stay stored);
    every plan gets its capacity."""
    for name in list(system.plans):
        if name not in queues:
            del system.plans[name]
            settings.pop(name, None)
    for name, (wanted, capacity, dims) in sorted(queues.items()):
        entry = system.plans.get(name)
        # a plan keeps every type it has, and a new one gets every type of its stored reservations:
        # the reservations may hold some of them
        held_types = set(entry.plan.dims) if entry is not None else (
            store.reservation_types(name) if store is not None else set())
        kept = (*dims, *sorted(held_types - set(dims)))
        capacity, dims = reproject(capacity, dims, kept), kept
        if entry is not None and settings.get(name) == wanted and entry.plan.dims == dims:
            entry.plan.set_capacity(capacity)
            continue
        held = list(entry.plan.reservations.values()) if entry is not None else None
        old_dims = entry.plan.dims if entry is not None else dims
        if entry is not None:
            del system.plans[name]
        plan, replanner = new_plan(name, wanted, capacity, dims, now_ms)
        system.add_plan(plan, make_agent(wanted.agent), replanner)
        settings[name] = wanted
        if store is not None:
            store.dims[name] = dims
        if held is not None:
            for r in sorted(held, key=lambda r: r.id):
                plan.add_reservation(_reprojected(r, old_dims, dims), is_recovering=True)
        elif store is not None:
            plan.recover(store.reservations(name))
