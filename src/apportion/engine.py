"""The library entry point: one scheduling cycle over a snapshot, as `apportion cycle` runs it."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import field
from typing import Any

import apportion.actions  # noqa: F401 - importing the package registers the built-in actions
import apportion.plugins  # noqa: F401 - and the built-in plugins
from apportion.cluster.model import JobInfo
from apportion.cluster.snapshot import ROOT_QUEUE, Snapshot
from apportion.collection import collection_paused
from apportion.errors import InternalError
from apportion.framework.closing import ClosedConditions, RawCondition
from apportion.framework.conf import SchedulerConf, default_conf, parse_conf
from apportion.framework.interface import get_action
from apportion.framework.queue_status import QueueStatus
from apportion.framework.session import Event, Session
from apportion.kube import read_conf_file, read_documents
from apportion.kube.build import assemble, parse_objects
from apportion.lean_dataclass import dataclass
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.decisions import Binder, Condition, Dispatched, Evictor, StatusUpdater


@dataclass
class CycleResult:
    """What one session decided, in the shape of the cycle contract."""

    binds: dict[str, str]
    pipelined: dict[str, str]
    evictions: list[str]
    podgroups: dict[str, str]
    #: each reported queue's status (the queue plugin's attributes, as Resources)
    queue_status: dict[str, QueueStatus]
    events: list[Event]
    warnings: list[str] = field(default_factory=list)
    session: Session | None = None
    #: why each evicted task was evicted (the action's reason)
    evict_reasons: dict[str, str] = field(default_factory=dict)
    #: per podgroup, the conditions this session wrote (only podgroups with some)
    conditions: Mapping[str, list[Condition]] = field(default_factory=dict)
    #: binds the Binder refused, pod key -> error (the pod stays pending); filled by `dispatch`
    bind_errors: dict[str, str] = field(default_factory=dict)
    #: the jobs whose close this session computed (None: every job's); every other job closed as it did
    #: in the last session over the same memo: the same phase, and the same conditions but for their
    #: transition id (framework/closing.py)
    recomputed: Sequence[JobInfo] | None = None
    _queues_view: dict[str, dict[str, Any]] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def queues(self) -> dict[str, dict[str, Any]]:
        """The cycle output's `queues` map: a view over `queue_status` in natural units, built once."""
        if self._queues_view is None:
            self._queues_view = {name: st.to_json() for name, st in self.queue_status.items()}
        return self._queues_view

    def to_json(self) -> dict[str, Any]:
        """The result in the cycle contract's JSON shape, keys sorted."""
        return {
            "binds": dict(sorted(self.binds.items())),
            "pipelined": dict(sorted(self.pipelined.items())),
            "evictions": sorted(self.evictions),
            "podgroups": dict(sorted(self.podgroups.items())),
            "queues": {k: self.queues[k] for k in sorted(self.queues)},
            "events": [e.to_json() for e in self.events],
        }


def snapshot_conf(snapshot: Snapshot) -> SchedulerConf | None:
    """The scheduler configuration a ConfigMap in the snapshot carries, parsed (None: there is none).

    Its warnings join the snapshot's once, at the ConfigMap's place, so they read in input order.
    """
    raw = snapshot.conf_text
    if raw is None:
        return None
    conf = parse_conf(raw.text, source=raw.where)
    if not raw.warnings_merged:
        snapshot.warnings[raw.warnings_at:raw.warnings_at] = conf.warnings
        raw.warnings_merged = True
    conf.warnings = []
    return conf


def resolve_conf(snapshot: Snapshot, conf: SchedulerConf | None) -> SchedulerConf:
    """`--conf` overrides a ConfigMap in the snapshot; with neither, Volcano's default."""
    if conf is not None:
        return conf
    return snapshot_conf(snapshot) or default_conf()


def prepare(snapshot: Snapshot, conf: SchedulerConf) -> None:
    """Queues the contract always creates: `default`, and `root` when a plugin runs hierarchically."""
    snapshot.ensure_queue("default")
    if any(opt.enabled("enableHierarchy") for t in conf.tiers for opt in t.plugins):
        snapshot.ensure_queue(ROOT_QUEUE)


def open_session(snapshot: Snapshot, conf: SchedulerConf | None = None, *, session_id: str = "session-1") -> Session:
    """Open a session over the snapshot with the conf (resolved as resolve_conf does) and the queues the
    contract always creates."""
    conf = resolve_conf(snapshot, conf)
    prepare(snapshot, conf)
    return Session(snapshot, conf, session_id=session_id)


def run_session(ssn: Session, *, queue_report: bool = True) -> CycleResult:
    """Run the configured actions in order, close the session and collect the result.

    `queue_report=False` leaves the result's queue status empty, for a caller that never reads it.
    """
    for name in ssn.conf.actions:
        action = get_action(name)
        if action is None:  # the conf was validated against the same registry
            raise InternalError(f"action {name!r} is no longer registered")
        action.execute(ssn)
    pipelined = ssn.pipelined()
    queues = ssn.queue_reports() if queue_report else {}
    ssn.close()
    return CycleResult(
        binds=dict(ssn.binds),
        pipelined=pipelined,
        evictions=sorted(ssn.evictions),
        podgroups=ssn.podgroup_phases(),
        queue_status=queues,
        events=ssn.events,
        warnings=ssn.warnings,
        session=ssn,
        evict_reasons=dict(ssn.evict_reasons),
        conditions=ClosedConditions(ssn.closes, _condition),
        recomputed=ssn.closing,
    )


def _condition(raw: RawCondition) -> Condition:
    return Condition(*raw)


def run_cycle(snapshot: Snapshot, conf: SchedulerConf | None = None) -> CycleResult:
    """One scheduling session over the snapshot (consumed)."""
    return run_session(open_session(snapshot, conf))


@dataclass
class _LastSession:
    """A session's result kept on its cache, with what it was decided from."""

    changes: int
    conf: SchedulerConf | None
    session_id: str
    result: CycleResult


class _Renamed(Mapping[str, list[Condition]]):
    """A session's conditions with their transition id changed to another session's, rewritten as each
    podgroup's are read: a replayed session over 5,000 running gangs would otherwise build 5,000
    condition lists that nothing may read (a dispatch reads each once)."""

    def __init__(self, base: Mapping[str, list[Condition]], old: str, new: str) -> None:
        self.base, self.old, self.new = base, old, new
        self.done: dict[str, list[Condition]] = {}

    def __getitem__(self, uid: str) -> list[Condition]:
        got = self.done.get(uid)
        if got is None:
            got = self.done[uid] = [c if c.transition_id != self.old else
                                    Condition(c.type, c.status, c.reason, c.message, self.new) for c in self.base[uid]]
        return got

    def __iter__(self) -> Iterator[str]:
        return iter(self.base)

    def __len__(self) -> int:
        return len(self.base)


def _replayed(last: _LastSession, session_id: str) -> CycleResult:
    """The kept result as a new session with this id would give it: fresh containers where callers edit
    them (`dispatch` drops refused binds; the queue reports are shared, read-only), and the conditions'
    transition id, the only place a session writes its id, set to the new one."""
    r = last.result
    return CycleResult(
        binds=dict(r.binds), pipelined=dict(r.pipelined), evictions=list(r.evictions),
        podgroups=dict(r.podgroups), queue_status=dict(r.queue_status), events=list(r.events),
        warnings=list(r.warnings), session=r.session, evict_reasons=dict(r.evict_reasons),
        conditions=_Renamed(r.conditions, last.session_id, session_id), recomputed=r.recomputed,
    )


def _decided(r: CycleResult) -> tuple[Any, ...]:
    """Everything a session decided, comparable (the self-check of a replayed session)."""
    return (r.to_json(), r.warnings, r.evict_reasons,
            {uid: [c.to_json() for c in cs] for uid, cs in r.conditions.items()})


def run_cache_session(cache: SchedulerCache, conf: SchedulerConf | None = None, *,
                      session_id: str = "session-1", copy: bool = True, reuse: bool = True) -> CycleResult:
    """One session over the cache's snapshot (the cache is left as it was: decisions leave through
    `dispatch`). Jobs that did not change since the last session are handed out again
    (`SchedulerCache.snapshot(keep=True)`). With APPORTION_CHECK_STATE=1 every kept job is compared with
    a fresh build before the session, and the cache with a rebuild after it.

    A session that opens on a cache in which nothing a snapshot reads has changed since the last one
    (`SchedulerCache.changes`), with the same conf object (not edited since), decides what that one
    decided: its result is given again (`reuse=False` runs it anyway). This is exact because a session here is a function of
    the snapshot, the conf and its id alone: it reads no clock (`Session.now` stays unset, and the
    minRuntime guard then takes the snapshot's newest timestamp), draws nothing at random, and writes
    its id only into conditions, which the replay rewrites. With the self-check on, a replayed session
    is also run in full and the two compared.
    """
    last: _LastSession | None = cache.last_session
    if reuse and copy and last is not None and last.changes == cache.changes and last.conf is conf:
        replayed = _replayed(last, session_id)
        if check.enabled():
            full = run_cache_session(cache, conf, session_id=session_id, reuse=False)
            cache.last_session = last  # the check leaves what it checks as it was
            if _decided(full) != _decided(replayed):
                raise check.StateCheckError(f"{check.ENV}: a session replayed over an unchanged cache decides "
                                            "otherwise than the same session run in full")
        return replayed
    snap = cache.snapshot(copy=copy, keep=copy)
    if check.enabled() and copy:
        check.check_snapshot(cache, snap)
    if copy:
        snap.memo = cache.memo
    result = run_session(open_session(snap, conf, session_id=session_id))
    if check.enabled():
        check.check_cache(cache)
    if copy:
        kept = _replayed(_LastSession(0, conf, session_id, result), session_id)
        cache.last_session = _LastSession(cache.changes, conf, session_id, kept)
    return result


def dispatch(result: CycleResult, binder: Binder, evictor: Evictor, updater: StatusUpdater, *,
             recomputed_only: bool = False, queues: bool = True, conditions: bool = True) -> Dispatched:
    """Send a session's decisions out: evictions first (they free what binds may use), then binds in pod
    order, nominated nodes, PodGroup phases and conditions, and queue status. Refused binds are
    recorded on the result (`bind_errors`) and left out of its binds.

    `recomputed_only` sends only the PodGroups whose close the session computed (`result.recomputed`),
    for an updater that took the last session's over the same memo and reads no transition id: the
    others' phase and conditions are what it was sent then. `queues=False` sends no queue status, for an
    updater that keeps none; `conditions=False` sends every PodGroup's phase with no conditions, for an
    updater that reads none (a session's conditions are made when read: ClosedConditions)."""
    out = Dispatched()
    for key in result.evictions:
        err = evictor.evict(key, result.evict_reasons.get(key, "evict"))
        if err is not None:
            out.evict_errors[key] = err
    out.bind_errors = binder.bind(sorted(result.binds.items()))
    for key in out.bind_errors:
        result.binds.pop(key, None)
    result.bind_errors.update(out.bind_errors)
    for key, node in sorted(result.pipelined.items()):
        updater.nominate(key, node)
    if recomputed_only and result.recomputed is not None:
        sent = sorted((j.uid, result.podgroups[j.uid]) for j in result.recomputed)
    else:
        sent = sorted(result.podgroups.items())
    if conditions:
        for uid, phase in sent:
            updater.update_pod_group(uid, phase, result.conditions.get(uid, []))
    else:
        for uid, phase in sent:
            updater.update_pod_group(uid, phase, ())
    if queues:
        for name, status in sorted(result.queue_status.items()):
            updater.update_queue(name, status)
    return out


def load_cache(paths: list[str]) -> SchedulerCache:
    """A fresh cache holding kubectl YAML or JSON files (or `-`), checked as a whole dump."""
    cache = SchedulerCache()
    # the collections reading allocates were a third of the cost of reading a 10,000-pod dump
    with collection_paused():
        cache.load(read_documents(paths))
    return cache


#: False: `load_inputs` loads the files into a fresh SchedulerCache and takes its snapshot (the reference
#: the tests compare with); True: it assembles the snapshot from the parsed records as that snapshot
#: does, without the cache's tables and pod index, which a one-shot snapshot never reads
LOAD_DIRECT = True


def load_inputs(paths: list[str], conf_path: str | None = None) -> tuple[Snapshot, SchedulerConf]:
    """Load kubectl YAML or JSON files (or `-`) as a fresh cache would hold them, and an optional
    scheduler conf file: the cache's snapshot and the conf in use. A ConfigMap in the snapshot is
    checked (and its warnings kept) even when `conf_path` wins."""
    if LOAD_DIRECT:
        with collection_paused():
            # what `SchedulerCache.load` parses (strictly, as a dump), then what its first snapshot
            # assembles (`snapshot(copy=False)`: no job is kept, the records' tasks go uncopied)
            snapshot = assemble(parse_objects(read_documents(paths)), copy=False, strict=False)
            snapshot.nodes_key = (object(), 1)  # a node key no other snapshot has, as the cache's token
    else:
        # the cache serves this one snapshot only: its tasks go to the snapshot uncopied
        cache = load_cache(paths)
        with collection_paused():
            snapshot = cache.snapshot(copy=False)
    in_snapshot = snapshot_conf(snapshot)
    conf = load_conf_file(conf_path) if conf_path else None
    return snapshot, conf or in_snapshot or default_conf()


def cycle_files(paths: list[str], conf_path: str | None = None) -> CycleResult:
    """`apportion cycle`: the files loaded into a fresh cache, one session over it."""
    with collection_paused():
        snapshot, conf = load_inputs(paths, conf_path)
        # what exists before the session (the dump, its records and the snapshot) is kept out of the
        # collections: frozen before the collector is back on, or all of it would be the youngest
        # generation and the first allocation after would scan it, to free nothing (as would the
        # session's first full collection)
        gc.freeze()
    try:
        return run_cycle(snapshot, conf)
    finally:
        gc.unfreeze()


def load_conf_file(path: str) -> SchedulerConf:
    """A conf file: either the scheduler conf itself or a ConfigMap that carries it."""
    text = read_conf_file(path)
    return parse_conf(text.text, source=text.where)
