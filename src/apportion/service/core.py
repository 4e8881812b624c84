"""The service's state and every change to it: cluster objects, plans, the database behind them.

`Service` opens the database (running the migrations), loads the stored objects (seeding an empty
database with `--cluster` or the built-in default cluster), rebuilds every plan from the stored
reservations without asking the agent or the policy again (YARN's RM recovery), and starts the
writer. Each change is a job on the writer (see writer.py) that edits memory, then commits the same
change in one database transaction before its answer leaves; if the commit fails, memory is reloaded
from the database so both stay equal, and the client gets a 500.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import field
from importlib import resources as ires
from typing import Any, TypeVar

from apportion.cluster.model import QueueInfo
from apportion.engine import snapshot_conf
from apportion.errors import InputError
from apportion.kube.build import parse_object
from apportion.kube.documents import read_documents
from apportion.kube.fields import Fields
from apportion.lean_dataclass import dataclass
from apportion.reservation.api import Response
from apportion.reservation.system import ReservationSystem
from apportion.resources import Resource
from apportion.service.auth import Acls, QueueMeta, Refusal, Refused
from apportion.service.collector import Collector
from apportion.service.confwatch import ConfWatch, hierarchical
from apportion.service.db import default_url, make_engine, migrate
from apportion.service.live import LiveView
from apportion.service.loop import LoopBackend, SchedulingLoop
from apportion.service.metrics import ServiceMetrics
from apportion.service.objects import ClusterObjects, ObjectKey, object_key
from apportion.service.reservations import (
    PlanSettings,
    PlanShape,
    cluster_dims,
    configure_plans,
    to_plan_vector,
)
from apportion.service.seed import scenario_cluster
from apportion.service.store import SqlStore
from apportion.service.writer import RWLock, Writer
from apportion.simulation.reservations import promised

log = logging.getLogger(__name__)
T = TypeVar("T")



def wall_ms() -> int:
    """The service clock: epoch milliseconds."""
    return int(time.time() * 1000)


def default_cluster_path() -> str:
    """The cluster a new database starts with."""
    return str(ires.files("apportion.service").joinpath("default-cluster.yaml"))


@dataclass
class ServiceConfig:
    """How `apportion serve` was started."""

    db_url: str = field(default_factory=default_url)
    conf_path: str | None = None
    cluster_path: str | None = None
    #: YARN's ACLs (off by default, as in YARN)
    acls: bool = False
    #: users who pass every ACL (YARN's yarn.admin.acl)
    admins: tuple[str, ...] = ()
    #: run the scheduling loop (tests of the REST layer alone may turn it off)
    loop: bool = True
    #: a scenario whose workload is played against the service, and its clock speed
    scenario_path: str | None = None
    speed: float = 1.0
    #: Volcano's --schedule-period (the conf file has no such key), seconds
    schedule_period: float = 1.0
    clock: Callable[[], int] = wall_ms
    #: a real backend the loop binds and evicts through (`--backend ray`); None: the stored objects
    backend: LoopBackend | None = None


def plan_capacities(nodes: list[Resource], queues: Mapping[str, QueueInfo], plans: dict[str, PlanSettings]
                    ) -> dict[str, PlanShape]:
    """Each reservable queue's plan: its settings, its capacity (what the tree promises the queue,
    `simulation.reservations.promised`, as the simulator's plans; for a queue promised nothing, the
    cluster: the nodes' allocatable summed; never more than the cluster) and its dimensions
    (memory-mb, vcores and every other resource type of the nodes, see reservations.cluster_dims)."""
    dims = cluster_dims(nodes)
    total = [0] * len(dims)
    for a in nodes:
        for i, x in enumerate(to_plan_vector(a, dims)):
            total[i] += x
    out: dict[str, PlanShape] = {}
    for name, settings in plans.items():
        base = promised(queues[name])
        cap = tuple(total) if base is None else to_plan_vector(base, dims)
        out[name] = (settings, tuple(min(c, t) for c, t in zip(cap, total)), dims)
    return out


class Service:
    """Everything `apportion serve` holds, and the jobs that change it."""

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self.clock = config.clock
        self.engine = make_engine(config.db_url)
        migrate(self.engine)
        self.store = SqlStore(self.engine)
        #: the conf of each session, reloaded as Volcano reloads it (confwatch.py)
        self.confs = ConfWatch(config.conf_path)
        self.start_ms = self.clock()
        self.acls = Acls(config.acls, config.admins)
        self.metrics = ServiceMetrics()
        self._queue_cache: tuple[int, dict[str, QueueMeta]] | None = None
        self._dry_queues: dict[str, QueueInfo] = {}
        self.lock = RWLock()
        self.live = LiveView(False)  # _load sets whether the conf is hierarchical
        self.objects = ClusterObjects()
        #: new-reservation runs on the event loop, not the writer: this guards the id sequence against a reload
        self._sequence_lock = threading.Lock()
        self.reservations = ReservationSystem(self.start_ms, self.store)
        #: each plan's settings (a change re-creates the plan)
        self.plan_settings: dict[str, PlanSettings] = {}
        #: queues holding stored reservations that are no longer reservable (kept in the database)
        self.orphans: list[str] = []
        self._load()
        if config.cluster_path and self.store.get_meta("seeded") is not None:
            self._apply_now(read_documents([config.cluster_path]), [])
        # Refused and InputError end a job before it changed anything, or with memory and its writes
        # agreeing (a tick whose session refused the conf): they never undo the jobs grouped with it
        self.writer = Writer(self.lock, self.store.transaction, self._reload_after_failure, (Refused, InputError),
                             hold=self.store.hold)
        self.loop = SchedulingLoop(self, config.schedule_period, config.backend)
        #: the cycle collector's schedule while the server runs (started by the app's lifespan)
        self.collector = Collector(lambda: self.writer.jobs_run - self.loop.jobs_run)

    # -- loading and recovery -------------------------------------------------------------------
    def _load(self) -> None:
        objs = self.store.load_objects()
        if not objs and self.store.get_meta("seeded") is None:
            if self.config.cluster_path is None and self.config.scenario_path:
                path, docs = self.config.scenario_path, scenario_cluster(self.config.scenario_path)
            else:
                path = self.config.cluster_path or default_cluster_path()
                docs = read_documents([path])
            new = ClusterObjects().edited(docs, [])[0]
            with self.engine.begin() as conn:
                self.store.put_objects(conn, [(key, body, v) for v, (key, body) in enumerate(sorted(new.items()))])
                self.store.set_meta(conn, "seeded", path)
            objs = new
        plans, snap = ClusterObjects.check(objs, {}, conf=False)
        try:
            snapshot_conf(snap)  # what `conf=False` left out: if it fails, edits get the whole check
            valid = True
        except InputError:
            valid = False
        self.objects = ClusterObjects(objs, valid)
        self.objects.version = len(objs)
        with self._sequence_lock:
            # an id handed out since the last commit is in memory only: never hand it out again
            handed_out = self.reservations.sequence
            self.reservations = ReservationSystem(self.start_ms, self.store)
            # YARN's RM recovery: the sequence and id records read back, each plan's reservations
            # re-added without a policy check, with their stored allocations and acceptance times
            self.reservations.sequence = max(self.store.sequence(), handed_out)
        self.plan_settings = {}
        self.reservations.queue_of = self.store.queue_of()
        self.configure_plans(plan_capacities([n.allocatable for n in snap.nodes], snap.queues, plans))
        self.live.hierarchical = hierarchical(self.confs.effective(self.objects.objects)[1])
        self.live.load(self.objects.objects, set(self.reservations.plans))
        self.orphans = sorted(self.store.reservation_queues() - set(self.reservations.plans))
        if self.orphans:
            log.warning("stored reservations of queues that are no longer reservable: %s", ", ".join(self.orphans))

    def configure_plans(self, queues: dict[str, PlanShape]) -> None:
        """The plans follow the reservable queues (see reservations.configure_plans)."""
        configure_plans(self.reservations, self.plan_settings, queues, self.store, self.clock())

    def set_now(self, now_ms: int) -> None:
        """The plans' clock: the validator's now and the acceptance time of what is added next."""
        for e in self.reservations.plans.values():
            e.plan.now = now_ms

    def _reload_after_failure(self) -> None:
        """A commit failed: memory goes back to what the database holds."""
        log.error("a database commit failed; reloading the state from the database")
        self._load()

    # -- reservations ---------------------------------------------------------------------------
    async def reservation(self, op: str, user: str | None, body: Any,
                          check: Callable[[], Refusal | None] | None = None) -> Response:
        """Run one of the five YARN handlers: submit, update and delete on the writer (what they change
        reaches the store inside one transaction, committed before returning), list as a reader,
        new-reservation at once (`new_reservation`). `check` (the ACLs) runs in the same job, on the
        same state as the handler."""
        def job() -> Response:
            if check is not None and (refusal := check()) is not None:
                raise Refused(refusal)
            self.set_now(self.clock())
            handler = getattr(self.reservations, op)
            return self.committed(lambda: handler(user, body))

        if op == "new_reservation":
            return self.new_reservation(user)
        if op == "list":
            def read() -> Response:
                if check is not None and (refusal := check()) is not None:
                    raise Refused(refusal)
                return self.reservations.list(user, body)

            return await asyncio.to_thread(self.read, read)
        return await self.writer.run(job)

    def new_reservation(self, user: str | None) -> Response:
        """YARN's new-reservation, answered at once: it only takes the next id of the sequence, which YARN
        keeps in memory (the store writes it with the next commit, see SqlStore.put_sequence). The
        id's check against known ids reads dicts the writer changes; each lookup is atomic."""
        with self._sequence_lock:
            for _ in range(100):
                try:
                    return self.reservations.new_reservation(user)
                except RuntimeError:  # the writer added or dropped a plan during the check: check again
                    continue
            return self.reservations.new_reservation(user)

    def committed(self, fn: Callable[[], T]) -> T:
        """Run a change with every store write in one transaction; on any failure memory is reloaded
        from the database (so both stay equal) and the error goes on to the caller. Inside a writer
        batch the change joins the batch's transaction, and the writer does both."""
        if self.store.in_transaction():
            return fn()
        try:
            with self.store.transaction():
                return fn()
        except Exception:
            self._reload_after_failure()
            raise

    # -- cluster objects ------------------------------------------------------------------------
    def _apply_now(self, puts: list[tuple[str, dict[str, Any]]], deletes: list[ObjectKey]) -> dict[str, Any]:
        """Check the edit on the whole set, commit it, then make it the state (all or none)."""
        new, plans, nodes, queues = self.objects.edited(puts, deletes)
        old = self.objects.objects
        # only what the request named can have changed
        changed = [k for k in {object_key(o, w) for w, o in puts} if old.get(k) != new.get(k)]
        gone = [k for k in deletes if k in old]

        def write() -> None:
            with self.store.transaction() as conn:
                base = self.objects.version
                self.objects.version += len(changed)
                self.store.put_objects(conn, [(k, new[k], base + i + 1) for i, k in enumerate(changed)])
                for k in gone:
                    self.objects.version += 1
                    self.store.delete_object(conn, k)
                self.store.set_meta(conn, "seeded", "yes")

        self.committed(write)
        self.objects.replace(new)
        self.configure_plans(plan_capacities(nodes, queues, plans))
        self.live.changed(new, changed + gone, set(self.reservations.plans))
        return {"changed": [list(k) for k in sorted(changed)], "deleted": [list(k) for k in sorted(gone)]}

    async def apply(self, puts: list[tuple[str, dict[str, Any]]], deletes: list[ObjectKey],
                    check: Callable[[], Refusal | None] | None = None) -> dict[str, Any]:
        """Apply (create or replace) and delete objects, all or none; InputError names what is wrong.
        `check` (the ACLs) runs in the same job, on the state the edit applies to."""
        def job() -> dict[str, Any]:
            if check is not None and (refusal := check()) is not None:
                raise Refused(refusal)
            return self._apply_now(puts, deletes)

        return await self.writer.run(job)

    def edit_objects(self, puts: dict[ObjectKey, dict[str, Any]], deletes: list[ObjectKey]) -> None:
        """Writer-side edit from the scheduling loop (binds, evictions, completions); committed."""
        if not puts and not deletes:
            return

        def write() -> None:
            with self.store.transaction() as conn:
                base = self.objects.version
                self.objects.version += len(puts)
                self.store.put_objects(conn, [(k, body, base + i + 1) for i, (k, body) in enumerate(puts.items())])
                for k in deletes:
                    self.objects.version += 1
                    self.store.delete_object(conn, k)

        self.committed(write)
        self.objects.objects.update(puts)
        for k in deletes:
            self.objects.objects.pop(k, None)
        if any(k[0] == "Node" for k in [*puts, *deletes]):
            # a real backend's nodes joined or left: the plans' capacities follow the cluster's size
            # the whole check, as the set changed without one: until it passes, edits get it too
            self.objects.valid = False
            plans, snap = ClusterObjects.check(self.objects.objects, {})
            self.objects.valid = True
            self.configure_plans(plan_capacities([n.allocatable for n in snap.nodes], snap.queues, plans))
        self.live.changed(self.objects.objects, list(puts) + list(deletes), self.live.reservable)

    def generation(self) -> int:
        """Bumped by every change to the objects (keys the cached snapshot)."""
        return self.objects.version

    def listable_plans(self, user: str | None) -> list[str]:
        """The plans whose reservations `user` may read, by name: YARN's list checks
        `acl_list_reservations` (or `acl_administer_reservations`) on the plan's queue, and a listing of
        every plan shows those it would answer. With ACLs on, a caller nobody named reads none (YARN's
        list answers 401 without a user); with ACLs off, every plan."""
        names = sorted(self.reservations.plans)
        if not self.acls.enabled:
            return names
        if user is None:
            return []
        snap = self.queue_meta()
        return [n for n in names if self.acls.check(snap, user, self.reservations.plans[n].plan.queue,
                                                    "LIST_RESERVATIONS", "acl_list_reservations",
                                                    "acl_administer_reservations") is None]

    def queue_meta(self) -> dict[str, QueueMeta]:
        """Every stored queue's parent and annotations (for the ACLs); cached per generation."""
        gen = self.generation()
        if self._queue_cache is None or self._queue_cache[0] != gen:
            out: dict[str, QueueMeta] = {}
            for (kind, _, name), obj in self.objects.objects.items():
                if kind == "Queue":
                    spec = obj.get("spec") or {}
                    ann = (obj.get("metadata") or {}).get("annotations") or {}
                    out[name] = QueueMeta(name, str(spec.get("parent") or ""), {str(k): str(v) for k, v in ann.items()})
            self._queue_cache = (gen, out)
        return self._queue_cache[1]

    def queue_report(self) -> tuple[dict[str, dict[str, Any]], Resource, dict[str, int], dict[str, str]]:
        """The last session's queue report, cluster size, jobs per queue and queue parents (a dry
        session when the loop has not run yet)."""
        if self.loop.last_report is not None:
            return self.loop.last_report, self.loop.last_cluster, self.loop.last_apps, self.loop.last_parents
        from apportion.engine import run_cache_session

        result = run_cache_session(self.live.cache, self.confs.file_conf())
        if result.session is not None:
            result.session.release()  # kept by the cache: no cycle left to freeze (loop.schedule)
        cluster = Resource()
        for _, node in self.live.cache.records.nodes.values():
            cluster.add(node.allocatable)
        apps: dict[str, int] = {}
        parents: dict[str, str] = {}
        if result.session is not None:
            for j in result.session.jobs.values():
                apps[j.queue] = apps.get(j.queue, 0) + 1
            parents = {q.name: q.parent for q in result.session.queues.values()}
            self._dry_queues = dict(result.session.queues)
        return result.queues, cluster, apps, parents

    def queue_specs(self) -> dict[str, QueueInfo]:
        """Every queue of the session `queue_report` answers from, as configured (call it after
        `queue_report`: before the loop's first tick it is the dry session's)."""
        specs = self.loop.last_queues if self.loop.last_report is not None else self._dry_queues
        if self.live.hierarchical or not self.live.reservable:
            return specs
        # a flat session sees a reservable queue without its guarantee (its children carry it):
        # YARN's view of the plan queue is the queue as configured
        out = dict(specs)
        for name in self.live.reservable:
            obj = self.objects.objects.get(("Queue", "", name))
            if obj is not None:
                out[name] = parse_object("Queue", Fields(obj, f"Queue {name}"))
        return out

    # -- readers --------------------------------------------------------------------------------
    def read(self, fn: Callable[[], Any]) -> Any:
        """Run a reader under the read side of the lock (never sees a job half-done)."""
        with self.lock.read():
            return fn()

    def close(self) -> None:
        """Stop the writer, store the id sequence handed out since the last commit, release the database."""
        self.writer.stop()
        try:
            with self.store.transaction():
                pass  # a transaction writes the pending sequence
        except Exception as e:  # noqa: BLE001 - stopping anyway; the next start's ids carry a new start time
            log.warning("the reservation id sequence was not stored at stop: %s", e)
        self.engine.dispose()


def input_error_message(e: InputError) -> str:
    """The one-line message of an InputError."""
    return str(e)
