"""The scheduling loop: every schedulePeriod, the plan followers, then one session on the live cache.

A tick, on the writer (so it is one of the ordered changes, never racing a request), as three jobs so
that requests waiting meanwhile run between them (1-2, `follow`; 3, `publish`; 4-5, `schedule`): at
thousands of active reservations each is tens of milliseconds, and a request waits for at most one:

1. pods whose `apportion.io/duration` (seconds) elapsed since they were bound complete (Succeeded);
2. each plan's follower synchronises at the clock (YARN's step); reservations it archives or the
   replanner removes leave the database in the same transaction;
3. the followers' queues and the routing of podgroups in reservable queues reach the live cache as
   events (live.py): each active reservation is a child queue of its reservable queue (guarantee =
   deserved = its resources now; capability the reservable queue's when the plan allows over-use,
   else its resources), `<queue>-default` gets the rest of the plan; only the queues and podgroups
   that changed since the last tick are made and sent (publish.py);
4. one session runs on the cache's snapshot (`engine.run_cache_session`), and `engine.dispatch` sends
   its decisions to the service's Binder, Evictor and StatusUpdater (`ObjectBackend`), which, without a
   real backend, edit the stored objects: a bind sets the pod's node and phase Running, an eviction
   sends the pod back to Pending, a podgroup gets its phase and conditions;
5. what the tick changed is committed, then sent to the cache as events.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from apportion.engine import dispatch, run_cache_session
from apportion.errors import ApportionError
from apportion.quantity import parse_quantity_decimal
from apportion.reservation.follower import FollowerState
from apportion.resources import Resource
from apportion.service.confwatch import hierarchical
from apportion.service.objects import ObjectKey
from apportion.service.publish import PlanInputs, QueuePublisher
from apportion.state.decisions import Condition, QueueReport
from apportion.state.memory import pod_group_status

if TYPE_CHECKING:
    from apportion.cluster.model import QueueInfo
    from apportion.reservation.system import ReservationSystem
    from apportion.service.confwatch import ConfWatch
    from apportion.service.live import LiveView
    from apportion.service.metrics import ServiceMetrics
    from apportion.service.objects import ClusterObjects
    from apportion.service.reservations import PlanSettings
    from apportion.service.writer import Writer

T = TypeVar("T")

log = logging.getLogger(__name__)

DURATION_KEY = "apportion.io/duration"
STARTED_KEY = "apportion.io/started-at"


class LoopHost(Protocol):
    """What the loop needs of the service (core.Service), named here so the loop does not import it."""

    confs: ConfWatch
    objects: ClusterObjects
    reservations: ReservationSystem
    plan_settings: dict[str, PlanSettings]
    metrics: ServiceMetrics
    writer: Writer
    live: LiveView

    def clock(self) -> int:
        """The service clock (epoch ms)."""

    def set_now(self, now_ms: int) -> None:
        """Set the plans' clock."""

    def committed(self, fn: Callable[[], T]) -> T:
        """Run a change with its store writes in one transaction."""

    def edit_objects(self, puts: dict[ObjectKey, dict[str, Any]], deletes: list[ObjectKey]) -> None:
        """Commit edits of stored objects."""


def editable(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of a stored object whose `spec`, `status`, `metadata` and `metadata.annotations` are its own
    (the levels a Binder, Evictor or StatusUpdater edits; deeper values stay shared and are never edited
    in place). A deep copy of each pod bound or completed was a tenth of a tick at 10,000 pods."""
    out = dict(obj)
    for part in ("spec", "status"):
        out[part] = dict(obj.get(part) or {})
    meta = out["metadata"] = dict(obj.get("metadata") or {})
    meta["annotations"] = dict(meta.get("annotations") or {})
    return out


@dataclass
class ObjectBackend:
    """Binder, Evictor and StatusUpdater (state.decisions) of a service without a real backend: they
    edit copies of the stored objects, which the tick then commits and sends to the cache."""

    objects: dict[ObjectKey, dict[str, Any]]
    now_ms: int
    changed: dict[ObjectKey, dict[str, Any]] = field(default_factory=dict)
    evictions: list[tuple[str, str]] = field(default_factory=list)
    #: each running pod's end (ms; None: it has no duration), kept across ticks while the stored pod is
    #: the same object: reading 10,000 pods' annotations every tick was a tenth of it
    ends: dict[ObjectKey, tuple[dict[str, Any], float | None]] = field(default_factory=dict)

    def _edit(self, key: ObjectKey) -> dict[str, Any] | None:
        if key in self.changed:
            return self.changed[key]
        obj = self.objects.get(key)
        if obj is None:
            return None
        self.changed[key] = editable(obj)
        return self.changed[key]

    @staticmethod
    def _pod_key(pod: str) -> ObjectKey:
        ns, _, name = pod.partition("/")
        return ("Pod", ns, name)

    def bind(self, binds: Sequence[tuple[str, str]]) -> dict[str, str]:
        """Binder: each pod is on its node and Running from now; a pod or node that is gone fails."""
        errors: dict[str, str] = {}
        for pod, node in binds:
            key = self._pod_key(pod)
            obj = self._edit(key) if ("Node", "", node) in self.objects else None
            if obj is None:
                errors[pod] = f"pod {pod} or node {node} no longer exists"
                continue
            obj.setdefault("spec", {})["nodeName"] = node
            obj.setdefault("status", {})["phase"] = "Running"
            obj.setdefault("metadata", {}).setdefault("annotations", {})[STARTED_KEY] = str(self.now_ms)
        return errors

    def evict(self, pod: str, reason: str) -> str | None:
        """Evictor: the pod goes back to Pending, off its node (nothing else would recreate it)."""
        obj = self._edit(self._pod_key(pod))
        if obj is None:
            return f"pod {pod} no longer exists"
        obj.get("spec", {}).pop("nodeName", None)
        obj.setdefault("status", {})["phase"] = "Pending"
        obj.get("metadata", {}).get("annotations", {}).pop(STARTED_KEY, None)
        self.evictions.append((pod, reason))
        return None

    def update_pod_group(self, key: str, phase: str, conditions: Sequence[Condition]) -> None:
        """StatusUpdater: the podgroup's phase and the conditions this session wrote."""
        ns, _, name = key.partition("/")
        okey: ObjectKey = ("PodGroup", ns, name)
        cur = self.objects.get(okey)
        if cur is None:
            return
        status = pod_group_status(cur, phase, conditions)
        if status is not None:
            obj = self._edit(okey)
            if obj is not None:
                obj["status"] = status

    def nominate(self, pod: str, node: str) -> None:
        """StatusUpdater: a pipelined pod's nominated node is not stored (the next session decides again)."""

    def update_queue(self, name: str, status: QueueReport) -> None:
        """StatusUpdater: queue status is served by /ws/v1/cluster/scheduler and /metrics, not stored
        (it would be a database write per queue per period)."""

    def complete_elapsed(self) -> None:
        """Running pods whose duration elapsed succeed."""
        ends = self.ends
        for key, obj in self.objects.items():
            if key[0] != "Pod":
                continue
            known = ends.get(key)
            if known is None or known[0] is not obj:
                known = ends[key] = (obj, _end_ms(obj))
            if known[1] is not None and known[1] <= self.now_ms:
                edited = self._edit(key)
                if edited is not None:
                    edited["status"]["phase"] = "Succeeded"
        for key in [k for k in ends if k not in self.objects]:
            del ends[key]


def _end_ms(obj: dict[str, Any]) -> float | None:
    """When a running pod with `apportion.io/duration` completes (ms), else None."""
    if (obj.get("status") or {}).get("phase") != "Running":
        return None
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    if DURATION_KEY not in ann or STARTED_KEY not in ann:
        return None
    try:
        return int(ann[STARTED_KEY]) + float(parse_quantity_decimal(str(ann[DURATION_KEY]).rstrip("s"))) * 1000
    except (ApportionError, ValueError):
        return None




def plan_inputs(svc: LoopHost, qname: str, st: FollowerState) -> PlanInputs:
    """What a plan's queues are made from besides its reservations (publish.PlanInputs)."""
    parent = svc.objects.objects.get(("Queue", "", qname), {})
    cap = (parent.get("spec") or {}).get("capability")
    return (cap, svc.plan_settings[qname].overuse, svc.reservations.plans[qname].plan.dims, st.plan_capacity,
            st.default_queue)


class LoopBackend(Protocol):
    """A real backend (backends/, e.g. Ray): what it observed reaches the stored objects at the start
    of each tick, and a session's decisions leave through the Binder/Evictor/StatusUpdater it makes."""

    def observe(self, objects: dict[ObjectKey, dict[str, Any]], now_ms: int,
                commit: Callable[[dict[ObjectKey, dict[str, Any]], list[ObjectKey]], None]) -> None:
        """Commit (as object edits) what changed on the backend: nodes, finished tasks."""

    def decisions(self, objects: dict[ObjectKey, dict[str, Any]], now_ms: int) -> ObjectBackend:
        """The Binder, Evictor and StatusUpdater of one session (its edits are committed after)."""


@dataclass(frozen=True)
class Followed:
    """What a tick's first part leaves for the others: its clock, each plan's follower state, and the
    time and CPU time the tick took so far (ms)."""

    now: int
    states: dict[str, FollowerState]
    ms: float
    cpu_ms: float


class SchedulingLoop:
    """Runs a tick every period on the writer; keeps what the last session said."""

    def __init__(self, svc: LoopHost, period_s: float, backend: LoopBackend | None = None) -> None:
        self.svc = svc
        self.period_s = period_s
        #: a real backend, or None: the stored objects are the cluster (ObjectBackend)
        self.backend = backend
        #: why each waiting job waits (job uid -> message), from the last session
        self.waiting: dict[str, str] = {}
        self.last_report: dict[str, dict[str, Any]] | None = None
        self.last_cluster = Resource()
        self.last_apps: dict[str, int] = {}
        #: every queue of the last session and its parent (reservation queues included)
        self.last_parents: dict[str, str] = {}
        #: every queue of the last session as configured (the scheduler info of a queue with no job)
        self.last_queues: dict[str, QueueInfo] = {}
        self.ticks = 0
        #: the last tick's duration and the longest so far, ms (served by /api/v1/status)
        self.last_tick_ms = 0.0
        self.max_tick_ms = 0.0
        #: the CPU time the last tick took (ms, the writer thread's): unlike the duration, it does not
        #: grow when other processes take the machine's cores
        self.last_tick_cpu_ms = 0.0
        #: the followers' queues as last published (made again only where they changed)
        self._publisher = QueuePublisher()
        self._published_loads = -1
        self._ends: dict[ObjectKey, tuple[dict[str, Any], float | None]] = {}
        #: why the last tick failed (one line), None while ticks succeed; served by /api/v1/status
        self.last_error: str | None = None
        #: run on the event loop after every tick (the server sets its cycle collector's schedule)
        self.between_ticks: Callable[[], None] = lambda: None

    def tick(self) -> None:
        """One period: completions, plan followers, one session on the cache, everything committed."""
        self.schedule(self.publish(self.follow()))

    def follow(self) -> Followed:
        """A tick's first part: pods whose duration elapsed complete, a real backend's news is taken in,
        the plan followers step. Returns the tick's clock, the followers' states, and the time and CPU
        time this part took (ms)."""
        svc = self.svc
        t0, c0 = time.perf_counter(), time.thread_time()
        now = svc.clock()
        svc.set_now(now)
        done = ObjectBackend(svc.objects.objects, now, ends=self._ends)
        done.complete_elapsed()
        svc.edit_objects(done.changed, [])
        if self.backend is not None:
            self.backend.observe(svc.objects.objects, now, svc.edit_objects)
        # the followers' archiving and replanning delete reservations: one transaction for them
        states: dict[str, FollowerState] = svc.committed(
            lambda: {name: e.follower.step(now) for name, e in sorted(svc.reservations.plans.items())})
        return Followed(now, states, (time.perf_counter() - t0) * 1000, (time.thread_time() - c0) * 1000)

    def publish(self, followed: Followed) -> Followed:
        """A tick's second part: the followers' queues and the routing of podgroups in reservable
        queues reach the cache. A plan dropped since its follower stepped (an apply in between made its
        queue not reservable) is left out; one re-created (its settings changed) is published from the
        step of the plan it replaced, which held the same reservations."""
        svc = self.svc
        t0, c0 = time.perf_counter(), time.thread_time()
        states = {name: st for name, st in followed.states.items() if name in svc.reservations.plans}
        if svc.live.loads != self._published_loads:
            # a fresh cache (the state was reloaded) holds none of the queues published before
            self._publisher.reset()
            self._published_loads = svc.live.loads
        out = self._publisher.publish(states, {name: plan_inputs(svc, name, st) for name, st in states.items()})
        svc.live.follow(svc.objects.objects, states, out.active, out.changed, out.flipped)
        return replace(followed, ms=followed.ms + (time.perf_counter() - t0) * 1000,
                       cpu_ms=followed.cpu_ms + (time.thread_time() - c0) * 1000)

    def schedule(self, followed: Followed) -> None:
        """A tick's last part: one session on the cache, its decisions dispatched and committed."""
        svc = self.svc
        now, first_ms, first_cpu_ms = followed.now, followed.ms, followed.cpu_ms
        t0, c0 = time.perf_counter(), time.thread_time()
        # the conf as Volcano reloads it: `--conf`'s file if it changed, else the stored ConfigMap's;
        # a change of enableHierarchy re-renders the reservable queues before the session
        file_conf, conf = svc.confs.effective(svc.objects.objects)
        svc.live.set_hierarchical(hierarchical(conf), svc.objects.objects)
        result = run_cache_session(svc.live.cache, file_conf)
        if result.session is not None:
            # the cache keeps the session until the next one: released, it is no reference cycle, so
            # when it goes it is freed by reference counting even once the server froze it out of the
            # cycle collections (collector.py); nothing here consults its plugins
            result.session.release()
        backend = (self.backend.decisions(svc.objects.objects, now) if self.backend is not None
                   else ObjectBackend(svc.objects.objects, now))
        dispatch(result, backend, backend, backend)
        svc.edit_objects(backend.changed, [])
        waiting = dict(svc.live.hidden)
        for ev in result.events:
            if ev.reason == "Unschedulable":
                waiting[ev.object] = ev.message
        for pod, err in result.bind_errors.items():
            waiting.setdefault(pod, f"bind failed: {err}")
        self.waiting = waiting
        cluster = Resource()
        for _, node in svc.live.cache.records.nodes.values():
            cluster.add(node.allocatable)
        ssn = result.session
        if ssn is not None:
            self.last_apps = {}
            for j in ssn.jobs.values():
                self.last_apps[j.queue] = self.last_apps.get(j.queue, 0) + 1
            self.last_parents = {q.name: q.parent for q in ssn.queues.values()}
            self.last_queues = dict(ssn.queues)
        self.last_report = result.queues
        self.last_cluster = cluster
        self.ticks += 1
        took = first_ms + (time.perf_counter() - t0) * 1000
        self.last_tick_ms = round(took, 1)
        self.max_tick_ms = max(self.max_tick_ms, self.last_tick_ms)
        self.last_tick_cpu_ms = round(first_cpu_ms + (time.thread_time() - c0) * 1000, 1)
        svc.metrics.session(result, took, svc.reservations.plans, now)

    async def run_forever(self) -> None:
        """Tick every period until cancelled (`run_tick`)."""
        while True:
            started = time.monotonic()
            await self.run_tick()
            await asyncio.sleep(max(0.0, self.period_s - (time.monotonic() - started)))

    async def run_tick(self) -> None:
        """One tick as the server runs it: its three parts as writer jobs, then `between_ticks`. A
        failing tick is logged as one line once per distinct error (the same error every period is one
        cause, not news; its traceback goes to the debug log), kept in `last_error`, and the loop goes
        on."""
        try:
            # three writer jobs, so that requests waiting meanwhile run between the parts instead of
            # after the whole tick; with a real backend a tick starts tasks and must never run twice,
            # so it is not grouped with other jobs
            alone = self.backend is not None
            followed = await self.svc.writer.run(self.follow, alone=alone)
            followed = await self.svc.writer.run(functools.partial(self.publish, followed), alone=alone)
            await self.svc.writer.run(functools.partial(self.schedule, followed), alone=alone)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - the loop must outlive one bad tick; the log says why
            self.failed(e)
        else:
            if self.last_error is not None:
                log.warning("scheduling ticks succeed again")
                self.last_error = None
        self.between_ticks()

    def failed(self, e: Exception) -> None:
        """Record a failed tick: logged (one line) only when it is not the error of the tick before."""
        why = str(e) if isinstance(e, ApportionError) else f"{type(e).__name__}: {e}"
        why = " ".join(why.split())
        if why != self.last_error:
            log.error("scheduling tick failed (logged once until it changes): %s", why)
            log.debug("scheduling tick failed", exc_info=e)
        self.last_error = why
