"""Submitting work to a Ray-backed service: the job's objects, sent to `POST /api/v1/apply`.

`apportion submit ... -- CMD` and `apportion.ray.submit(fn, ...)` both end here. The job waits in its
queue (`default` when none is given, as in Volcano) until a session binds it; then the service starts
its tasks on the Ray nodes the session chose.
"""

from __future__ import annotations

import getpass
import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

import yaml

from apportion.backends.ray_jobs import command_payload, function_payload, job_objects
from apportion.backends.ray_resources import parse_resources
from apportion.errors import InputError

DEFAULT_SERVER = "http://127.0.0.1:8088"


def post_job(objects: list[dict[str, Any]], server: str = DEFAULT_SERVER, user: str | None = None,
             token: str | None = None) -> str:
    """Apply the job's objects on the service; its `namespace/name`. InputError says why it was refused."""
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    params = {} if token else {"user.name": user or os.environ.get("USER") or getpass.getuser()}
    body = yaml.safe_dump_all(objects, sort_keys=True).encode()
    queue = objects[0]["spec"]["queue"]
    try:
        with httpx.Client(base_url=server, headers=headers, params=params, timeout=30.0) as c:
            # the service stores a job whatever its queue says; one naming no queue would wait forever
            if c.get(f"/api/v1/queues/{quote(queue, safe='')}").status_code == 404:
                raise InputError(f"no queue {queue!r} on the service (apportion get queues lists them)",
                                 where="--queue")
            r = c.post("/api/v1/apply", content=body, headers={"Content-Type": "application/yaml"})
    except httpx.HTTPError as e:
        raise InputError(f"cannot reach the server: {e}", where=server) from None
    if r.status_code >= 400:
        try:
            msg = r.json().get("error", r.text)
        except ValueError:
            msg = r.text
        raise InputError(f"{r.status_code}: {str(msg).strip()[:300]}", where="POST /api/v1/apply")
    meta = objects[0]["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


def _resources(resources: str | Mapping[str, Any] | None) -> dict[str, str]:
    if resources is None:
        return {"cpu": "1"}
    if isinstance(resources, str):
        return parse_resources(resources)
    return parse_resources(",".join(f"{k}={v}" for k, v in resources.items()))


def submit(what: Any, *, queue: str = "default", tasks: int = 1, min_member: int | None = None,
           resources: str | Mapping[str, Any] | None = None, args: Sequence[Any] = (),
           name: str | None = None, namespace: str = "default", reservation: str | None = None,
           server: str = DEFAULT_SERVER, user: str | None = None, token: str | None = None) -> str:
    """Submit `tasks` tasks, each calling `what(*args)` (a function), creating an actor of `what` (a
    class) or running `what` (a list of strings: a command), to `queue`; `min_member` of them (default
    all) start together or not at all. Returns the job's `namespace/name`."""
    payload = command_payload(what) if isinstance(what, list | tuple) else function_payload(what, args)
    objs = job_objects(name or f"job-{uuid.uuid4().hex[:8]}", namespace, queue, tasks,
                       tasks if min_member is None else min_member, _resources(resources), payload, reservation)
    return post_job(objs, server, user, token)
