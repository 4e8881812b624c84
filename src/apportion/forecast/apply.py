"""A fit suggestion's `change` made on the cluster objects (kubectl dicts): what a user would apply, and
what the property test applies before checking with `apportion cycle` that the job starts."""

from __future__ import annotations

import copy
from typing import Any

from apportion.forecast.fit import natural
from apportion.resources import CPU, MEMORY, PODS, Resource, to_natural_value


def _quantities(values: dict[str, Any]) -> dict[str, str]:
    """Natural amounts as Kubernetes quantities (cpu in millicores, memory in bytes)."""
    out = {}
    for k, v in values.items():
        if k == CPU:
            out[k] = f"{round(float(v) * 1000)}m"
        elif k == MEMORY:
            out[k] = str(round(float(v)))
        else:
            out[k] = str(int(v)) if float(v) == int(v) else str(v)
    return out


def _of_job(obj: dict[str, Any], uid: str) -> bool:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or "default"
    if obj.get("kind") == "PodGroup":
        return f"{ns}/{meta.get('name')}" == uid
    if obj.get("kind") == "Pod":
        group = (meta.get("annotations") or {}).get("scheduling.k8s.io/group-name")
        return bool(group) and f"{ns}/{group}" == uid
    return False


def apply_change(objects: list[dict[str, Any]], change: dict[str, Any]) -> list[dict[str, Any]]:
    """The cluster objects (kubectl dicts, not changed) with a suggestion's `change` made: what a user
    would apply. A per-pod request is written to the pod's only container (with several containers,
    each is scaled by the same factor)."""
    kind = change["type"]
    out = []
    if kind == "reservation":
        return _apply_reservation(objects, change)
    for obj in objects:
        if kind == "free" and any(_of_job(obj, j["job"]) for j in change["jobs"]):
            continue
        o = copy.deepcopy(obj)
        if kind == "queue" and o.get("kind") == "Queue" and o["metadata"]["name"] == change["queue"]:
            o.setdefault("spec", {})[change["field"]] = _quantities(change["to"])
        elif kind == "minMember" and o.get("kind") == "PodGroup" and _of_job(o, change["job"]):
            o["spec"]["minMember"] = change["to"]
            if change.get("minResources") is not None:
                o["spec"]["minResources"] = _quantities(change["minResources"])
        elif kind == "request" and o.get("kind") == "PodGroup" and _of_job(o, change["job"]):
            if o["spec"].get("minResources"):
                m = int(o["spec"].get("minMember", 1))
                o["spec"]["minResources"] = _quantities({k: float(v) * m for k, v in change["to"].items()})
        elif kind == "request" and o.get("kind") == "Pod" and _of_job(o, change["job"]) \
                and not (o.get("spec") or {}).get("nodeName"):
            containers = o["spec"]["containers"]
            if len(containers) == 1:
                containers[0].setdefault("resources", {})["requests"] = _quantities(change["to"])
            else:
                frm = change["from"]
                for c in containers:
                    req = c.setdefault("resources", {}).setdefault("requests", {})
                    for k, v in change["to"].items():
                        if k in req and frm.get(k):
                            was = to_natural_value(k, Resource.from_resource_list({k: req[k]}).get(k))
                            req[k] = _quantities({k: was * float(v) / float(frm[k])})[k]
        out.append(o)
    return out


def _apply_reservation(objects: list[dict[str, Any]], change: dict[str, Any]) -> list[dict[str, Any]]:
    """A booked reservation as the plan follower publishes it: a child queue of the reservable queue
    (a queue of its own for a booking in the cluster plan, `queue` null) deserving, guaranteeing and
    capped to the gang, the default child's share reduced by as much, and the job's PodGroup moved
    into it. A booking from later is what the objects become at its start."""
    from apportion.forecast.reserve import SUGGESTED
    from apportion.simulation.reservations import default_child
    from apportion.simulation.scenario import RESERVATION_ID_KEY

    per = Resource.from_natural(change["perPod"])
    amount = per.clone().multi(change["pods"])
    amount.scalars.pop(PODS, None)
    gang = _quantities(natural(amount))
    out = []
    for obj in objects:
        o = copy.deepcopy(obj)
        meta = o.get("metadata") or {}
        if change["queue"] and o.get("kind") == "Queue" and meta.get("name") == default_child(change["queue"]):
            spec = o.setdefault("spec", {})
            for path in (("deserved",), ("guarantee", "resource")):
                holder = spec
                for p in path[:-1]:
                    holder = holder.setdefault(p, {})
                cur = Resource.from_resource_list(holder.get(path[-1]) or {})
                holder[path[-1]] = _quantities(natural(cur.exceeded_part(amount)))
        elif o.get("kind") == "PodGroup" and _of_job(o, change["job"]):
            o["spec"]["queue"] = SUGGESTED
            o["metadata"].setdefault("annotations", {})[RESERVATION_ID_KEY] = SUGGESTED
        out.append(o)
    out.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                "metadata": {"name": SUGGESTED, "annotations": {"apportion.io/reservation": SUGGESTED}},
                "spec": {"weight": 1, **({"parent": change["queue"]} if change["queue"] else {}),
                         "capability": gang, "deserved": gang, "guarantee": {"resource": gang}},
                "status": {"state": "Open"}})
    return out
