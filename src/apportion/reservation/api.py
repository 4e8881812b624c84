"""The RM reservation REST API as request handlers (contract §5): `(status, body)` in, YARN's JSON out.

`RestHandlers` is mixed into the ReservationSystem (`apportion.reservation.system`), which holds
the plans with their agents, replanners and plan followers, the id sequence and the id -> queue
record of accepted submissions. Its five handlers (`new_reservation`, `submit`,
`update`, `delete`, `list`) take the authenticated user (None = unauthenticated) and the request
body or query parameters exactly as received, and return the HTTP status and the JSON body. The
replay and the HTTP service share them, so both answer identically.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol

from apportion.reservation.agents import ReservationAgent
from apportion.reservation.definition import (
    BadRequest,
    ReservationDefinition,
    ReservationId,
    parse_definition,
    parse_java_long,
    resource_json,
)
from apportion.reservation.exceptions import PlanIllegalArgument, PlanningException
from apportion.reservation.follower import PlanFollower
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.resmath import LONG_MAX, YARN_DIMS, Res
from apportion.reservation.validate import ValidationError, validate_definition

Response = tuple[int, Any]

UNAUTHENTICATED = "Unable to obtain user name, user not authenticated"
NO_QUEUE = "The queue is not specified. Please try again with a valid reservable queue."


class PlanEntry(Protocol):
    """What the handlers read of a reservable queue's entry. The system's `PlanEntry` dataclass
    implements it; naming it here keeps the handlers from importing the system they are mixed into."""

    @property
    def plan(self) -> InMemoryPlan:
        """The queue's plan."""
        ...

    @property
    def agent(self) -> ReservationAgent | None:
        """The agent that places submissions and updates (None: none configured)."""
        ...

    @property
    def follower(self) -> PlanFollower:
        """The plan follower, stepped before a submission that starts within the plan step."""
        ...

    @property
    def cluster(self) -> tuple[Res, float] | None:
        """(cluster resource, the plan queue's absolute capacity), when the follower resizes the plan."""
        ...


def error(status: int, message: str) -> Response:
    """YARN's RemoteException body for an error status."""
    if status == 401:
        name, java = "AuthorizationException", "org.apache.hadoop.security.authorize.AuthorizationException"
    elif status == 404:
        name, java = "IOException", "java.io.IOException"
    else:
        name, java = "BadRequestException", "org.apache.hadoop.yarn.webapp.BadRequestException"
    return status, {"RemoteException": {"exception": name, "message": message, "javaClassName": java}}


def res_json(r: Res, dims: tuple[str, ...] = YARN_DIMS) -> dict[str, Any]:
    """A resource as YARN's REST JSON `{"memory", "vCores"}` (with `resourceInformations` when the
    plan has other resource types; `dims` names the components)."""
    return resource_json(r, dims)


def reservation_info(
    r: ReservationAllocation, include_allocations: bool, dims: tuple[str, ...] = YARN_DIMS
) -> dict[str, Any]:
    """ReservationInfo, one entry of the list reply (contract §5.3); `dims`: the plan's dimensions."""
    out: dict[str, Any] = {
        "reservation-id": str(r.id),
        "user": r.user,
        "acceptance-time": r.acceptance_time,
    }
    if include_allocations:
        out["resource-allocations"] = [
            {"resource": res_json(v, dims), "startTime": a, "endTime": b} for a, b, v in r.intervals
        ]
    else:
        out["resource-allocations"] = []
    if r.definition is not None:
        out["reservation-definition"] = r.definition.to_json(dims)
    return out


def _endpoint(handler: Callable[..., Response]) -> Callable[..., Response]:
    """The preamble every endpoint shares: 401 without an authenticated user, then the handler,
    with the request errors it raises (BadRequest, ValidationError) answered as YARN answers them."""

    @functools.wraps(handler)
    def run(self: RestHandlers, user: str | None, *args: Any) -> Response:
        if user is None:
            return error(401, UNAUTHENTICATED)
        try:
            return handler(self, user, *args)
        except BadRequest as e:
            return error(e.status, e.message)
        except ValidationError as e:
            return error(400, e.message)

    return run


class RestHandlers:
    """YARN's five reservation endpoints over a reservation system's state.

    Mixed into `apportion.reservation.system.ReservationSystem`, which provides `entry(queue)`
    (the plan of a reservable queue with its agent and follower), `new_reservation_id()` and
    `remember(rid, queue)` (the id -> queue record)."""

    queue_of: dict[ReservationId, str]

    def entry(self, queue: str) -> PlanEntry | None:  # pragma: no cover - provided by the system
        """The plan entry of a reservable queue (the system's)."""
        raise NotImplementedError

    def new_reservation_id(self) -> ReservationId:  # pragma: no cover - provided by the system
        """The next reservation id (the system's)."""
        raise NotImplementedError

    def remember(self, rid: ReservationId, queue: str) -> None:  # pragma: no cover - provided by the system
        """Record the queue of an accepted submission (the system's)."""
        raise NotImplementedError

    # -- helpers ------------------------------------------------------------------------------
    def plan_for(self, queue: str) -> InMemoryPlan | None:
        """The plan of a reservable queue, by its short name or `root.<name>`; None for any other."""
        e = self.entry(queue)
        return e.plan if e is not None else None

    @staticmethod
    def _not_managed(queue: str) -> str:
        return (
            f"The specified queue: {queue} is not managed by reservation system. "
            "Please try again with a valid reservable queue."
        )

    @staticmethod
    def _body(body: Any) -> dict[str, Any]:
        if body is None:
            raise BadRequest("Missing request body: expected a JSON object")
        if not isinstance(body, dict):
            raise BadRequest("Invalid request body: expected a JSON object")
        return body

    @staticmethod
    def _opt_str(body: dict[str, Any], key: str) -> str | None:
        v = body.get(key)
        if v is None:
            return None
        if not isinstance(v, str):
            raise BadRequest(f"Invalid value for {key}: expected a string")
        return v

    def _definition(self, body: dict[str, Any], plan: InMemoryPlan | None) -> ReservationDefinition:
        """The body's definition, capabilities in the order of the plan's dimensions (YARN's two
        when the request names no plan: its own checks answer that later, as before)."""
        if body.get("reservation-definition") is None:
            raise BadRequest("Input ReservationDefinition should not be null")
        dims = plan.dims if plan is not None else YARN_DIMS
        return parse_definition(body["reservation-definition"], dims=dims)

    def _plan_named(self, queue: Any) -> InMemoryPlan | None:
        """The plan a body's queue names, if any (no error: the body's checks come in YARN's order)."""
        return self.plan_for(queue) if isinstance(queue, str) and queue else None

    def _plan_of(self, rid_s: Any) -> InMemoryPlan | None:
        """The plan a body's reservation id went to, if any (no error, as `_plan_named`)."""
        if not isinstance(rid_s, str):
            return None
        try:
            queue = self.queue_of.get(ReservationId.parse(rid_s))
        except BadRequest:
            return None
        return self.plan_for(queue) if queue is not None else None

    def _managed(self, queue: str) -> InMemoryPlan:
        """The plan of queue, or the 400 for a queue without one."""
        plan = self.plan_for(queue)
        if plan is None:
            raise BadRequest(self._not_managed(queue))
        return plan

    def _known(self, rid: ReservationId) -> InMemoryPlan:
        """The plan an accepted submission went to (update, delete), or the 400 for an unknown id."""
        queue = self.queue_of.get(rid)
        if queue is None:
            raise BadRequest(
                f"The specified reservation with ID: {rid} is unknown. Please try again with a valid reservation."
            )
        return self._managed(queue)

    # -- handlers -----------------------------------------------------------------------------
    # Each endpoint runs behind `_endpoint`: 401 without a user, and the request's own errors
    # (BadRequest from the body conversion and the id/queue checks, ValidationError from the
    # definition checks) as their status and message. Planning errors are answered in place.
    @_endpoint
    def new_reservation(self, user: str) -> Response:
        """POST /reservation/new-reservation."""
        return 200, {"reservation-id": str(self.new_reservation_id())}

    @_endpoint
    def submit(self, user: str, body: Any) -> Response:
        """POST /reservation/submit (202 on success, no content)."""
        b = self._body(body)
        definition = self._definition(b, self._plan_named(b.get("queue")))
        queue = self._opt_str(b, "queue")
        rid_s = self._opt_str(b, "reservation-id")
        rid = ReservationId.parse(rid_s) if rid_s is not None else None
        if rid is None:
            raise BadRequest(
                "Reservation id cannot be null. Please try again specifying  a valid reservation id by "
                "creating a new reservation id."
            )
        if not queue:
            raise BadRequest(NO_QUEUE)
        return self.submit_definition(user, queue, rid, definition)

    @_endpoint
    def submit_definition(self, user: str, queue: str, rid: ReservationId, definition: ReservationDefinition) -> Response:
        """`submit` of a definition already read (capabilities in the plan's dimensions): what an
        embedder that holds definitions, not JSON bodies, calls (the simulator)."""
        plan = self._managed(queue)
        validate_definition(plan, definition, plan.now)
        existing = plan.get(rid)
        if existing is not None:
            if existing.definition == definition:
                return 202, None
            return error(
                400,
                f"Reservation allocation already exists with the reservation id {rid}, but a different "
                "reservation definition was provided. Please try again with a new reservation id, or consider "
                "updating the reservation instead.",
            )
        entry = self.entry(plan.queue)
        assert entry is not None
        failed = self._ask_agent(entry, lambda agent: agent.create(plan, rid, user, definition),
                                 f"Unable to create reservation: {rid}")
        if failed is not None:
            return failed
        self.remember(rid, plan.queue)
        if entry.cluster is not None and definition.arrival - plan.now < plan.step:
            entry.follower.step(plan.now)
        return 202, None

    @_endpoint
    def update(self, user: str, body: Any) -> Response:
        """POST /reservation/update (200 {} on success)."""
        b = self._body(body)
        definition = self._definition(b, self._plan_of(b.get("reservation-id")))
        rid_s = self._opt_str(b, "reservation-id")
        if rid_s is None:
            raise BadRequest("Update operations must specify an existing ReservaitonId")
        rid = ReservationId.parse(rid_s)
        plan = self._known(rid)
        validate_definition(plan, definition, plan.now)
        entry = self.entry(plan.queue)
        assert entry is not None
        failed = self._ask_agent(entry, lambda agent: agent.update(plan, rid, user, definition),
                                 f"Unable to update reservation: {rid}")
        return failed if failed is not None else (200, {})

    @staticmethod
    def _ask_agent(entry: PlanEntry, call: Callable[[ReservationAgent], bool], failure: str) -> Response | None:
        """Let the plan's agent create or update; None on success, else YARN's 400 answer."""
        if entry.agent is None:
            return error(400, f"No reservation agent is configured for queue {entry.plan.queue}.")
        try:
            ok = call(entry.agent)
        except PlanningException as e:
            return error(400, e.java_string())
        except PlanIllegalArgument as e:
            return error(400, e.message)
        return None if ok else error(400, failure)

    @_endpoint
    def delete(self, user: str, body: Any) -> Response:
        """POST /reservation/delete (200 {} on success)."""
        b = self._body(body)
        rid_s = self._opt_str(b, "reservation-id")
        rid = ReservationId.parse(rid_s) if rid_s is not None else None
        if rid is None:
            raise BadRequest("Missing reservation id. Please try again by specifying a reservation id.")
        plan = self._known(rid)
        try:
            plan.delete_reservation(rid)
        except PlanIllegalArgument as e:
            return error(400, e.message)
        return 200, {}

    @_endpoint
    def list(self, user: str, query: dict[str, str]) -> Response:
        """GET /reservation/list with exactly the given query parameters."""
        start = self._time_param(query, "start-time", 0)
        end = self._time_param(query, "end-time", -1)
        start = max(start, 0)
        if end < 0:
            end = LONG_MAX
        include = str(query.get("include-resource-allocations", "false")).lower() == "true"
        if end < start:
            raise BadRequest("The specified end time must be greater than the specified start time.")
        queue = query.get("queue", "default")
        if not queue:
            raise BadRequest(NO_QUEUE)
        plan = self._managed(queue)
        rid_s = query.get("reservation-id", "")
        rid = ReservationId.parse(rid_s) if rid_s else None
        found = plan.get_reservations(rid, (start, end), None)
        return 200, {"reservations": [reservation_info(r, include, plan.dims) for r in found]}

    @staticmethod
    def _time_param(query: dict[str, str], key: str, default: int) -> int:
        if key not in query:
            return default
        try:
            return parse_java_long(str(query[key]).strip())
        except ValueError:
            raise BadRequest(f"Invalid value for query parameter {key}: {query[key]!r} is not a number") from None
