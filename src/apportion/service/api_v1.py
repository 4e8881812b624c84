"""apportion's own API under `/api/v1` (OpenAPI at `/docs`).

Queues, nodes, priority classes and jobs (a PodGroup with its Pods) can be listed, read, created,
replaced and deleted; `POST /api/v1/apply` takes kubectl YAML or JSON (several documents, or a List)
and applies them all or none; `GET /api/v1/snapshot` exports everything as a kubectl List that
`apportion cycle` reads. Every edit is checked as `cycle` checks its input (400 naming the object and
field, nothing stored) and committed before the answer. Writes need a caller (401 otherwise); with
ACLs on, a PodGroup or Pod needs `acl_submit_applications` on its queue, a Queue
`acl_administer_queue` on it (or its parent when new), anything else an administrator.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from apportion.errors import InputError
from apportion.kube.documents import parse_documents
from apportion.kube.pods import GROUP_KEY
from apportion.reservation.api import reservation_info
from apportion.service.auth import Refusal, Refused
from apportion.service.common import Unauthenticated, caller, forbidden, json_response, read_body
from apportion.service.core import Service
from apportion.service.objects import KINDS, PLURALS, ObjectKey, key_where, object_key

router = APIRouter(prefix="/api/v1", tags=["apportion"])

_NAMED = {"queues": "Queue", "nodes": "Node", "priorityclasses": "PriorityClass"}


def _svc(request: Request) -> Service:
    return request.app.state.service


def _writer(request: Request) -> str:
    user = caller(request)
    if user is None:
        raise Unauthenticated()
    return user


async def _documents(request: Request) -> list[tuple[str, Any]]:
    """The write's body as documents, read only once the caller is known (401 before anything is
    parsed: an anonymous caller cannot make the server decode a large or hostile body)."""
    _writer(request)
    raw = await read_body(request)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", where="request body") from None
    return parse_documents(text, "request")


def _refusal(svc: Service, user: str, puts: list[tuple[str, Any]], deletes: list[ObjectKey]) -> Refusal | None:
    acls = svc.acls
    if not acls.enabled:
        return None
    snap = svc.queue_meta()
    keys = [(object_key(obj, w), obj) for w, obj in puts] + [(k, svc.objects.objects.get(k, {})) for k in deletes]
    for (kind, ns, name), obj in keys:
        if kind == "Queue":
            target = name if name in snap else str((obj.get("spec") or {}).get("parent") or "root")
            r = acls.check(snap, user, target, "ADMINISTER_QUEUE", "acl_administer_queue")
        elif kind in ("PodGroup", "Pod"):
            queue = _queue_of(svc, kind, ns, name, obj)
            r = acls.check(snap, user, queue, "SUBMIT_APPLICATIONS", "acl_submit_applications",
                           "acl_administer_queue")
        else:
            r = acls.check_admin(user, f"{kind} {name}")
        if r is not None:
            return r
    return None


def _queue_of(svc: Service, kind: str, ns: str, name: str, obj: dict[str, Any]) -> str:
    if kind == "PodGroup":
        return str((obj.get("spec") or {}).get("queue") or "default")
    group = ((obj.get("metadata") or {}).get("annotations") or {}).get(GROUP_KEY, "")
    pg = svc.objects.objects.get(("PodGroup", ns, group), {})
    return str((pg.get("spec") or {}).get("queue") or "default")


async def _edit(request: Request, puts: list[tuple[str, Any]], deletes: list[ObjectKey]) -> Response:
    svc = _svc(request)
    user = _writer(request)
    try:
        return json_response(200, await svc.apply(puts, deletes, lambda: _refusal(svc, user, puts, deletes)))
    except Refused as e:
        return forbidden(e.refusal, yarn=False)


# -- apply, snapshot --------------------------------------------------------------------------------
@router.post("/apply")
async def apply(request: Request) -> Response:
    """Create or replace every object of the kubectl YAML/JSON body, all or none."""
    return await _edit(request, await _documents(request), [])


@router.get("/snapshot")
async def snapshot(request: Request) -> Response:
    """Everything stored, as a kubectl List (what `apportion cycle` reads)."""
    svc = _svc(request)
    return json_response(200, await asyncio.to_thread(svc.read, svc.objects.as_list))


@router.get("/status")
async def status(request: Request) -> Response:
    """The scheduling loop: sessions run so far, the last tick's and the longest tick's duration and the
    last tick's CPU time (ms), by part, its number of writer jobs and the longest job's CPU time (ms),
    while ticks fail why (one line); and the writer: batches committed,
    jobs run in them and its thread's id (the operating system's, for per-thread CPU); and the cycle collector: full collections (Python's own, which scan only what is
    not frozen, and those of the server's schedule, over everything), and the longest collection's
    pause (wall and CPU time) and all of them summed (ms)."""
    svc = _svc(request)
    loop = svc.loop
    return json_response(200, {"ticks": loop.ticks, "tickError": loop.last_error,
                               "lastTickMs": loop.last_tick_ms, "maxTickMs": loop.max_tick_ms,
                               "lastTickCpuMs": loop.last_tick_cpu_ms,
                               "lastTickPartsCpuMs": loop.last_tick_parts_cpu_ms,
                               "lastTickPieces": loop.last_tick_pieces,
                               "lastTickLongestPieceCpuMs": loop.last_tick_longest_cpu_ms,
                               "writer": {"batches": svc.writer.batches, "jobs": svc.writer.jobs_run,
                                          "thread": svc.writer.native_id},
                               "gc": {"fullCollections": gc.get_stats()[2]["collections"],
                                      "scheduledFullCollections": svc.collector.full_collections,
                                      "maxPauseMs": round(svc.collector.max_pause_ms, 1),
                                      "maxPauseCpuMs": round(svc.collector.max_pause_cpu_ms, 1),
                                      "pauseMs": round(svc.collector.pause_ms, 1)}})


# -- reservations (read-only here; YARN's endpoints write them) --------------------------------------
@router.get("/reservations")
async def reservations(request: Request) -> Response:
    """Every reservation of every plan the caller may list (with `--acls`, YARN's list ACL decides, and
    a caller is needed: 401 without), with its allocation."""
    svc = _svc(request)
    user = caller(request)
    if user is None and svc.acls.enabled:
        raise Unauthenticated()

    def collect() -> list[dict[str, Any]]:
        out = []
        for name in svc.listable_plans(user):
            entry = svc.reservations.plans[name]
            for r in sorted(entry.plan.reservations.values(), key=lambda r: r.id):
                info = reservation_info(r, True, entry.plan.dims)
                info["queue"] = name
                out.append(info)
        return out

    return json_response(200, {"reservations": await asyncio.to_thread(svc.read, collect)})


# -- jobs: a PodGroup and its Pods ----------------------------------------------------------------------
def _job(svc: Service, ns: str, name: str) -> dict[str, Any] | None:
    pg = svc.objects.objects.get(("PodGroup", ns, name))
    if pg is None:
        return None
    pods = [v for (k, pns, _), v in sorted(svc.objects.objects.items())
            if k == "Pod" and pns == ns and ((v.get("metadata") or {}).get("annotations") or {}).get(GROUP_KEY) == name]
    out: dict[str, Any] = {"podgroup": pg, "pods": pods, "phase": (pg.get("status") or {}).get("phase", "Pending")}
    why = svc.loop.waiting.get(f"{ns}/{name}")
    if why:
        out["waiting"] = why
    return out


@router.get("/jobs")
async def list_jobs(request: Request) -> Response:
    """Every job (PodGroup with its Pods and, for a waiting one, why it waits)."""
    svc = _svc(request)

    def collect() -> list[dict[str, Any]]:
        return [j for (k, ns, n) in sorted(svc.objects.objects) if k == "PodGroup"
                for j in [_job(svc, ns, n)] if j is not None]

    return json_response(200, {"items": await asyncio.to_thread(svc.read, collect)})


@router.get("/jobs/{namespace}/{name}")
async def get_job(request: Request, namespace: str, name: str) -> Response:
    """One job, with why it waits when it is pending."""
    svc = _svc(request)
    job = await asyncio.to_thread(svc.read, lambda: _job(svc, namespace, name))
    if job is None:
        return json_response(404, {"error": f"job {namespace}/{name} not found"})
    return json_response(200, job)


@router.post("/jobs")
async def create_job(request: Request) -> Response:
    """Create or replace a job: a PodGroup and its Pods (documents or a List)."""
    docs = await _documents(request)
    for w, obj in docs:
        if object_key(obj, w)[0] not in ("PodGroup", "Pod"):
            raise InputError("a job is PodGroups and Pods only", where=f"{w}: kind")
    return await _edit(request, docs, [])


@router.delete("/jobs/{namespace}/{name}")
async def delete_job(request: Request, namespace: str, name: str) -> Response:
    """Delete a PodGroup and its Pods."""
    svc = _svc(request)
    keys: list[ObjectKey] = [("PodGroup", namespace, name)]
    keys += [k for k, v in svc.objects.objects.items() if k[0] == "Pod" and k[1] == namespace
             and ((v.get("metadata") or {}).get("annotations") or {}).get(GROUP_KEY) == name]
    return await _edit(request, [], keys)


# -- queues, nodes, priority classes -------------------------------------------------------------------
def _kind(plural: str) -> str:
    kind = PLURALS.get(plural)
    if kind is None or kind not in KINDS:
        raise InputError(f"unknown resource {plural!r} (one of {', '.join(sorted(PLURALS))})", where="path")
    return kind


@router.get("/{plural}")
async def list_objects(request: Request, plural: str) -> Response:
    """List queues, nodes, priorityclasses, podgroups, pods or configmaps."""
    svc = _svc(request)
    kind = _kind(plural)

    def collect() -> list[dict[str, Any]]:
        return [v for k, v in sorted(svc.objects.objects.items()) if k[0] == kind]

    return json_response(200, {"apiVersion": "v1", "kind": "List", "items": await asyncio.to_thread(svc.read, collect)})


def _key(kind: str, namespace: str | None, name: str) -> ObjectKey:
    """The stored key a path names: a namespaced kind without a namespace is in "default", as kubectl
    has it; a cluster-scoped kind has no namespace."""
    if KINDS[kind]:
        return (kind, namespace or "default", name)
    if namespace is not None:
        raise InputError(f"{kind} is cluster-scoped: name it without a namespace", where="path")
    return (kind, "", name)


async def _get(request: Request, plural: str, namespace: str | None, name: str) -> Response:
    svc = _svc(request)
    key = _key(_kind(plural), namespace, name)
    obj = svc.objects.objects.get(key)
    if obj is None:
        return json_response(404, {"error": f"{key_where(key)} not found"})
    return json_response(200, obj)


async def _replace(request: Request, plural: str, namespace: str | None, name: str) -> Response:
    key = _key(_kind(plural), namespace, name)
    docs = await _documents(request)
    if len(docs) != 1:
        raise InputError("expected exactly one object", where="request body")
    w, obj = docs[0]
    if object_key(obj, w) != key:
        raise InputError(f"expected the {key_where(key)}", where=f"{w}: metadata")
    return await _edit(request, docs, [])


@router.get("/{plural}/{name}")
async def get_object(request: Request, plural: str, name: str) -> Response:
    """One queue, node or priority class (or a podgroup, pod or configmap in the namespace "default")."""
    return await _get(request, plural, None, name)


@router.get("/{plural}/{namespace}/{name}")
async def get_namespaced_object(request: Request, plural: str, namespace: str, name: str) -> Response:
    """One podgroup, pod or configmap."""
    return await _get(request, plural, namespace, name)


@router.post("/{plural}")
async def create_object(request: Request, plural: str) -> Response:
    """Create (or replace) objects of one kind from the body."""
    kind = _kind(plural)
    docs = await _documents(request)
    for w, obj in docs:
        if object_key(obj, w)[0] != kind:
            raise InputError(f"expected kind {kind}", where=f"{w}: kind")
    return await _edit(request, docs, [])


@router.put("/{plural}/{name}")
async def replace_object(request: Request, plural: str, name: str) -> Response:
    """Replace (or create) one queue, node or priority class (or a namespaced object in "default")."""
    return await _replace(request, plural, None, name)


@router.put("/{plural}/{namespace}/{name}")
async def replace_namespaced_object(request: Request, plural: str, namespace: str, name: str) -> Response:
    """Replace (or create) one podgroup, pod or configmap."""
    return await _replace(request, plural, namespace, name)


@router.delete("/{plural}/{name}")
async def delete_object(request: Request, plural: str, name: str) -> Response:
    """Delete one queue, node or priority class, or a namespaced object in "default" (400 if what is
    left would not be valid)."""
    return await _edit(request, [], [_key(_kind(plural), None, name)])


@router.delete("/{plural}/{namespace}/{name}")
async def delete_namespaced_object(request: Request, plural: str, namespace: str, name: str) -> Response:
    """Delete one podgroup, pod or configmap (e.g. a scheduler ConfigMap whose conf is wrong)."""
    return await _edit(request, [], [_key(_kind(plural), namespace, name)])
