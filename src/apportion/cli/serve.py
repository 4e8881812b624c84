"""`apportion serve` (the service) and `apportion token create` (which writes to the database directly,
so it works before the server runs)."""

from __future__ import annotations

import signal
import socket
import sys
from typing import Any

import click

from apportion.cli.guard import run_guarded
from apportion.errors import InputError, InternalError

DEFAULT_SERVER = "http://127.0.0.1:8088"


def _run(fn: Any) -> Any:
    return run_guarded(fn)


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port; InputError naming --host or --port when it cannot be."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as e:
        raise InputError(f"cannot resolve {host!r}: {e}", where="--host") from None
    family, _, _, _, address = infos[0]
    try:
        return socket.create_server(address, family=family, backlog=2048)
    except OSError as e:
        raise InputError(f"cannot listen on {host}:{port}: {e.strerror or e}", where="--port") from None


@click.command("serve")
@click.option("--db", "db_url", default=None, help="Database URL (default sqlite:///apportion.db).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8088, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--conf", "conf_path", default=None, help="Scheduler conf (or its ConfigMap).")
@click.option("--cluster", "cluster_path", default=None, help="kubectl dump applied at start.")
@click.option("--scenario", "scenario_path", default=None, help="Play this scenario's workload against the service.")
@click.option("--speed", default=1.0, show_default=True, type=float, help="Scenario clock: N times real time.")
@click.option("--schedule-period", default=1.0, show_default=True, type=float, help="Seconds between sessions.")
@click.option("--acls/--no-acls", default=False, show_default=True, help="Enforce YARN's queue ACLs.")
@click.option("--admin", "admins", multiple=True, help="A user who passes every ACL (repeatable).")
@click.option("--backend", type=click.Choice(["objects", "ray"]), default="objects", show_default=True,
              help="Where binds run: the stored objects only, or tasks on a Ray cluster.")
@click.option("--ray-address", default=None, help="The Ray cluster to join (default: $RAY_ADDRESS, else a new local Ray).")
def serve(db_url: str | None, host: str, port: int, conf_path: str | None, cluster_path: str | None,
          scenario_path: str | None, speed: float, schedule_period: float, acls: bool, admins: tuple[str, ...],
          backend: str, ray_address: str | None) -> None:
    """Run the scheduler and the reservation system as a service (YARN REST + /api/v1)."""
    def body() -> None:
        import uvicorn

        from apportion.service.app import create_app
        from apportion.service.core import ServiceConfig
        from apportion.service.db import default_url

        if schedule_period <= 0:
            raise InputError("must be positive", where="--schedule-period")
        if speed <= 0:
            raise InputError("must be positive", where="--speed")
        # bound here, before anything is started or announced: a port in use or a host that does not
        # resolve is one line and exit 2, not uvicorn's log and exit 3 after "serving on"
        sock = listen(host, port)
        ray_backend = None
        try:
            if backend == "ray":
                from apportion.backends.ray_backend import RayBackend

                ray_backend = RayBackend(address=ray_address)
                ray_backend.connect()
                # ray.init made SIGTERM exit with status 15; uvicorn stops gracefully on SIGTERM and
                # then raises it again, and the Ray work must still be stopped below: exit 143, as a
                # shell reports a process ended by SIGTERM
                signal.signal(signal.SIGTERM, lambda signum, _: sys.exit(128 + signum))
        except BaseException:
            sock.close()
            raise
        config = ServiceConfig(db_url=db_url or default_url(), conf_path=conf_path, cluster_path=cluster_path,
                               acls=acls, admins=admins, schedule_period=schedule_period,
                               scenario_path=scenario_path, speed=speed, backend=ray_backend)
        try:
            app = create_app(config)
            bound = sock.getsockname()[1]
            click.echo(f"apportion: serving on http://{host}:{bound} (database {config.db_url})", err=True)
            server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
            server.run(sockets=[sock])
            if not server.started:  # uvicorn logged why (e.g. the application's startup failed)
                raise InternalError("the server did not start")
        finally:
            sock.close()
            if ray_backend is not None:
                ray_backend.close()

    _run(body)


@click.group("token")
def token() -> None:
    """Bearer tokens of the service."""


@token.command("create")
@click.argument("user")
@click.option("--db", "db_url", default=None, help="Database URL (default sqlite:///apportion.db).")
def token_create(user: str, db_url: str | None) -> None:
    """Make a token for USER; it is printed once and stored hashed."""
    def body() -> None:
        if not user.strip():  # the service treats an empty name as no caller: such a token would never work
            raise InputError("must not be empty", where="USER")
        from apportion.service.auth import new_token
        from apportion.service.core import wall_ms
        from apportion.service.db import default_url, make_engine, migrate
        from apportion.service.store import SqlStore

        engine = make_engine(db_url or default_url())
        migrate(engine)
        tok = new_token()
        SqlStore(engine).add_token(user, tok, wall_ms())
        engine.dispose()
        click.echo(tok)

    _run(body)


def register(group: click.Group) -> None:
    """Attach `serve` and `token`."""
    group.add_command(serve)
    group.add_command(token)
