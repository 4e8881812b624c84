"""Exact equality of records (the self-check's, and the cache's test of whether an event changed a
record at all)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from apportion.resources import Resource

_GETTERS: dict[type, tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]] = {}


def same(a: Any, b: Any) -> bool:
    """Exact equality of two records, field by field (TaskInfo compares by identity, Resource with a
    tolerance: neither will do here)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, Resource):
        return a.cpu == b.cpu and a.memory == b.memory and a.scalars == b.scalars
    got = _GETTERS.get(type(a))
    if got is None:
        if not (dataclasses.is_dataclass(a) and not isinstance(a, type)):
            if isinstance(a, (list, tuple)):
                return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
            if isinstance(a, dict):
                return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
            try:
                return bool(a == b)
            except ValueError:  # arrays: a record never holds one, so a difference
                return False
        names = tuple(f.name for f in dataclasses.fields(a))
        got = _GETTERS[type(a)] = (names, attrgetter(*names) if len(names) > 1 else (lambda o: (getattr(o, names[0]),)))
    names, get = got
    ta, tb = get(a), get(b)
    try:
        # the fast path: plain ==, then the Resources again exactly (their == has a tolerance)
        if ta == tb:
            return all(same(x, y) for x, y in zip(ta, tb) if isinstance(x, Resource))
    except ValueError:
        pass
    return all(same(x, y) for x, y in zip(ta, tb))
