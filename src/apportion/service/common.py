"""What every route shares: JSON answers, YARN's error body, the caller's name, the body limit."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import orjson
from fastapi import Request
from fastapi.responses import Response
from starlette.datastructures import QueryParams
from starlette.requests import cookie_parser

from apportion.service.auth import COOKIE, CookieSigner, Refusal

#: request bodies above this get 413
MAX_BODY = 1024 * 1024


class BodyTooLarge(Exception):
    """A request body over MAX_BODY (answered 413)."""


class Unauthenticated(Exception):
    """A write without a caller (answered 401)."""


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    """A JSON answer (orjson); None means no content."""
    if body is None:
        return Response(status_code=status, headers=headers)
    return Response(orjson.dumps(body), status_code=status, media_type="application/json", headers=headers)


def remote_exception_body(exception: str, message: str, java: str) -> bytes:
    """YARN's error body: `{"RemoteException": {exception, message, javaClassName}}`, as JSON."""
    return orjson.dumps({"RemoteException": {"exception": exception, "message": message, "javaClassName": java}})


def remote_exception(status: int, exception: str, message: str, java: str) -> Response:
    """A response with YARN's error body."""
    return Response(remote_exception_body(exception, message, java), status_code=status, media_type="application/json")


def forbidden(refusal: Refusal, yarn: bool) -> Response:
    """403 naming the ACL."""
    if yarn:
        return remote_exception(403, "AccessControlException", refusal.message(),
                                "org.apache.hadoop.security.AccessControlException")
    return json_response(403, {"error": refusal.message(), "acl": refusal.acl})


def caller(request: Request) -> str | None:
    """The authenticated user: `?user.name=`, a bearer token, or a signed `hadoop.auth` cookie."""
    name = query_user(request.scope.get("query_string", b""))
    if name:  # as caller_of answers it, without reading the headers
        return name
    return caller_of(request.app.state.service, request.app.state.signer, name,
                     request.headers.get("authorization", ""), request.headers.get("cookie", ""))


@lru_cache(maxsize=4096)
def query_user(query_string: bytes) -> str | None:
    """`?user.name=` of a raw query string, as `request.query_params.get("user.name")` reads it (the
    last one given): a client sends the same few query strings again and again, and parsing one took a
    tenth of a small request's time on the event loop."""
    return QueryParams(query_string).get("user.name")


def caller_of(svc: Any, signer: CookieSigner, name: str | None, authorization: str, cookie_header: str) -> str | None:
    """The user a request names: `?user.name=` (`name`), else the `Authorization: Bearer` token's
    owner, else the user of a valid `hadoop.auth` cookie; None for nobody."""
    if name:
        return name
    if authorization.lower().startswith("bearer "):
        user: str | None = svc.store.token_user(authorization[7:].strip())
        return user
    cookie = cookie_parser(cookie_header).get(COOKIE) if cookie_header else None
    if cookie:
        return signer.user(cookie)
    return None


async def read_body(request: Request) -> bytes:
    """The request body, refusing more than MAX_BODY bytes even without a Content-Length."""
    size = request.headers.get("content-length")
    if size is not None and size.isdigit() and int(size) > MAX_BODY:
        raise BodyTooLarge()
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > MAX_BODY:
            raise BodyTooLarge()
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json_body(raw: bytes) -> Any:
    """A request body as JSON: None when empty, INVALID when it is not JSON (the handlers answer 400)."""
    if not raw.strip():
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return INVALID


class _Invalid:
    """A body that is not JSON: the handlers answer it as a body that is not an object."""

    def __repr__(self) -> str:
        return "<invalid JSON>"


INVALID: Any = _Invalid()
