"""YARN's RM REST API at the root, as Hadoop's RMWebServices answers it.

`/ws/v1/cluster` and `/info` (ClusterInfo), `/scheduler` (the capacity tree as CapacityScheduler's
info, mapped from the last session's queue report), and the five reservation endpoints, answered by
the same handlers as `plan replay` (reservation/api.py). ACLs, when on, are checked before a handler
runs: submit needs `acl_submit_reservations`, list `acl_list_reservations`, update and delete
`acl_administer_reservations` or (for the reservation's owner) `acl_submit_reservations`, all on
the reservable queue, or `acl_administer_reservations`.

The four reservation writes (new-reservation, submit, update, delete) are the service's hot path
(issue 18's target: 300 submissions/s). They are plain Starlette routes (`write_routes`, mounted
first on the app's router), not FastAPI path operations: they take the `Request` and parse it
themselves, so no dependency solving or response validation runs for them. Order, as RMWebServices
has it (`initForWritableEndpoints` runs before the body is converted): the caller is authenticated
first, so a request without one gets 401 before its body is read (before a 413 or a 400); then the
body; then, inside the writer's job, the queue ACL (403) before the handler validates the request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.routing import Route

from apportion import __version__
from apportion.reservation.api import UNAUTHENTICATED, error
from apportion.reservation.definition import BadRequest, ReservationId
from apportion.service.auth import Refusal, Refused
from apportion.service.common import caller, forbidden, json_response, parse_json_body, read_body
from apportion.service.core import Service
from apportion.service.scheduler_info import scheduler_info

router = APIRouter()

#: the YARN reservation writes, by the last part of their path
WRITES = {"new-reservation": "new_reservation", "submit": "submit", "update": "update", "delete": "delete"}


def _svc(request: Request) -> Service:
    return request.app.state.service


def cluster_info(svc: Service) -> dict[str, Any]:
    """ClusterInfo as RMWebServices reports it."""
    return {"clusterInfo": {
        "id": svc.start_ms, "startedOn": svc.start_ms, "state": "STARTED", "haState": "ACTIVE",
        "rmStateStoreName": "apportion SQL store", "resourceManagerVersion": __version__,
        "resourceManagerBuildVersion": f"apportion {__version__}", "resourceManagerVersionBuiltOn": "",
        "hadoopVersion": __version__, "hadoopBuildVersion": f"apportion {__version__}", "hadoopVersionBuiltOn": "",
        "haZooKeeperConnectionState": "ResourceManager HA is not enabled.",
    }}


@router.get("/ws/v1/cluster")
@router.get("/ws/v1/cluster/")
@router.get("/ws/v1/cluster/info")
async def get_cluster_info(request: Request) -> Response:
    """GET /ws/v1/cluster and /ws/v1/cluster/info."""
    return json_response(200, cluster_info(_svc(request)))


@router.get("/ws/v1/cluster/scheduler")
async def get_scheduler(request: Request) -> Response:
    """GET /ws/v1/cluster/scheduler: the capacity tree as CapacityScheduler info."""
    svc = _svc(request)
    return json_response(200, await asyncio.to_thread(svc.read, lambda: scheduler_info(svc)))


def _reservation_refusal(svc: Service, op: str, user: str, body: Any) -> Refusal | None:
    """The ACL check of one reservation call (None: allowed, or ACLs off, or left to the handler)."""
    acls = svc.acls
    if not acls.enabled:
        return None
    snap = svc.queue_meta()
    if op == "submit":
        q = body.get("queue") if isinstance(body, dict) else None
        entry = svc.reservations.entry(q) if isinstance(q, str) and q else None
        if entry is None:
            return None  # the handler answers 400 for a missing or plan-less queue
        return acls.check(snap, user, entry.plan.queue, "SUBMIT_RESERVATIONS", "acl_submit_reservations",
                          "acl_administer_reservations")
    if op == "list":
        entry = svc.reservations.entry(str(body.get("queue", "default")))
        if entry is None:
            return None
        return acls.check(snap, user, entry.plan.queue, "LIST_RESERVATIONS", "acl_list_reservations",
                          "acl_administer_reservations")
    if op in ("update", "delete"):
        rid_s = body.get("reservation-id") if isinstance(body, dict) else None
        try:
            rid = ReservationId.parse(rid_s) if isinstance(rid_s, str) else None
        except BadRequest:
            return None
        q = svc.reservations.queue_of.get(rid) if rid is not None else None
        if q is None:
            return None
        plan = svc.reservations.plan_for(q)
        alloc = plan.get(rid) if plan is not None else None
        if alloc is not None and alloc.user == user:
            return acls.check(snap, user, q, f"{op.upper()}_RESERVATIONS", "acl_submit_reservations",
                              "acl_administer_reservations")
        return acls.check(snap, user, q, f"{op.upper()}_RESERVATIONS", "acl_administer_reservations")
    return None


async def _reservation(request: Request, op: str, body: Any, user: str | None) -> Response:
    svc = _svc(request)
    check = (lambda: _reservation_refusal(svc, op, user, body)) if user is not None else None
    try:
        status, answer = await svc.reservation(op, user, body, check)
    except Refused as e:
        svc.metrics.reservation_request(op, 403)
        return forbidden(e.refusal, yarn=True)
    svc.metrics.reservation_request(op, status)
    return json_response(status, answer)


@router.get("/ws/v1/cluster/reservation/list")
async def list_reservations(request: Request) -> Response:
    """GET list with exactly the query parameters given (user.name is the caller, not a filter)."""
    query = {k: v for k, v in request.query_params.items() if k != "user.name"}
    return await _reservation(request, "list", query, caller(request))


async def _write(request: Request, op: str) -> Response:
    """One reservation write: 401 before the body is read, the body (413 over 1 MiB, raised as
    BodyTooLarge to the app's handler), then the handler on the writer with the ACL check first."""
    user = caller(request)
    if user is None:
        _svc(request).metrics.reservation_request(op, 401)
        return json_response(*error(401, UNAUTHENTICATED))
    raw = await read_body(request)
    # new-reservation has no body: YARN ignores one (it is still read, so that over 1 MiB is 413)
    return await _reservation(request, op, None if op == "new_reservation" else parse_json_body(raw), user)


def _endpoint(op: str) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return await _write(request, op)

    endpoint.__doc__ = f"POST /ws/v1/cluster/reservation/{op.replace('_', '-')}."
    return endpoint


def write_routes() -> list[Route]:
    """The four reservation writes as Starlette routes (POST only: another method gets 405 from the
    router, answered with YARN's error body by the app's handler)."""
    return [Route(f"/ws/v1/cluster/reservation/{path}", _endpoint(op), methods=["POST"], name=f"reservation-{path}")
            for path, op in WRITES.items()]
