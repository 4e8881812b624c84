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

from apportion.errors import InternalError
from apportion.kube.build import KNOWN_KINDS
from apportion.resources import Resource
from apportion.state.cache import SchedulerCache

ENV = "APPORTION_CHECK_STATE"


class StateCheckError(InternalError):
    """The cache differs from a cache rebuilt from its own objects."""


def enabled() -> bool:
    """Whether APPORTION_CHECK_STATE asks for the check."""
    return os.environ.get(ENV, "") not in ("", "0")


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


def rebuilt(cache: SchedulerCache) -> SchedulerCache:
    """A fresh cache fed the same objects as ADDED events (its anomaly reports are dropped: the live
    cache reported them when they happened)."""
    return SchedulerCache.from_objects(cache.objects(), scheduler_names=cache.scheduler_names,
                                       report=lambda line: None)


def check_cache(cache: SchedulerCache) -> None:
    """Raise StateCheckError if the cache is not what a rebuild from its objects gives."""
    mine, fresh = state_of(cache), state_of(rebuilt(cache))
    for part in mine:
        if mine[part] != fresh[part]:
            a, b = mine[part], fresh[part]
            detail = ""
            if isinstance(a, tuple) and isinstance(b, tuple):
                for x, y in zip(a, b):
                    if x != y:
                        detail = f": first difference at {str(x)[:200]} / rebuilt {str(y)[:200]}"
                        break
                else:
                    detail = f": {len(a)} entries, rebuilt {len(b)}"
            raise StateCheckError(f"{ENV}: the cache's {part} differs from a rebuild from its objects{detail}")
