"""The scheduling loop: every schedulePeriod, the plan follower, then one session on the live state.

The live state is the stored objects; each tick builds a session snapshot from them with the
current engine (`run_cycle`), because the live cluster-state cache is not on main yet: when it lands,
the snapshot step is what it replaces, and the Binder/Evictor/StatusUpdater seam below stays.

A tick, on the writer (so it is one of the ordered changes, never racing a request):

1. pods whose `apportion.io/duration` (seconds) elapsed since they started complete (Succeeded);
2. each plan's follower synchronises at the clock (YARN's step): reservations it archives or the
   replanner removes are deleted from the database; each active reservation becomes a child queue of
   its reservable queue (guarantee = deserved = its resources now; capability = the reservable queue's
   when the plan allows over-use, else its resources), and `<queue>-default` gets the rest of the plan;
3. a podgroup in a reservable queue runs in its reservation's queue (`apportion.io/reservation`) while
   the reservation is active, in `<queue>-default` without one, and waits while its reservation is
   not active;
4. one session runs; its binds, evictions and podgroup phases go to the Binder, Evictor and
   StatusUpdater, which, without a real backend, edit the stored objects: a bind sets the pod's node
   and phase Running, an eviction sends the pod back to Pending;
5. everything the tick changed is committed in one transaction.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from apportion.engine import open_session, run_session
from apportion.errors import ApportionError
from apportion.quantity import parse_quantity_decimal
from apportion.reservation.definition import ReservationId
from apportion.reservation.follower import FollowerState
from apportion.resources import Resource
from apportion.service.objects import ObjectKey, key_where

if TYPE_CHECKING:
    from apportion.service.core import Service

log = logging.getLogger(__name__)

RESERVATION_KEY = "apportion.io/reservation"
DURATION_KEY = "apportion.io/duration"
STARTED_KEY = "apportion.io/started-at"
GROUP_KEY = "scheduling.k8s.io/group-name"


class Binder(Protocol):
    """Where a session's binds go."""

    def bind(self, pod: str, node: str) -> None:
        """Bind pod `ns/name` to `node`."""


class Evictor(Protocol):
    """Where a session's evictions go."""

    def evict(self, pod: str) -> None:
        """Evict pod `ns/name`."""


class StatusUpdater(Protocol):
    """Where a session's podgroup phases go."""

    def update_podgroup(self, uid: str, phase: str) -> None:
        """Set podgroup `ns/name`'s phase."""


@dataclass
class ObjectBackend:
    """Binder, Evictor and StatusUpdater of a service without a real backend: they edit stored objects."""

    objects: dict[ObjectKey, dict[str, Any]]
    now_ms: int
    changed: dict[ObjectKey, dict[str, Any]] = field(default_factory=dict)

    def _edit(self, key: ObjectKey) -> dict[str, Any] | None:
        if key in self.changed:
            return self.changed[key]
        obj = self.objects.get(key)
        if obj is None:
            return None
        self.changed[key] = copy.deepcopy(obj)
        return self.changed[key]

    @staticmethod
    def _pod_key(pod: str) -> ObjectKey:
        ns, _, name = pod.partition("/")
        return ("Pod", ns, name)

    def bind(self, pod: str, node: str) -> None:
        """The pod is on `node` and Running from now."""
        obj = self._edit(self._pod_key(pod))
        if obj is None:
            return
        obj.setdefault("spec", {})["nodeName"] = node
        obj.setdefault("status", {})["phase"] = "Running"
        obj.setdefault("metadata", {}).setdefault("annotations", {})[STARTED_KEY] = str(self.now_ms)

    def evict(self, pod: str) -> None:
        """The pod goes back to Pending, off its node."""
        obj = self._edit(self._pod_key(pod))
        if obj is None:
            return
        obj.get("spec", {}).pop("nodeName", None)
        obj.setdefault("status", {})["phase"] = "Pending"
        obj.get("metadata", {}).get("annotations", {}).pop(STARTED_KEY, None)

    def update_podgroup(self, uid: str, phase: str) -> None:
        """Record the podgroup phase the session decided."""
        ns, _, name = uid.partition("/")
        key: ObjectKey = ("PodGroup", ns, name)
        cur = self.objects.get(key)
        if cur is None or (cur.get("status") or {}).get("phase") == phase:
            return
        obj = self._edit(key)
        if obj is not None:
            obj.setdefault("status", {})["phase"] = phase

    def complete_elapsed(self) -> None:
        """Running pods whose duration elapsed succeed."""
        for key, obj in self.objects.items():
            if key[0] != "Pod" or (obj.get("status") or {}).get("phase") != "Running":
                continue
            ann = (obj.get("metadata") or {}).get("annotations") or {}
            if DURATION_KEY not in ann or STARTED_KEY not in ann:
                continue
            try:
                dur_ms = float(parse_quantity_decimal(str(ann[DURATION_KEY]).rstrip("s"))) * 1000
                started = int(ann[STARTED_KEY])
            except (ApportionError, ValueError):
                continue
            if started + dur_ms <= self.now_ms:
                edited = self._edit(key)
                if edited is not None:
                    edited["status"]["phase"] = "Succeeded"


def _res_json(mb: int, vcores: int) -> dict[str, str]:
    return {"cpu": str(vcores), "memory": f"{mb}Mi"}


def reservation_queues(svc: Service, states: dict[str, FollowerState]) -> tuple[list[dict[str, Any]], set[str]]:
    """Queue objects for the plan follower's children, and the ids of the active reservations."""
    out: list[dict[str, Any]] = []
    active: set[str] = set()
    for qname, st in sorted(states.items()):
        parent = svc.objects.objects.get(("Queue", "", qname), {})
        cap = (parent.get("spec") or {}).get("capability")
        overuse = svc.reservations.settings[qname].overuse
        used = [0, 0]
        for share in st.active:
            active.add(str(share.id))
            mb, vc = share.resources
            used[0] += mb
            used[1] += vc
            spec: dict[str, Any] = {"parent": qname, "guarantee": {"resource": _res_json(mb, vc)},
                                    "deserved": _res_json(mb, vc)}
            spec["capability"] = cap if (overuse and cap and not share.gang) else _res_json(mb, vc)
            out.append({"kind": "Queue", "metadata": {"name": str(share.id)}, "spec": spec})
        rest = (max(st.plan_capacity[0] - used[0], 0), max(st.plan_capacity[1] - used[1], 0))
        dspec: dict[str, Any] = {"parent": qname, "deserved": _res_json(*rest)}
        if rest != (0, 0):
            dspec["guarantee"] = {"resource": _res_json(*rest)}
        if cap:
            dspec["capability"] = cap
        out.append({"kind": "Queue", "metadata": {"name": st.default_queue}, "spec": dspec})
    return out, active


class SchedulingLoop:
    """Runs a tick every period on the writer; keeps what the last session said."""

    def __init__(self, svc: Service, period_s: float) -> None:
        self.svc = svc
        self.period_s = period_s
        #: why each waiting job waits (job uid -> message), from the last session
        self.waiting: dict[str, str] = {}
        self.last_report: dict[str, dict[str, Any]] | None = None
        self.last_cluster = Resource()
        self.last_apps: dict[str, int] = {}
        #: every queue of the last session and its parent (reservation queues included)
        self.last_parents: dict[str, str] = {}
        self.ticks = 0

    def _hierarchical(self) -> bool:
        from apportion.framework.conf import default_conf

        conf = self.svc.conf or default_conf()
        return any(opt.enabled("enableHierarchy") for t in conf.tiers for opt in t.plugins)

    def _session_docs(self, states: dict[str, FollowerState]) -> list[tuple[str, Any]]:
        svc = self.svc
        extra, active = reservation_queues(svc, states)
        flat = not self._hierarchical()
        docs: list[tuple[str, Any]] = []
        skipped: set[str] = set()
        for key, obj in sorted(svc.objects.objects.items()):
            if key[0] == "Queue" and key[2] in states and flat:
                # without a hierarchy every queue is a peer: the reservable queue's guarantee is
                # carried by its children (reservation queues and `<queue>-default`), not twice
                obj = copy.deepcopy(obj)
                obj.get("spec", {}).pop("guarantee", None)
                obj.get("spec", {}).pop("deserved", None)
            if key[0] == "PodGroup":
                q = (obj.get("spec") or {}).get("queue")
                if q in states:
                    rid = ((obj.get("metadata") or {}).get("annotations") or {}).get(RESERVATION_KEY)
                    if rid and rid not in active:
                        skipped.add(f"{key[1]}/{key[2]}")
                        self.waiting[f"{key[1]}/{key[2]}"] = (
                            f"submitted to a reservation which is not currently active: {rid}")
                        continue
                    obj = copy.deepcopy(obj)
                    obj["spec"]["queue"] = rid if rid else states[q].default_queue
            if key[0] == "Pod":
                ann = (obj.get("metadata") or {}).get("annotations") or {}
                if f"{key[1]}/{ann.get(GROUP_KEY, '')}" in skipped:
                    continue
            docs.append((key_where(key), obj))
        docs.extend((f"reservation queue {q['metadata']['name']}", q) for q in extra)
        return docs

    def tick(self) -> None:
        """One period: completions, plan followers, one session, everything committed."""
        from apportion.kube.build import build_snapshot

        svc = self.svc
        t0 = time.perf_counter()
        now = svc.clock()
        svc.reservations.set_now(now)
        backend = ObjectBackend(svc.objects.objects, now)
        backend.complete_elapsed()
        states: dict[str, FollowerState] = {}
        removed: list[ReservationId] = []
        for name, system in sorted(svc.reservations.systems.items()):
            st = system.follower.step(now)
            states[name] = st
            removed.extend(st.replanned)
            removed.extend(st.archived)
        svc.persist_removed(removed)
        # the session sees the completions of step 1
        view = dict(svc.objects.objects)
        view.update(backend.changed)
        saved = svc.objects.objects
        svc.objects.objects = view
        try:
            self.waiting = {}
            snap = build_snapshot(self._session_docs(states))
        finally:
            svc.objects.objects = saved
        backend.objects = view
        cluster = Resource()
        for n in snap.nodes:
            cluster.add(n.allocatable)
        apps: dict[str, int] = {}
        for j in snap.jobs.values():
            apps[j.queue] = apps.get(j.queue, 0) + 1
        result = run_session(open_session(snap, svc.conf))
        for pod, node in sorted(result.binds.items()):
            backend.bind(pod, node)
        for pod in result.evictions:
            backend.evict(pod)
        for uid, phase in sorted(result.podgroups.items()):
            backend.update_podgroup(uid, phase)
        for ev in result.events:
            if ev.reason == "Unschedulable":
                self.waiting[ev.object] = ev.message
        svc.edit_objects(backend.changed, [])
        self.last_report = result.queues
        self.last_cluster = cluster
        self.last_apps = apps
        self.last_parents = {q.name: q.parent for q in snap.queues.values()}
        self.ticks += 1
        svc.metrics.session(result, cluster, (time.perf_counter() - t0) * 1000, svc)

    async def run_forever(self) -> None:
        """Tick every period until cancelled; a failing tick is logged and the loop goes on."""
        while True:
            started = time.monotonic()
            try:
                await self.svc.writer.run(self.tick)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the loop must outlive one bad tick; the log says why
                log.exception("scheduling tick failed")
            await asyncio.sleep(max(0.0, self.period_s - (time.monotonic() - started)))
