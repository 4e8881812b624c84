"""CLI glue of the service: `serve`, `apply`, `get`, `delete`, `token` (thin; moves to cli/ later).

`apply`, `get` and `delete` talk to a running service over HTTP (`--server`, default
http://127.0.0.1:8088) as `--user` (default $USER) or with `--token`; `token create` writes to the
database directly, so it works before the server runs.
"""

from __future__ import annotations

import getpass
import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from apportion.errors import InputError

DEFAULT_SERVER = "http://127.0.0.1:8088"


def _run(fn: Any) -> Any:
    from apportion.cli import run_guarded

    return run_guarded(fn)


@click.command("serve")
@click.option("--db", "db_url", default=None, help="Database URL (default sqlite:///apportion.db).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8088, show_default=True, type=int, help="Port to listen on.")
@click.option("--conf", "conf_path", default=None, help="Scheduler conf (or its ConfigMap).")
@click.option("--cluster", "cluster_path", default=None, help="kubectl dump applied at start.")
@click.option("--schedule-period", default=1.0, show_default=True, type=float, help="Seconds between sessions.")
@click.option("--acls/--no-acls", default=False, show_default=True, help="Enforce YARN's queue ACLs.")
@click.option("--admin", "admins", multiple=True, help="A user who passes every ACL (repeatable).")
def serve(db_url: str | None, host: str, port: int, conf_path: str | None, cluster_path: str | None,
          schedule_period: float, acls: bool, admins: tuple[str, ...]) -> None:
    """Run the scheduler and the reservation system as a service (YARN REST + /api/v1)."""
    def body() -> None:
        import uvicorn

        from apportion.service.app import create_app
        from apportion.service.core import ServiceConfig
        from apportion.service.db import default_url

        if schedule_period <= 0:
            raise InputError("must be positive", where="--schedule-period")
        config = ServiceConfig(db_url=db_url or default_url(), conf_path=conf_path, cluster_path=cluster_path,
                               acls=acls, admins=admins, schedule_period=schedule_period)
        app = create_app(config)
        click.echo(f"apportion: serving on http://{host}:{port} (database {config.db_url})", err=True)
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)

    _run(body)


# -- the HTTP client verbs --------------------------------------------------------------------------
def _client(server: str, user: str | None, token: str | None) -> Any:
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    params = {} if token else {"user.name": user or os.environ.get("USER") or getpass.getuser()}
    return httpx.Client(base_url=server, headers=headers, params=params, timeout=30.0)


def _call(server: str, user: str | None, token: str | None, method: str, path: str, content: bytes | None = None) -> Any:
    import httpx

    try:
        with _client(server, user, token) as c:
            r = c.request(method, path, content=content)
    except httpx.HTTPError as e:
        raise InputError(f"cannot reach the server: {e}", where=server) from None
    try:
        data = r.json() if r.content else {}
    except ValueError:
        data = {"error": r.text.strip()[:200]}
    if r.status_code >= 400:
        msg = data.get("error") if isinstance(data, dict) else None
        raise InputError(f"{r.status_code}: {msg or data}", where=f"{method} {path}")
    return data


def _server_options(f: Any) -> Any:
    f = click.option("--server", default=DEFAULT_SERVER, show_default=True, help="The service's URL.")(f)
    f = click.option("--user", default=None, help="Caller name (?user.name=); default $USER.")(f)
    f = click.option("--token", default=None, envvar="APPORTION_TOKEN", help="Bearer token instead of --user.")(f)
    return f


@click.command("apply")
@click.option("-f", "--filename", "files", multiple=True, required=True, help="kubectl YAML/JSON (or -).")
@_server_options
def apply_cmd(files: tuple[str, ...], server: str, user: str | None, token: str | None) -> None:
    """Create or replace the objects of the files on the service, all or none."""
    def body() -> None:
        texts = []
        for path in files:
            try:
                texts.append(sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8"))
            except OSError as e:
                raise InputError(f"cannot read: {e.strerror or e}", where=path) from None
        out = _call(server, user, token, "POST", "/api/v1/apply", "\n---\n".join(texts).encode())
        for kind, ns, name in out.get("changed", []):
            click.echo(f"{kind.lower()}/{(ns + '/') if ns else ''}{name} applied")
        if not out.get("changed"):
            click.echo("nothing changed")

    _run(body)


_GET = {"queues": "/api/v1/queues", "nodes": "/api/v1/nodes", "jobs": "/api/v1/jobs",
        "priorityclasses": "/api/v1/priorityclasses", "reservations": "/api/v1/reservations"}


def _rows(what: str, data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    if what == "reservations":
        rows = []
        for r in data["reservations"]:
            allocs = r.get("resource-allocations") or []
            span = f"{allocs[0]['startTime']}-{allocs[-1]['endTime']}" if allocs else "-"
            rows.append([r["reservation-id"], r["queue"], r["user"], span])
        return ["ID", "QUEUE", "USER", "SPAN"], rows
    if what == "jobs":
        rows = []
        for j in data["items"]:
            meta = j["podgroup"]["metadata"]
            running = sum(1 for p in j["pods"] if (p.get("status") or {}).get("phase") == "Running")
            rows.append([f"{meta.get('namespace', 'default')}/{meta['name']}", j["podgroup"].get("spec", {}).get("queue", "default"),
                         j["phase"], f"{running}/{len(j['pods'])}", j.get("waiting", "")])
        return ["JOB", "QUEUE", "PHASE", "RUNNING", "WAITING"], rows
    rows = []
    for o in data["items"]:
        spec = o.get("spec") or {}
        if what == "queues":
            rows.append([o["metadata"]["name"], str(spec.get("parent", "")), str(spec.get("weight", 1)),
                         json.dumps(spec.get("capability", {}), sort_keys=True)])
        elif what == "nodes":
            rows.append([o["metadata"]["name"], json.dumps((o.get("status") or {}).get("allocatable", {}), sort_keys=True)])
        else:
            rows.append([o["metadata"]["name"], str(o.get("value", 0))])
    heads = {"queues": ["NAME", "PARENT", "WEIGHT", "CAPABILITY"], "nodes": ["NAME", "ALLOCATABLE"],
             "priorityclasses": ["NAME", "VALUE"]}
    return heads[what], rows


@click.command("get")
@click.argument("what", type=click.Choice(sorted(_GET)))
@click.option("-o", "--output", type=click.Choice(["table", "json", "yaml"]), default="table", show_default=True)
@_server_options
def get_cmd(what: str, output: str, server: str, user: str | None, token: str | None) -> None:
    """List queues, nodes, jobs, priority classes or reservations of the service."""
    def body() -> None:
        data = _call(server, user, token, "GET", _GET[what])
        if output == "json":
            click.echo(json.dumps(data, indent=2, sort_keys=True))
        elif output == "yaml":
            import yaml

            click.echo(yaml.safe_dump(data, sort_keys=True), nl=False)
        else:
            heads, rows = _rows(what, data)
            widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(heads)]
            for r in [heads, *rows]:
                click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())

    _run(body)


@click.command("delete")
@click.argument("what", type=click.Choice(["queue", "node", "job", "priorityclass"]))
@click.argument("name")
@_server_options
def delete_cmd(what: str, name: str, server: str, user: str | None, token: str | None) -> None:
    """Delete a queue, node, priority class, or a job (NAMESPACE/NAME) from the service."""
    def body() -> None:
        if what == "job":
            ns, _, n = name.rpartition("/")
            path = f"/api/v1/jobs/{ns or 'default'}/{n}"
        else:
            path = f"/api/v1/{what}s/{name}" if what != "priorityclass" else f"/api/v1/priorityclasses/{name}"
        _call(server, user, token, "DELETE", path)
        click.echo(f"{what}/{name} deleted")

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
    """Attach the service's commands."""
    for cmd in (serve, apply_cmd, get_cmd, delete_cmd, token):
        group.add_command(cmd)
