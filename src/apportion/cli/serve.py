"""`apportion serve` (the service) and `apportion token create` (which writes to the database directly,
so it works before the server runs)."""

from __future__ import annotations

from typing import Any

import click

from apportion.cli.guard import run_guarded
from apportion.errors import InputError

DEFAULT_SERVER = "http://127.0.0.1:8088"


def _run(fn: Any) -> Any:
    return run_guarded(fn)


@click.command("serve")
@click.option("--db", "db_url", default=None, help="Database URL (default sqlite:///apportion.db).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8088, show_default=True, type=int, help="Port to listen on.")
@click.option("--conf", "conf_path", default=None, help="Scheduler conf (or its ConfigMap).")
@click.option("--cluster", "cluster_path", default=None, help="kubectl dump applied at start.")
@click.option("--scenario", "scenario_path", default=None, help="Play this scenario's workload against the service.")
@click.option("--speed", default=1.0, show_default=True, type=float, help="Scenario clock: N times real time.")
@click.option("--schedule-period", default=1.0, show_default=True, type=float, help="Seconds between sessions.")
@click.option("--acls/--no-acls", default=False, show_default=True, help="Enforce YARN's queue ACLs.")
@click.option("--admin", "admins", multiple=True, help="A user who passes every ACL (repeatable).")
@click.option("--backend", type=click.Choice(["objects", "ray"]), default="objects", show_default=True,
              help="Where binds run: the stored objects only, or tasks on a Ray cluster.")
@click.option("--ray-address", default=None, help="The Ray cluster to join (default: start a local one).")
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
        ray_backend = None
        if backend == "ray":
            from apportion.backends.ray_backend import RayBackend

            ray_backend = RayBackend(address=ray_address)
            ray_backend.connect()
        config = ServiceConfig(db_url=db_url or default_url(), conf_path=conf_path, cluster_path=cluster_path,
                               acls=acls, admins=admins, schedule_period=schedule_period,
                               scenario_path=scenario_path, speed=speed, backend=ray_backend)
        app = create_app(config)
        click.echo(f"apportion: serving on http://{host}:{port} (database {config.db_url})", err=True)
        try:
            uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
        finally:
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
