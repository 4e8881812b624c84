"""A job for the Ray backend as the service stores it: a PodGroup and its Pods, with what to run.

What each task runs travels in the pods' annotations: `apportion.io/ray-command` (a JSON list, the argv
of a process) or `apportion.io/ray-function` (a function or actor class, cloudpickled, base64). The
service runs whatever is submitted to it, as a Ray cluster runs whatever its clients send: whoever may
submit to the service may run code on the cluster (the ACLs decide who may submit to which queue).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from apportion.errors import InputError

COMMAND_KEY = "apportion.io/ray-command"
FUNCTION_KEY = "apportion.io/ray-function"
GROUP_KEY = "scheduling.k8s.io/group-name"
RESERVATION_KEY = "apportion.io/reservation"


def job_objects(name: str, namespace: str, queue: str, tasks: int, min_member: int,
                requests: Mapping[str, str], payload: Mapping[str, str],
                reservation: str | None = None) -> list[dict[str, Any]]:
    """The PodGroup and its `tasks` Pods (each requesting `requests`) of one submitted job."""
    if tasks < 1:
        raise InputError("must be at least 1", where="--tasks")
    if not 1 <= min_member <= tasks:
        raise InputError(f"must be between 1 and --tasks ({tasks})", where="--min-member")
    ann: dict[str, str] = {RESERVATION_KEY: reservation} if reservation else {}
    out: list[dict[str, Any]] = [{
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "annotations": ann},
        "spec": {"queue": queue, "minMember": min_member, "minResources": {
            k: _times(v, min_member) for k, v in requests.items()}},
        "status": {"phase": "Pending"}}]
    for i in range(tasks):
        out.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "namespace": namespace,
                         "annotations": {GROUP_KEY: name, **payload}},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "task", "resources": {"requests": dict(requests)}}]},
            "status": {"phase": "Pending"}})
    return out


def _times(quantity: str, n: int) -> str:
    from apportion.quantity import parse_quantity_decimal

    total = parse_quantity_decimal(quantity) * n
    return str(int(total)) if total == int(total) else f"{int(total * 1000)}m"


def command_payload(argv: Sequence[str]) -> dict[str, str]:
    """The annotation of a task that runs a process."""
    if not argv:
        raise InputError("a command to run is required after --", where="submit")
    return {COMMAND_KEY: json.dumps(list(argv))}


def function_payload(fn: Any, args: Sequence[Any] = ()) -> dict[str, str]:
    """The annotation of a task that calls `fn(*args)` (or creates an actor of class `fn`)."""
    from ray import cloudpickle

    return {FUNCTION_KEY: base64.b64encode(cloudpickle.dumps((fn, tuple(args)))).decode("ascii")}


def decode_payload(annotations: Mapping[str, str]) -> tuple[str, Any]:
    """("command", argv) or ("function", (fn, args)) of a pod; InputError when it has neither."""
    if COMMAND_KEY in annotations:
        argv = json.loads(annotations[COMMAND_KEY])
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise InputError("must be a non-empty JSON list of strings", where=COMMAND_KEY)
        return "command", argv
    if FUNCTION_KEY in annotations:
        from ray import cloudpickle

        return "function", cloudpickle.loads(base64.b64decode(annotations[FUNCTION_KEY]))
    raise InputError(f"the pod has neither {COMMAND_KEY} nor {FUNCTION_KEY}", where="pod annotations")
