"""Reservation definitions (YARN's RDL), reservation ids, and their REST JSON (contract §5.2).

A definition has an arrival, a deadline, a name, a priority, a recurrence expression and a list
of stages (`ReservationRequest`: capability, num-containers, min-concurrency = gang size,
duration) tied together by an interpreter: R_ANY (0), R_ALL (1), R_ORDER (2), R_ORDER_NO_GAP (3).

A capability is a vector in the order of the plan's dimensions (`dims`, memory-mb and vcores
first). In JSON it is YARN's ResourceInfo: `memory` (MB) and `vCores`, and for any other resource
type a `resourceInformations.resourceInformation` list of `{name, value, units}`, YARN's name
`yarn.io/gpu` standing for the plan's `nvidia.com/gpu` (docs/reservation.md).
"""

from __future__ import annotations

import re
from typing import Any

from apportion.errors import ApportionError
from apportion.lean_dataclass import dataclass
from apportion.reservation.resmath import YARN_DIMS, Res

R_ANY, R_ALL, R_ORDER, R_ORDER_NO_GAP = 0, 1, 2, 3
INTERPRETER_NAMES = {R_ANY: "R_ANY", R_ALL: "R_ALL", R_ORDER: "R_ORDER", R_ORDER_NO_GAP: "R_ORDER_NO_GAP"}

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1
_JAVA_LONG = re.compile(r"[+-]?[0-9]+\Z")


class BadRequest(ApportionError):
    """A request the REST layer answers with an error status (400 unless told otherwise)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def parse_java_long(text: str) -> int:
    """Long.parseLong: optional sign and decimal digits, 64-bit; else NumberFormatException's text."""
    if not _JAVA_LONG.match(text):
        raise ValueError(f'For input string: "{text}"')
    v = int(text)
    if not _LONG_MIN <= v <= _LONG_MAX:
        raise ValueError(f'For input string: "{text}"')
    return v


@dataclass(frozen=True, order=True)
class ReservationId:
    """`reservation_<clusterTimestamp>_<sequence>`; the sequence prints with at least 4 digits."""

    cluster_timestamp: int
    seq: int

    def __str__(self) -> str:
        if self.seq < 0:
            return f"reservation_{self.cluster_timestamp}_-{abs(self.seq):04d}"
        return f"reservation_{self.cluster_timestamp}_{self.seq:04d}"

    @staticmethod
    def parse(text: str) -> ReservationId:
        """ReservationId.parseReservationId, with YARN's messages and REST statuses (404/400)."""
        if not text.startswith("reservation_"):
            raise BadRequest(f"The specified reservation id is invalid: {text}", 404)
        parts = text.split("_")
        while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
            parts.pop()
        if len(parts) != 3:
            raise BadRequest(f"The specified reservation id is not parseable: {text}", 404)
        try:
            return ReservationId(parse_java_long(parts[1]), parse_java_long(parts[2]))
        except ValueError as e:
            raise BadRequest(str(e)) from None


#: YARN resource-type names that differ from the plan's (Kubernetes) names, REST name -> plan name
YARN_TO_PLAN = {"yarn.io/gpu": "nvidia.com/gpu"}
#: the other way round
PLAN_TO_YARN = {v: k for k, v in YARN_TO_PLAN.items()}
#: the units YARN prints for a resource type (memory-mb in MiB, every other one a plain count)
_UNITS = {"memory-mb": "Mi"}


def resource_json(r: Res, dims: tuple[str, ...] = YARN_DIMS) -> dict[str, Any]:
    """A resource as YARN's ResourceInfo JSON: `memory` and `vCores`, and, when the plan has other
    resource types, every type in `resourceInformations` as YARN 3 lists them."""
    out: dict[str, Any] = {"memory": r[0], "vCores": r[1]}
    if len(r) > 2:
        out["resourceInformations"] = {"resourceInformation": [
            {"name": PLAN_TO_YARN.get(name, name), "value": v, "units": _UNITS.get(name, "")}
            for name, v in zip(dims, r)
        ]}
    return out


@dataclass(frozen=True)
class Stage:
    """One ReservationRequest: num_containers of capability, in gangs of concurrency, for duration ms."""

    capability: Res
    num_containers: int
    concurrency: int
    duration: int

    def to_json(self, dims: tuple[str, ...] = YARN_DIMS) -> dict[str, Any]:
        """The stage as REST JSON (a `reservation-request` entry); `dims` names the capability's components."""
        return {
            "capability": resource_json(self.capability, dims),
            "num-containers": self.num_containers,
            "min-concurrency": self.concurrency,
            "duration": self.duration,
        }


@dataclass(frozen=True)
class ReservationDefinition:
    """YARN's ReservationDefinition. Equality is the contract's "identical" (§5.6)."""

    arrival: int
    deadline: int
    stages: tuple[Stage, ...]
    interpreter: int = R_ANY
    name: str = ""
    priority: int = 0
    recurrence: str = "0"

    def period(self) -> int:
        """The recurrence period in ms (0 when absent or not a positive long)."""
        try:
            p = parse_java_long(self.recurrence.strip()) if self.recurrence else 0
        except ValueError:
            return 0
        return max(p, 0)

    def to_json(self, dims: tuple[str, ...] = YARN_DIMS) -> dict[str, Any]:
        """ReservationDefinitionInfo as the list endpoint reports it (priority always 0, §5.3);
        `dims` names the components of the capabilities (the plan's dimensions)."""
        return {
            "arrival": self.arrival,
            "deadline": self.deadline,
            "reservation-name": self.name,
            "priority": 0,
            "recurrence-expression": self.recurrence,
            "reservation-requests": {
                "reservation-request-interpreter": self.interpreter,
                "reservation-request": [s.to_json(dims) for s in self.stages],
            },
        }


# -- REST JSON in -------------------------------------------------------------------------------


def _int(v: Any, field: str) -> int:
    """A JSON integer, or a numeric string as Jersey accepts it."""
    if isinstance(v, bool):
        raise BadRequest(f"Invalid value for {field}: expected an integer, got {str(v).lower()}")
    if isinstance(v, int):
        if not _LONG_MIN <= v <= _LONG_MAX:
            raise BadRequest(f"Invalid value for {field}: {v} is out of range")
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        try:
            return parse_java_long(v.strip())
        except ValueError:
            pass
    raise BadRequest(f"Invalid value for {field}: expected an integer, got {_show(v)}")


def _show(v: Any) -> str:
    import json

    try:
        s = json.dumps(v)
    except (TypeError, ValueError):
        s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def parse_resource(v: Any, field: str, dims: tuple[str, ...] = YARN_DIMS) -> Res:
    """`{"memory": MB, "vCores": n, "resourceInformations": ...}` as a vector in the order of `dims`.

    A missing component is 0, as YARN's ResourceInfo defaults it; a `resourceInformation` entry
    sets the type it names (memory-mb and vcores included, as YARN's ResourceInfo.getResource
    does). A type the plan does not have is refused unless its value is 0.
    """
    if not isinstance(v, dict):
        raise BadRequest(f"Invalid value for {field}: expected an object with memory and vCores, got {_show(v)}")
    out = [0] * len(dims)
    out[0] = _int(v.get("memory", 0), f"{field}.memory")
    out[1] = _int(v.get("vCores", 0), f"{field}.vCores")
    infos = v.get("resourceInformations")
    if infos is not None:
        _parse_informations(infos, f"{field}.resourceInformations", dims, out)
    return tuple(out)


def _parse_informations(infos: Any, field: str, dims: tuple[str, ...], out: list[int]) -> None:
    """YARN's ResourceInformationsInfo: `{"resourceInformation": [{name, value, units}, ...]}` (one
    entry without the list, as Jersey's mapped notation allows), each setting its type in out."""
    if not isinstance(infos, dict):
        raise BadRequest(f"Invalid value for {field}: expected an object with resourceInformation, got {_show(infos)}")
    entries = infos.get("resourceInformation", [])
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list):
        raise BadRequest(f"Invalid value for {field}.resourceInformation: expected a list, got {_show(entries)}")
    for i, entry in enumerate(entries):
        ef = f"{field}.resourceInformation[{i}]"
        if not isinstance(entry, dict):
            raise BadRequest(f"Invalid value for {ef}: expected an object with name and value, got {_show(entry)}")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise BadRequest(f"Invalid value for {ef}.name: expected a resource type name, got {_show(name)}")
        value = _int(entry.get("value", 0), f"{ef}.value")
        plan_name = YARN_TO_PLAN.get(name, name)
        units = entry.get("units", "")
        if units not in ("", None, _UNITS.get(plan_name, "")):
            raise BadRequest(
                f"Invalid value for {ef}.units: {_show(units)}; {name} is given in "
                f"{_UNITS.get(plan_name) or 'plain units'} ('' also accepted)"
            )
        if plan_name not in dims:
            if value == 0:
                continue
            known = ", ".join(PLAN_TO_YARN.get(d, d) for d in dims)
            raise BadRequest(f"Invalid value for {ef}.name: unknown resource type {name} (the plan has {known})")
        out[dims.index(plan_name)] = value


def _check_capability(cap: Res, field: str, dims: tuple[str, ...] = YARN_DIMS) -> None:
    """A stage asks for something: no negative component, and not nothing at all.

    YARN takes a negative capability as given, so a stage of negative size frees plan capacity
    that other reservations then take, and the plan over-commits once it is gone; an all-zero
    capability reserves nothing however it is placed. Both answer 400 naming the field
    (docs/semantics.md, YARN deviations).
    """
    names = ("memory", "vCores") + tuple(PLAN_TO_YARN.get(d, d) for d in dims[2:])
    for name, value in zip(names, cap):
        if value < 0:
            raise BadRequest(f"Invalid value for {field}.{name}: {value} is negative; a capability must not be")
    if all(value == 0 for value in cap):
        raise BadRequest(f"Invalid value for {field}: every component is 0; a stage must ask for some resource")


def parse_definition(
    v: Any, field: str = "reservation-definition", dims: tuple[str, ...] = YARN_DIMS
) -> ReservationDefinition:
    """The REST `reservation-definition` object (contract §5.2), capabilities in the order of
    `dims` (the plan's dimensions); BadRequest naming the field."""
    if not isinstance(v, dict):
        raise BadRequest(f"Invalid value for {field}: expected an object, got {_show(v)}")
    arrival = _int(v.get("arrival", 0), f"{field}.arrival")
    deadline = _int(v.get("deadline", 0), f"{field}.deadline")
    name = v.get("reservation-name", "")
    if name is None:
        name = ""
    if not isinstance(name, str):
        raise BadRequest(f"Invalid value for {field}.reservation-name: expected a string, got {_show(name)}")
    priority = _int(v.get("priority", 0), f"{field}.priority")
    rec = v.get("recurrence-expression", "0")
    if rec is None:
        rec = "0"
    if isinstance(rec, bool) or not isinstance(rec, (str, int)):
        raise BadRequest(f"Invalid value for {field}.recurrence-expression: expected a string, got {_show(rec)}")
    rec = str(rec)
    reqs = v.get("reservation-requests")
    none_msg = "The ReservationDefinition should contain at least one ReservationRequest"
    if reqs is None:
        raise BadRequest(none_msg)
    if not isinstance(reqs, dict):
        raise BadRequest(f"Invalid value for {field}.reservation-requests: expected an object, got {_show(reqs)}")
    interp = _int(reqs.get("reservation-request-interpreter", R_ANY),
                  f"{field}.reservation-requests.reservation-request-interpreter")
    if interp not in INTERPRETER_NAMES:
        raise BadRequest(
            f"Invalid value for {field}.reservation-requests.reservation-request-interpreter: {interp} "
            "(expected 0 R_ANY, 1 R_ALL, 2 R_ORDER or 3 R_ORDER_NO_GAP)"
        )
    stages_v = reqs.get("reservation-request")
    if stages_v is None:
        raise BadRequest(none_msg)
    if isinstance(stages_v, dict):
        stages_v = [stages_v]  # Jersey's mapped notation: one element without the list
    if not isinstance(stages_v, list):
        raise BadRequest(
            f"Invalid value for {field}.reservation-requests.reservation-request: expected a list, got {_show(stages_v)}"
        )
    if not stages_v:
        raise BadRequest(none_msg)
    stages = []
    for i, sv in enumerate(stages_v):
        sf = f"{field}.reservation-requests.reservation-request[{i}]"
        if not isinstance(sv, dict):
            raise BadRequest(f"Invalid value for {sf}: expected an object, got {_show(sv)}")
        if sv.get("capability") is None:
            raise BadRequest(f"Missing {sf}.capability: every reservation request needs a capability")
        capability = parse_resource(sv["capability"], f"{sf}.capability", dims)
        _check_capability(capability, f"{sf}.capability", dims)
        stages.append(
            Stage(
                capability=capability,
                num_containers=_int(sv.get("num-containers", 0), f"{sf}.num-containers"),
                concurrency=_int(sv.get("min-concurrency", 0), f"{sf}.min-concurrency"),
                duration=_int(sv.get("duration", 0), f"{sf}.duration"),
            )
        )
    return ReservationDefinition(
        arrival=arrival,
        deadline=deadline,
        stages=tuple(stages),
        interpreter=interp,
        name=name,
        priority=priority,
        recurrence=rec,
    )
