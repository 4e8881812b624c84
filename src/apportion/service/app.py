"""The FastAPI application: routes, the scheduling loop's lifetime, and the error handlers.

No stack trace ever reaches a client: an unexpected error is logged on the server and answered 500
with a one-line message (YARN's `RemoteException` body on `/ws` routes, `{"error": ...}` elsewhere).
A body over 1 MiB is answered 413. A `?user.name=` caller gets a signed `hadoop.auth` cookie back,
as Hadoop's simple authentication filter gives one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator
from functools import lru_cache
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from apportion.errors import InputError
from apportion.service.auth import CookieSigner
from apportion.service.common import BodyTooLarge, Unauthenticated, json_response, remote_exception
from apportion.service.core import Service, ServiceConfig
from apportion.service.objects import ObjectNotFound
from apportion.service.player import ScenarioPlayer

log = logging.getLogger(__name__)


def _error(request: Request, status: int, message: str, exception: str, java: str) -> Response:
    if request.url.path.startswith("/ws/"):
        return remote_exception(status, exception, message, java)
    return json_response(status, {"error": message})


def _secret(svc: Service) -> bytes:
    """The cookie signing secret, made once and kept in the database (cookies outlive a restart)."""
    value = svc.store.get_meta("cookie-secret")
    if value is None:
        value = secrets.token_hex(32)
        with svc.engine.begin() as conn:
            svc.store.set_meta(conn, "cookie-secret", value)
    return bytes.fromhex(value)


@lru_cache(maxsize=4096)
def cookie_user(query_string: bytes) -> str:
    """The user a `?user.name=` query string gets the cookie of (the first one given; "" for none):
    kept per query string, which a client sends again and again."""
    return parse_qs(query_string.decode("latin-1")).get("user.name", [""])[0]


class SimpleAuthCookie:
    """ASGI middleware: a `?user.name=` caller gets a signed `hadoop.auth` cookie on the answer (plain
    ASGI rather than Starlette's BaseHTTPMiddleware, which costs a task per request)."""

    def __init__(self, app: ASGIApp, signer: CookieSigner) -> None:
        self.app = app
        self.signer = signer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; add the cookie to the answer of a `?user.name=` request."""
        if scope["type"] != "http" or b"user.name=" not in scope.get("query_string", b""):
            await self.app(scope, receive, send)
            return
        user = cookie_user(scope["query_string"])

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start" and user:
                cookie = self.signer.set_cookie(user)
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def create_app(config: ServiceConfig | None = None, service: Service | None = None) -> FastAPI:
    """The application of one service (built from `config` unless a service is given)."""
    svc = service or Service(config or ServiceConfig())
    player = ScenarioPlayer(svc, svc.config.scenario_path, svc.config.speed) if svc.config.scenario_path else None

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        svc.collector.start()
        svc.loop.between_ticks = svc.collector.settle
        svc.loop.between_parts = svc.collector.collect_young
        tasks = [asyncio.create_task(svc.loop.run_forever())] if svc.config.loop else []
        if player is not None:
            tasks.append(asyncio.create_task(player.run()))
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            svc.close()
            svc.collector.stop()

    # FastAPI's native OpenTelemetry asks the global providers on every request; the service's
    # metrics are Prometheus' (/metrics), and nothing here configures OpenTelemetry
    app = FastAPI(title="apportion", summary="Volcano's queue scheduling and YARN's reservation system",
                 lifespan=lifespan, telemetry={"tracing": False, "metrics": False, "logs": False})
    app.state.service = svc
    app.state.signer = CookieSigner(_secret(svc))

    app.add_middleware(SimpleAuthCookie, signer=app.state.signer)

    @app.exception_handler(BodyTooLarge)
    async def too_large(request: Request, _e: BodyTooLarge) -> Response:
        return _error(request, 413, "Request body is larger than 1 MiB", "WebApplicationException",
                      "javax.ws.rs.WebApplicationException")

    @app.exception_handler(Unauthenticated)
    async def unauthenticated(request: Request, _e: Unauthenticated) -> Response:
        return _error(request, 401, "Unable to obtain user name, user not authenticated", "AuthorizationException",
                      "org.apache.hadoop.security.authorize.AuthorizationException")

    @app.exception_handler(InputError)
    async def bad_input(request: Request, e: InputError) -> Response:
        return _error(request, 400, str(e), "BadRequestException", "org.apache.hadoop.yarn.webapp.BadRequestException")

    @app.exception_handler(ObjectNotFound)
    async def not_found(request: Request, e: ObjectNotFound) -> Response:
        return _error(request, 404, str(e), "NotFoundException", "org.apache.hadoop.yarn.webapp.NotFoundException")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, e: StarletteHTTPException) -> Response:
        if e.status_code == 404:
            return _error(request, 404, f"no such resource: {request.url.path}", "NotFoundException",
                          "org.apache.hadoop.yarn.webapp.NotFoundException")
        if e.status_code == 405:
            return _error(request, 405, f"method {request.method} is not allowed on {request.url.path}",
                          "WebApplicationException", "javax.ws.rs.WebApplicationException")
        return _error(request, e.status_code, str(e.detail), "WebApplicationException",
                      "javax.ws.rs.WebApplicationException")

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, e: RequestValidationError) -> Response:
        first = e.errors()[0] if e.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _error(request, 400, f"{where}: {first.get('msg', 'invalid request')}", "BadRequestException",
                      "org.apache.hadoop.yarn.webapp.BadRequestException")

    @app.exception_handler(Exception)
    async def internal(request: Request, e: Exception) -> Response:
        log.error("internal error answering %s %s", request.method, request.url.path, exc_info=e)
        return _error(request, 500, "internal server error (see the server log)", "WebApplicationException",
                      "javax.ws.rs.WebApplicationException")

    from apportion.service.api_v1 import router as api_router
    from apportion.service.forecasts import router as forecast_router
    from apportion.service.yarn import router as yarn_router
    from apportion.service.yarn import write_routes

    # the reservation writes, the hot path, first: the router tries its routes in order
    app.router.routes[:0] = write_routes()
    app.include_router(yarn_router)
    app.include_router(forecast_router)
    app.include_router(api_router)
    from apportion.service.dashboard import install as install_dashboard  # the pages at / (issue 19)

    install_dashboard(app)

    @app.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        def render() -> bytes:
            svc.metrics.plans(svc.reservations.plans, svc.clock())
            return svc.metrics.render()

        body = await asyncio.to_thread(svc.read, render)
        return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")

    return app
