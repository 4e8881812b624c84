"""The self-check: a cache compared with one rebuilt from scratch from the same objects.

With APPORTION_CHECK_STATE=1 the engine runs `check_cache` after every session; any difference raises
StateCheckError naming the first one. The canonical form covers every record field by field, the order
of each kind (it decides task order in a job, hence outcomes) and every index the cache keeps.
"""

from __future__ import annotations

import dataclasses
import os
from enum import Enum
from typing import Any

from apportion.cluster.snapshot import Snapshot
from apportion.errors import InternalError
from apportion.kube.build import KNOWN_KINDS, assemble, parse_object
from apportion.kube.fields import Fields
from apportion.resources import Resource
from apportion.state.cache import SchedulerCache
from apportion.state.equality import same
from apportion.state.events import ADDED, WatchEvent

ENV = "APPORTION_CHECK_STATE"


class StateCheckError(InternalError):
    """The cache differs from a cache rebuilt from its own objects."""


#: os.environ's own mapping and the variable's key in it (CPython on POSIX: bytes), read directly:
#: `os.environ.get` encodes the key and, for a variable that is unset (the usual case), raises and
#: catches a KeyError, about a microsecond, and the hot paths ask thousands of times a forecast.
#: Setting or deleting the variable through os.environ (as the tests do) writes this mapping.
_ENVIRON: dict[Any, Any] | None = getattr(os.environ, "_data", None)
_KEY: Any = os.environ.encodekey(ENV) if _ENVIRON is not None else ENV
_OFF: tuple[Any, ...] = (None, b"", b"0", "", "0")


def enabled() -> bool:
    """Whether APPORTION_CHECK_STATE asks for the check."""
    if _ENVIRON is not None:
        return _ENVIRON.get(_KEY) not in _OFF
    return os.environ.get(ENV, "") not in ("", "0")  # an os.environ without its own mapping


def canonical(value: Any) -> Any:
    """A comparable form of a record: dataclasses field by field, Resources by value, dicts in order."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__,
                tuple((f.name, canonical(getattr(value, f.name))) for f in dataclasses.fields(value)))
    if isinstance(value, Resource):
        return ("Resource", value.cpu, value.memory, tuple(sorted(value.scalars.items())))
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return tuple((k, canonical(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(canonical(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(canonical(v) for v in value))
    return value


def state_of(cache: SchedulerCache) -> dict[str, Any]:
    """Everything a cache derives from its objects, in canonical form."""
    out: dict[str, Any] = {}
    for kind in KNOWN_KINDS:
        table = cache.records.table(kind)
        out[kind] = tuple((key, where, canonical(rec)) for key, (where, rec) in table.items())
        out[f"{kind}:raw"] = tuple(cache.raw[kind])
    out["pods_by_node"] = tuple(sorted((n, tuple(sorted(keys))) for n, keys in cache.pods_by_node.items()))
    return out


#: id(object) -> (object, its record parsed on its own): objects are never
#: edited once sent (outcomes send edited copies), so an object parsed at one check needs no parse at
#: the next; the records here are independent of the cache's, so a record a session touched still shows
_PARSED: dict[int, tuple[dict[str, Any], Any]] = {}


def rebuilt(cache: SchedulerCache, *, reparse: bool = False) -> SchedulerCache:
    """A fresh cache fed the same objects as ADDED events (its anomaly reports are dropped: the live
    cache reported them when they happened). Records that came with their events are reused, unless
    `reparse`: then every object is parsed, which also checks that each supplied record is what its
    object says."""
    fresh = SchedulerCache(scheduler_names=cache.scheduler_names, report=lambda line: None)
    for ev in cache.events(reparse=reparse):
        fresh.apply(ev)
    return fresh


def _rebuilt_fast(cache: SchedulerCache) -> SchedulerCache:
    """rebuilt(), with each object parsed once across checks."""
    fresh = SchedulerCache(scheduler_names=cache.scheduler_names, report=lambda line: None)
    seen: set[int] = set()
    for ev in cache.events():
        rec = ev.record
        if rec is None:
            hit = _PARSED.get(id(ev.object))
            if hit is None or hit[0] is not ev.object:
                hit = _PARSED[id(ev.object)] = (ev.object, parse_object(ev.kind, Fields(ev.object, ev.where)))
            rec = hit[1]
            seen.add(id(ev.object))
        fresh.apply(WatchEvent(ADDED, ev.object, ev.where, rec))
    if len(_PARSED) > 2 * len(seen) + 1024:
        for k in [k for k in _PARSED if k not in seen]:
            del _PARSED[k]
    return fresh


def check_cache(cache: SchedulerCache, *, reparse: bool = False) -> None:
    """Raise StateCheckError if the cache is not what a rebuild from its objects gives."""
    other = rebuilt(cache, reparse=True) if reparse else _rebuilt_fast(cache)
    for kind in KNOWN_KINDS:
        mine, theirs = cache.records.table(kind), other.records.table(kind)
        if list(mine) != list(theirs) or list(cache.raw[kind]) != list(other.raw[kind]):
            raise StateCheckError(f"{ENV}: the cache's {kind} keys differ from a rebuild from its objects: "
                                  f"{list(mine)[:5]} / rebuilt {list(theirs)[:5]}")
        for key, (where, rec) in mine.items():
            w2, rec2 = theirs[key]
            if where != w2 or not same(rec, rec2):
                raise StateCheckError(f"{ENV}: the cache's {kind} differs from a rebuild from its objects at "
                                      f"{key}: {str(canonical(rec))[:300]} / rebuilt {str(canonical(rec2))[:300]}")
    if cache.pods_by_node != other.pods_by_node:
        raise StateCheckError(f"{ENV}: the cache's pods_by_node differs from a rebuild from its objects")
    if cache.pod_index() != other.pod_index():
        raise StateCheckError(f"{ENV}: the cache's index of pods by PodGroup differs from a rebuild from its objects")


def check_snapshot(cache: SchedulerCache, snap: Snapshot) -> None:
    """Raise StateCheckError unless every job of `snap` (taken with `keep=True`, before a session ran
    on it) equals a fresh build from the cache's records, field by field and task by task; what
    plugins derived from a job, kube-scheduler's cached requests and a simulator's `started_at` are left
    out, as they are meant to be carried."""
    check_delta(cache, snap)
    fresh = assemble(cache.records, scheduler_names=cache.scheduler_names, copy=True, strict=False)
    if snap.warnings != fresh.warnings:
        raise StateCheckError(f"{ENV}: the snapshot's warnings differ from a fresh build's: {snap.warnings[:3]} / "
                              f"fresh {fresh.warnings[:3]}")
    if [t.key for t in snap.orphan_tasks] != [t.key for t in fresh.orphan_tasks] or not all(
            _same_task(a, b) for a, b in zip(snap.orphan_tasks, fresh.orphan_tasks)):
        raise StateCheckError(f"{ENV}: the snapshot's tasks outside jobs differ from a fresh build's")
    if list(snap.queues) != list(fresh.queues) or [n.name for n in snap.nodes] != [n.name for n in fresh.nodes]:
        raise StateCheckError(f"{ENV}: the snapshot's queues or nodes differ from a fresh build's")
    if any(n.tasks for n in snap.nodes):
        # (nodes handed out again as they are, `nodes_unseen`, as much as those emptied)
        raise StateCheckError(f"{ENV}: a node of the snapshot holds tasks before any session ran on it")
    if list(snap.jobs) != list(fresh.jobs):
        raise StateCheckError(f"{ENV}: the snapshot's jobs differ from a fresh build: "
                              f"{list(snap.jobs)[:5]} / fresh {list(fresh.jobs)[:5]}")
    for uid, ji in snap.jobs.items():
        other = fresh.jobs[uid]
        for f in dataclasses.fields(ji):
            if f.name in ("derived", "log", "notes"):
                continue
            a, b = getattr(ji, f.name), getattr(other, f.name)
            if f.name == "tasks":
                ok = list(a) == list(b) and all(_same_task(a[k], b[k]) for k in a)
            else:
                ok = same(a, b)
            if not ok:
                raise StateCheckError(f"{ENV}: job {uid} kept from the last snapshot differs from a fresh "
                                      f"build in {f.name}")


def check_delta(cache: SchedulerCache, snap: Snapshot) -> None:
    """Raise StateCheckError unless the snapshot's jobs delta (docs/semantics.md K17) holds: every job
    of the snapshot before whose task statuses or phase moved since was logged, every job the delta does
    not name is that snapshot's object, the gone jobs are those that left; and the cache's set of
    PodGroups that pods name but the records lack is the pods' index less the PodGroups."""
    if cache._groupless != cache._group_pods.keys() - cache.records.podgroups.keys():
        raise StateCheckError(f"{ENV}: the cache's PodGroups named by pods but missing differ from the pods' "
                              "index less the PodGroups")
    delta = snap.jobs_delta
    if delta is None:
        return
    handed, cache.handed = cache.handed, (delta.snapshot, {uid: (ji, ji.version, ji.phase)
                                                           for uid, ji in snap.jobs.items()})
    if handed is None or delta.since is None or handed[0] != delta.since:
        return
    before = handed[1]
    drained = cache.last_drained
    for uid, (ji, version, phase) in before.items():
        if (ji.version != version or ji.phase is not phase) and uid not in drained:
            raise StateCheckError(f"{ENV}: job {uid} changed since the last snapshot without being logged "
                                  "(JobInfo.log)")
    for uid, ji in snap.jobs.items():
        if uid not in delta.changed and (uid not in before or before[uid][0] is not ji):
            raise StateCheckError(f"{ENV}: job {uid} is not the last snapshot's object, yet the snapshot's "
                                  "delta does not name it")
    if delta.gone != before.keys() - snap.jobs.keys():
        raise StateCheckError(f"{ENV}: the snapshot's delta names gone jobs {sorted(delta.gone)[:5]}, the jobs "
                              f"that left are {sorted(before.keys() - snap.jobs.keys())[:5]}")


def _same_task(a: Any, b: Any) -> bool:
    # kube_requests is derived and carried; started_at is the simulator's clock, set after assembly;
    # initial_status is written at open; vec and cols follow from the request and the node table's
    # columns, and session open clears them when the columns change (framework/open_state.place_full)
    return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
               if f.name not in _CARRIED)


_CARRIED = ("kube_requests", "started_at", "vec", "cols", "initial_status")
