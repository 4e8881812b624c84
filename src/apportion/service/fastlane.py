"""YARN's reservation writes (new-reservation, submit, update, delete) answered in front of FastAPI.

These four POSTs are the service's hot path (issue 18's target: 300 submissions per second from 50
clients). Through FastAPI's middleware, routing and dependency solving a small request cost about
130 us of the one core the server's Python has, as much as the rest of a new-reservation; this plain
ASGI layer answers them in a few microseconds and passes every other request on to the application.
It does what the application would do for them: the caller as `common.caller` names it, the
`hadoop.auth` cookie for a `?user.name=` caller, 413 over 1 MiB, YARN's `RemoteException` bodies,
the request metric, and a one-line 500 (logged, no stack trace) for an unexpected error.

Order, as RMWebServices has it (`initForWritableEndpoints` runs before the body is converted): the
caller is authenticated first, so a request without one gets 401 before its body is read; then the
body; then, inside the writer's job, the queue ACL (403) before the handler validates the request.
"""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import parse_qsl

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from apportion.reservation.api import UNAUTHENTICATED, error
from apportion.service.auth import COOKIE, CookieSigner, Refused
from apportion.service.common import INVALID, MAX_BODY, caller_of, remote_exception_body
from apportion.service.core import Service
from apportion.service.yarn import _reservation_refusal as reservation_refusal

log = logging.getLogger(__name__)

#: the YARN reservation writes this layer answers, by path
OPS = {
    "/ws/v1/cluster/reservation/new-reservation": "new_reservation",
    "/ws/v1/cluster/reservation/submit": "submit",
    "/ws/v1/cluster/reservation/update": "update",
    "/ws/v1/cluster/reservation/delete": "delete",
}

_JSON = (b"content-type", b"application/json")


class _TooLarge(Exception):
    pass


async def _read_body(scope: Scope, receive: Receive) -> bytes:
    """The whole body, refusing more than MAX_BODY bytes (by Content-Length, or as it arrives)."""
    for name, value in scope["headers"]:
        if name == b"content-length" and value.isdigit() and int(value) > MAX_BODY:
            raise _TooLarge()
    chunks: list[bytes] = []
    total = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client went away: what arrived is all there is
        chunk = message.get("body", b"")
        total += len(chunk)
        if total > MAX_BODY:
            raise _TooLarge()
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _parse(raw: bytes) -> Any:
    if not raw.strip():
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return INVALID


class ReservationFastLane:
    """ASGI middleware: answers the four reservation writes, passes everything else to `app`."""

    def __init__(self, app: ASGIApp, svc: Service, signer: CookieSigner) -> None:
        self.app = app
        self.svc = svc
        self.signer = signer
        #: the cookie last made for each user and its time (a cookie lasts hours: one per minute is plenty)
        self._cookies: dict[str, tuple[float, bytes]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a reservation write; anything else goes on to the application."""
        op = OPS.get(scope.get("path", "")) if scope["type"] == "http" else None
        if op is None:
            await self.app(scope, receive, send)
            return
        query = scope.get("query_string", b"")
        named = dict(parse_qsl(query.decode("latin-1"))).get("user.name", "") if b"user.name=" in query else ""
        cookie = self._cookie(named) if named else None
        try:
            status, body = await self._answer(scope, receive, op, named)
        except Exception as e:  # noqa: BLE001 - logged here; the client gets one line, never a trace
            log.error("internal error answering POST %s", scope.get("path"), exc_info=e)
            status, body = 500, remote_exception_body("WebApplicationException", "internal server error (see the "
                                                      "server log)", "javax.ws.rs.WebApplicationException")
        headers = [(b"content-length", str(len(body)).encode())]
        if body:
            headers.append(_JSON)
        if cookie is not None:
            headers.append((b"set-cookie", cookie))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _cookie(self, user: str) -> bytes:
        now = time.monotonic()
        made = self._cookies.get(user)
        if made is None or now - made[0] > 60:
            value = f'{COOKIE}="{self.signer.make(user)}"; HttpOnly; Path=/; SameSite=strict'.encode()
            if len(self._cookies) > 10_000:
                self._cookies.clear()
            made = self._cookies[user] = (now, value)
        return made[1]

    async def _answer(self, scope: Scope, receive: Receive, op: str, named: str) -> tuple[int, bytes]:
        svc = self.svc
        if scope["method"] != "POST":
            return 405, remote_exception_body("WebApplicationException",
                                              f"method {scope['method']} is not allowed on {scope['path']}",
                                              "javax.ws.rs.WebApplicationException")
        headers: dict[bytes, bytes] = dict(scope["headers"])
        user = caller_of(svc, self.signer, named, headers.get(b"authorization", b"").decode("latin-1"),
                         headers.get(b"cookie", b"").decode("latin-1"))
        if user is None:
            # authentication first, as RMWebServices' initForWritableEndpoints: the body is not read
            svc.metrics.reservation_request(op, 401)
            return 401, orjson.dumps(error(401, UNAUTHENTICATED)[1])
        try:
            raw = await _read_body(scope, receive)
        except _TooLarge:
            return 413, remote_exception_body("WebApplicationException", "Request body is larger than 1 MiB",
                                              "javax.ws.rs.WebApplicationException")
        body = None if op == "new_reservation" else _parse(raw)  # new-reservation has no body: YARN ignores one
        check = None if op == "new_reservation" else (lambda: reservation_refusal(svc, op, user, body))
        try:
            status, answer = await svc.reservation(op, user, body, check)
        except Refused as e:
            svc.metrics.reservation_request(op, 403)
            return 403, remote_exception_body("AccessControlException", e.refusal.message(),
                                              "org.apache.hadoop.security.AccessControlException")
        svc.metrics.reservation_request(op, status)
        return status, (b"" if answer is None else orjson.dumps(answer))
