"""`apportion apply`, `get` and `delete`: the service's objects over HTTP (`--server`, default
http://127.0.0.1:8088), as `--user` (default $USER) or with `--token`."""

from __future__ import annotations

import getpass
import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from apportion.cli.guard import run_guarded
from apportion.cli.options import output_option
from apportion.errors import InputError

DEFAULT_SERVER = "http://127.0.0.1:8088"


def _run(fn: Any) -> Any:
    return run_guarded(fn)


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
            # where each task runs (the Ray backend's nodes, or the stored cluster's)
            nodes = sorted({str((p.get("spec") or {}).get("nodeName")) for p in j["pods"]
                            if (p.get("status") or {}).get("phase") == "Running"})
            rows.append([f"{meta.get('namespace', 'default')}/{meta['name']}", j["podgroup"].get("spec", {}).get("queue", "default"),
                         j["phase"], f"{running}/{len(j['pods'])}", ",".join(nodes) or "-", j.get("waiting", "")])
        return ["JOB", "QUEUE", "PHASE", "RUNNING", "NODES", "WAITING"], rows
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
@output_option("table", "json", "yaml")
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


#: what `delete` names, and the API's plural for it; the namespaced ones are named NAMESPACE/NAME (the
#: namespace "default" when left out, as kubectl has it). Every kind `apply` stores can be deleted.
_DELETE = {"queue": ("queues", False), "node": ("nodes", False), "priorityclass": ("priorityclasses", False),
           "job": ("jobs", True), "podgroup": ("podgroups", True), "pod": ("pods", True),
           "configmap": ("configmaps", True)}


@click.command("delete")
@click.argument("what", type=click.Choice(list(_DELETE)))
@click.argument("name")
@_server_options
def delete_cmd(what: str, name: str, server: str, user: str | None, token: str | None) -> None:
    """Delete a queue, node or priority class (NAME), or a job (a PodGroup with its Pods), podgroup, pod
    or configmap ([NAMESPACE/]NAME, in "default" without a namespace) from the service."""
    def body() -> None:
        plural, namespaced = _DELETE[what]
        if namespaced:
            ns, _, n = name.rpartition("/")
            if not n or "/" in ns:
                raise InputError("expected NAME or NAMESPACE/NAME", where="NAME")
            path = f"/api/v1/{plural}/{ns or 'default'}/{n}"
        else:
            if not name or "/" in name:
                raise InputError(f"a {what} is named without a namespace", where="NAME")
            path = f"/api/v1/{plural}/{name}"
        _call(server, user, token, "DELETE", path)
        click.echo(f"{what}/{name} deleted")

    _run(body)


def register(group: click.Group) -> None:
    """Attach `apply`, `get` and `delete`."""
    for cmd in (apply_cmd, get_cmd, delete_cmd):
        group.add_command(cmd)
