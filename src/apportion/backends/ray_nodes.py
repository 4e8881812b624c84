"""The Ray cluster's nodes as Kubernetes Node objects (what the scheduler places work on).

Each alive node of `ray.nodes()` is a Node named `ray-<first 12 hex digits of its id>` (the full id is
in the `apportion.io/ray-node-id` annotation, which the binder uses to pin tasks), its allocatable the
node's Ray resources (ray_resources.py) and its labels Ray's node labels. A node that dies or leaves
is no longer listed, and its Node object is deleted (`apportion.io/ray-node` marks the nodes the
backend owns; a Ray-backed service has no other nodes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from apportion.backends.ray_resources import kube_resources

NODE_ID_KEY = "apportion.io/ray-node-id"
RAY_NODE_LABEL = "apportion.io/ray-node"


def node_name(node_id: str) -> str:
    """The Node name of a Ray node id (hex)."""
    return f"ray-{node_id[:12]}"


def _label_value(value: Any) -> str:
    """Kubernetes label values are at most 63 characters."""
    return str(value)[:63]


def node_object(info: Mapping[str, Any]) -> dict[str, Any]:
    """One entry of `ray.nodes()` as a Node object."""
    node_id = str(info["NodeID"])
    labels = {str(k): _label_value(v) for k, v in sorted((info.get("Labels") or {}).items())}
    labels[RAY_NODE_LABEL] = "true"
    alloc = kube_resources(info.get("Resources") or {})
    alloc.setdefault("cpu", "0")
    alloc.setdefault("memory", "0")
    alloc["pods"] = "1000"
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node_name(node_id), "labels": labels,
                     "annotations": {NODE_ID_KEY: node_id,
                                     "apportion.io/ray-address": str(info.get("NodeManagerAddress", ""))}},
        "status": {"allocatable": alloc, "capacity": dict(alloc)},
    }


def alive_nodes(infos: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Node name -> Node object for every alive node."""
    out: dict[str, dict[str, Any]] = {}
    for info in infos:
        if info.get("Alive") or info.get("alive"):
            obj = node_object(info)
            out[obj["metadata"]["name"]] = obj
    return out
