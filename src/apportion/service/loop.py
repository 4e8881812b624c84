"""The scheduling loop: every schedulePeriod, the plan followers, then one session on the live cache.

A tick, on the writer (so it is one of the ordered changes, never racing a request), as writer jobs
that wait for the writer to be idle (writer.py's background jobs), so that requests run between them
instead of waiting for the whole tick: at thousands of active reservations the tick is tens of
milliseconds, and a request waits for one piece at most:

0. in pieces of a bounded number of reservations, the followers bring their rows up to the clock
   (`IncrementalFollower.prepare`: the reservations added, edited or removed since the last step and
   those that started or entered another piece of their allocation; nothing anyone else reads);
1. pods whose `apportion.io/duration` (seconds) elapsed since they were bound complete (Succeeded);
2. each plan's follower synchronises at the clock (YARN's step); reservations it archives or the
   replanner removes leave the database in the same transaction (1-2 one job, `follow`);
3. the followers' queues and the routing of podgroups in reservable queues reach the live cache as
   events (live.py): each active reservation is a child queue of its reservable queue (guarantee =
   deserved = its resources now; capability the reservable queue's when the plan allows over-use,
   else its resources), `<queue>-default` gets the rest of the plan; only the queues and podgroups
   that changed since the last tick are made and sent (publish.py; `publish_parts`: the publisher's
   pass, the queue events `PUBLISH_EVENTS` a job, a last job for the routing);
4. one session runs on the cache's snapshot (`engine.run_cache_session`), and `engine.dispatch` sends
   its decisions to the service's Binder, Evictor and StatusUpdater (`ObjectBackend`), which, without a
   real backend, edit the stored objects: a bind sets the pod's node and phase Running, an eviction
   sends the pod back to Pending, a podgroup gets its phase and conditions;
5. what the tick changed is committed, then sent to the cache as events (4-5 one job, `schedule`).

The follow's and the session's effects are one job each, so what a request meets is the tick before
or after each; the pieces of 0 change nothing a request or a reader sees, and those of 3 before the
last change only what a session reads (the cache's queues), the routing a request's apply uses
coming last.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from apportion.engine import dispatch, run_cache_session
from apportion.errors import ApportionError
from apportion.lean_dataclass import dataclass
from apportion.reservation.follower import FollowerState
from apportion.reservation.follower_inc import IncrementalFollower
from apportion.resources import Resource
from apportion.service.confwatch import hierarchical

# ObjectBackend and the annotation keys are imported from here by the backends and the dashboard
from apportion.service.objectbackend import DURATION_KEY, STARTED_KEY, ObjectBackend, editable
from apportion.service.objects import ObjectKey
from apportion.service.publish import PlanInputs, Published, QueuePublisher

if TYPE_CHECKING:
    from apportion.cluster.model import QueueInfo
    from apportion.framework.conf import SchedulerConf
    from apportion.reservation.system import ReservationSystem
    from apportion.service.confwatch import ConfWatch
    from apportion.service.live import LiveView
    from apportion.service.metrics import ServiceMetrics
    from apportion.service.objects import ClusterObjects
    from apportion.service.reservations import PlanSettings
    from apportion.service.writer import Writer

__all__ = ["DURATION_KEY", "STARTED_KEY", "Followed", "LoopBackend", "LoopHost", "ObjectBackend", "SchedulingLoop",
           "editable", "plan_inputs"]

T = TypeVar("T")

log = logging.getLogger(__name__)

#: reservations one piece of the followers' work ahead of the step brings up to date (each some tens
#: of microseconds), and at most this many pieces a tick (requests add reservations meanwhile; the
#: step does what is left)
PREPARE_BUDGET = 100
MAX_PREPARE_PIECES = 20
#: queue events (a new reservation queue, one changed or gone) a publishing job sends the cache (each
#: some tens of microseconds)
PUBLISH_EVENTS = 100

#: a tick as writer jobs: (the part, the job) handed out; each job's result sent back
TickParts = Generator[tuple[str, Callable[[], Any]], Any, None]


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
        #: the conf the last session ran with (None before the first tick)
        self.last_conf: SchedulerConf | None = None
        #: every queue of the last session and its parent (reservation queues included), made from
        #: `last_queues` when first read (`last_parents`)
        self._parents: tuple[dict[str, QueueInfo], dict[str, str]] | None = None
        #: every queue of the last session as configured (the scheduler info of a queue with no job)
        self.last_queues: dict[str, QueueInfo] = {}
        #: set between ticks: a tick's parts are separate writer jobs, and the cache is whole (every
        #: queue event of the followers sent, every podgroup routed) only before the first or after
        #: the last; a reader of the cache itself (a forecast) takes it under the read lock while set
        self.between = threading.Event()
        self.between.set()
        self.ticks = 0
        #: the clock of the last tick whose session ran (epoch ms; None before the first)
        self.last_tick_clock: int | None = None
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
        #: run on the event loop after every tick, and after each of a tick's writer jobs but the last
        #: (the server sets its cycle collector's schedule: collector.py)
        self.between_ticks: Callable[[], None] = lambda: None
        self.between_parts: Callable[[], None] = lambda: None
        #: the last tick's CPU time by part (ms, the writer thread's: prepare, follow, publish,
        #: schedule), its number of writer jobs, and the longest of them (CPU ms): how long the tick
        #: held the writer at once, which a request arriving then waits for
        self.last_tick_parts_cpu_ms: dict[str, float] = {}
        self.last_tick_pieces = 0
        self.last_tick_longest_cpu_ms = 0.0
        #: writer jobs the ticks ran (the collector tells them from requests)
        self.jobs_run = 0
        self._parts_cpu: dict[str, float] = {}
        self._pieces = 0
        self._longest_cpu = 0.0
        #: time and CPU time (ms) of the pieces ahead of the step, counted into the tick's by `follow`
        self._ahead_ms = 0.0
        self._ahead_cpu_ms = 0.0

    @property
    def last_parents(self) -> dict[str, str]:
        """Every queue of the last session and its parent (reservation queues included): read by the
        scheduler info, not by the loop, so made when read, not on the writer every tick."""
        queues = self.last_queues
        if self._parents is None or self._parents[0] is not queues:
            self._parents = (queues, {q.name: q.parent for q in queues.values()})
        return self._parents[1]

    def prepare(self) -> bool:
        """A tick's piece ahead of its step: the incremental followers bring at most `PREPARE_BUDGET`
        reservations up to the clock (`IncrementalFollower.prepare`). True when none is left."""
        svc = self.svc
        clock = svc.clock()
        budget = PREPARE_BUDGET
        for _, e in sorted(svc.reservations.plans.items()):
            if isinstance(e.follower, IncrementalFollower):
                budget = e.follower.prepare(clock, budget)
                if budget <= 0:
                    return False
        return True

    def parts(self) -> TickParts:
        """A tick as its writer jobs, in order: (the part's name, the job); the job's result is sent
        back into the generator. `tick` runs them at once, `run_tick` as background writer jobs."""
        for _ in range(MAX_PREPARE_PIECES):
            if (yield "prepare", self.prepare):
                break
        followed = yield "follow", self.follow
        followed = yield from self.publish_parts(followed)
        yield "schedule", functools.partial(self.schedule, followed)

    def _timed(self, part: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        """The job, counting its time into the tick's part (and, ahead of the step, into the tick's
        time that `follow` starts from)."""
        def run() -> Any:
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return fn()
            finally:
                ms, cpu = (time.perf_counter() - t0) * 1000, (time.thread_time() - c0) * 1000
                self._parts_cpu[part] = self._parts_cpu.get(part, 0.0) + cpu
                self._pieces += 1
                self._longest_cpu = max(self._longest_cpu, cpu)
                if part == "prepare":
                    self._ahead_ms += ms
                    self._ahead_cpu_ms += cpu
        return run

    def _tick_started(self) -> None:
        self._parts_cpu, self._pieces, self._longest_cpu = {}, 0, 0.0
        self._ahead_ms = self._ahead_cpu_ms = 0.0

    def _tick_ended(self) -> None:
        self.last_tick_parts_cpu_ms = {k: round(v, 1) for k, v in self._parts_cpu.items()}
        self.last_tick_pieces = self._pieces
        self.last_tick_longest_cpu_ms = round(self._longest_cpu, 1)

    def tick(self) -> None:
        """One period: completions, plan followers, one session on the cache, everything committed
        (every part at once, in the caller's thread)."""
        self._tick_started()
        parts = self.parts()
        result: Any = None
        self.between.clear()
        try:
            while True:
                part, fn = parts.send(result)
                result = self._timed(part, fn)()
        except StopIteration:
            pass
        finally:
            self.between.set()
        self._tick_ended()

    def follow(self) -> Followed:
        """A tick's first part: pods whose duration elapsed complete, a real backend's news is taken in,
        the plan followers step. Returns the tick's clock, the followers' states, and the time and CPU
        time this part took (ms)."""
        svc = self.svc
        t0, c0 = time.perf_counter(), time.thread_time()
        ahead_ms, ahead_cpu_ms, self._ahead_ms, self._ahead_cpu_ms = self._ahead_ms, self._ahead_cpu_ms, 0.0, 0.0
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
        return Followed(now, states, ahead_ms + (time.perf_counter() - t0) * 1000,
                        ahead_cpu_ms + (time.thread_time() - c0) * 1000)

    def publish(self, followed: Followed) -> Followed:
        """A tick's second part: the followers' queues and the routing of podgroups in reservable
        queues reach the cache (`publish_parts`, every piece at once)."""
        parts = self.publish_parts(followed)
        result: Any = None
        try:
            while True:
                _, fn = parts.send(result)
                result = fn()
        except StopIteration as done:
            out: Followed = done.value
            return out

    def publish_parts(self, followed: Followed) -> Generator[tuple[str, Callable[[], Any]], Any, Followed]:
        """A tick's second part as writer jobs (a generator as `parts`; it returns the Followed with
        the part's time added). The first job works out what changed (publish.QueuePublisher); the
        queue events then reach the cache `PUBLISH_EVENTS` a job, in the order one job would send
        them; the last job sends the rest (LiveView.follow: the podgroups' routing and the plans'
        default queues). Only sessions read the cache's queues, and none runs between these jobs,
        which a request's apply may separate: it routes a podgroup by what the last job set, as it
        would between two whole publishes.

        A plan dropped since its follower stepped (an apply in between made its queue not
        reservable) is left out; one re-created (its settings changed) is published from the step of
        the plan it replaced, which held the same reservations. A plan dropped, or the state
        reloaded, between the first job and the last is published again by the last."""
        svc = self.svc
        spent = [0.0, 0.0]

        def timed(fn: Callable[[], T]) -> Callable[[], T]:
            def run() -> T:
                t0, c0 = time.perf_counter(), time.thread_time()
                try:
                    return fn()
                finally:
                    spent[0] += (time.perf_counter() - t0) * 1000
                    spent[1] += (time.thread_time() - c0) * 1000
            return run

        def current() -> dict[str, FollowerState]:
            return {name: st for name, st in followed.states.items() if name in svc.reservations.plans}

        # between the jobs this generator runs on the caller's thread (the event loop's): everything
        # it reads of the service is read inside the jobs, on the writer
        def begin() -> tuple[dict[str, FollowerState], Published, int, list[tuple[str, Any]]]:
            states = current()
            if svc.live.loads != self._published_loads:
                # a fresh cache (the state was reloaded) holds none of the queues published before
                self._publisher.reset()
                self._published_loads = svc.live.loads
            out = self._publisher.publish(states, {name: plan_inputs(svc, name, st) for name, st in states.items()})
            return states, out, svc.live.loads, svc.live.queue_events(out.changed)

        states, out, loads, events = yield "publish", timed(begin)
        for i in range(0, len(events), PUBLISH_EVENTS):
            yield "publish", timed(functools.partial(svc.live.send_queues, events[i:i + PUBLISH_EVENTS], loads))

        def finish() -> None:
            now_states, changed, flipped = current(), out.changed, out.flipped
            if svc.live.loads != loads:
                self._publisher.reset()
                self._published_loads = svc.live.loads
                again = self._publisher.publish(now_states, {n: plan_inputs(svc, n, st) for n, st in now_states.items()})
                changed, flipped = again.changed, again.flipped
            elif now_states.keys() != states.keys():
                # a plan went: its queues go too, and every podgroup is routed again (as LiveView.follow
                # does whenever the plans changed)
                again = self._publisher.publish(now_states, {n: plan_inputs(svc, n, st) for n, st in now_states.items()})
                changed, flipped = {**out.changed, **again.changed}, None
            svc.live.follow(svc.objects.objects, now_states, self._publisher.active, changed, flipped)

        yield "publish", timed(finish)
        return replace(followed, ms=followed.ms + spent[0], cpu_ms=followed.cpu_ms + spent[1])

    def schedule(self, followed: Followed) -> None:
        """A tick's last part: one session on the cache, its decisions dispatched and committed."""
        svc = self.svc
        now, first_ms, first_cpu_ms = followed.now, followed.ms, followed.cpu_ms
        t0, c0 = time.perf_counter(), time.thread_time()
        # the conf as Volcano reloads it: `--conf`'s file if it changed, else the stored ConfigMap's;
        # a change of enableHierarchy re-renders the reservable queues before the session
        file_conf, conf = svc.confs.effective(svc.objects.objects)
        self.last_conf = conf
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
            self.last_queues = dict(ssn.queues)
        self.last_report = result.queues
        self.last_cluster = cluster
        self.ticks += 1
        self.last_tick_clock = now
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
        """One tick as the server runs it: its parts (`parts`) as background writer jobs, then
        `between_ticks`. A failing tick is logged as one line once per distinct error (the same error
        every period is one cause, not news; its traceback goes to the debug log), kept in
        `last_error`, and the loop goes on."""
        self._tick_started()
        parts = self.parts()
        self.between.clear()
        try:
            # with a real backend a tick starts tasks and must never run twice, so it is never grouped
            # with other jobs; background jobs never are
            result: Any = None
            first = True
            while True:
                try:
                    part, fn = parts.send(result)
                except StopIteration:
                    break
                if not first:
                    self.between_parts()
                first = False
                self.jobs_run += 1
                result = await self.svc.writer.run(self._timed(part, fn), alone=True, idle=True)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - the loop must outlive one bad tick; the log says why
            self.failed(e)
        else:
            self._tick_ended()
            if self.last_error is not None:
                log.warning("scheduling ticks succeed again")
                self.last_error = None
        finally:
            parts.close()
            self.between.set()
        self.between_ticks()

    def failed(self, e: Exception) -> None:
        """Record a failed tick: logged (one line) only when it is not the error of the tick before."""
        why = str(e) if isinstance(e, ApportionError) else f"{type(e).__name__}: {e}"
        why = " ".join(why.split())
        if why != self.last_error:
            log.error("scheduling tick failed (logged once until it changes): %s", why)
            log.debug("scheduling tick failed", exc_info=e)
        self.last_error = why
