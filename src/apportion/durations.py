"""Durations and timestamps as Kubernetes and Go write them (`90`, `1h30m`, `500ms`; RFC 3339).

One grammar for every place that reads a duration (reclaim's `minRuntime`, forecast's runtimes and
`--horizon`, annotations) so a value that one command accepts is never silently refused by another.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime

from apportion.errors import InputError

_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)")
_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(value: object, where: str) -> float:
    """Seconds from a number, `"3600"`, `"3600.5"` or a Go duration (`"1h30m"`, `"90s"`).

    Raises InputError naming `where` for anything else, and for negative or non-finite values."""
    if isinstance(value, bool):
        raise InputError(f"not a duration: {value!r} (seconds, or a Go duration such as 1h30m)", where=where)
    if isinstance(value, (int, float)):
        v = float(value)
    elif isinstance(value, str):
        s = value.strip()
        try:
            v = float(s)
        except ValueError:
            pos, v = 0, 0.0
            for m in _GO_DURATION.finditer(s):
                if m.start() != pos:
                    break
                v += float(m.group(1)) * _GO_UNITS[m.group(2)]
                pos = m.end()
            if pos != len(s) or not s:
                raise InputError(f"not a duration: {value[:40]!r} (seconds, or a Go duration such as 1h30m)",
                                 where=where) from None
    else:
        raise InputError(f"not a duration: {str(value)[:40]!r} (seconds, or a Go duration such as 1h30m)",
                         where=where)
    if not math.isfinite(v) or v < 0:
        raise InputError(f"a duration must be a finite number of seconds >= 0, got {str(value)[:40]!r}",
                         where=where)
    return v


def parse_time(text: str, where: str) -> datetime:
    """An RFC 3339 timestamp (a naive one is taken as UTC); InputError naming `where`."""
    t = try_time(text)
    if t is None:
        raise InputError(f"not an RFC 3339 time: {text[:40]!r}", where=where)
    return t


def try_time(text: str) -> datetime | None:
    """An RFC 3339 timestamp, or None when `text` is not one (creation stamps may be anything)."""
    if not text:
        return None
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def newest(stamps: Iterable[str], times: dict[str, datetime | None] | None = None) -> datetime | None:
    """The newest of the RFC 3339 stamps that parse; None when none does. `times`, when given, is filled
    in with each stamp's parsed time (None for one that does not parse), for a caller that reads them."""
    best: datetime | None = None
    for s in stamps:
        when = try_time(s)
        if times is not None:
            times[s] = when
        if when is not None and (best is None or when > best):
            best = when
    return best
