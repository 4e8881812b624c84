"""How long pods run: the annotations a forecast reads, and the `--assume-runtime` fallback.

A running pod's remaining time comes from, in order:

1. `apportion.io/expected-end` (RFC 3339) on the pod, else on its PodGroup;
2. `apportion.io/duration` (seconds, or a Go duration such as `1h30m`) on the pod, else on its PodGroup,
   counted from the pod's `status.startTime`;
3. the assumed runtime (`--assume-runtime`): a pod's whole runtime, counted from its start time; a pod
   with no start time is assumed to need all of it from now;
4. none of these: the pod is taken to run past any horizon (it never frees its node).

A pending pod's runtime (once it starts) comes from `apportion.io/duration`, else the assumed runtime.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import yaml

from apportion.errors import InputError

EXPECTED_END_KEY = "apportion.io/expected-end"
DURATION_KEY = "apportion.io/duration"

_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)")
_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def parse_duration(text: str, where: str) -> float:
    """Seconds from `3600`, `3600.5` or a Go duration (`1h30m`, `90s`); InputError naming `where`."""
    s = text.strip()
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
            raise InputError(f"not a duration: {text!r} (seconds, or a Go duration such as 1h30m)",
                             where=where) from None
    if not np.isfinite(v) or v < 0:
        raise InputError(f"a duration must be a finite number of seconds >= 0, got {text!r}", where=where)
    return v


def parse_time(text: str, where: str) -> datetime:
    """An RFC 3339 timestamp (a naive one is taken as UTC); InputError naming `where`."""
    try:
        t = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(f"not an RFC 3339 time: {text!r}", where=where) from None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def try_time(text: str) -> datetime | None:
    """An RFC 3339 timestamp, or None when `text` is not one (creation stamps may be anything)."""
    if not text:
        return None
    try:
        t = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def rfc3339(t: datetime) -> str:
    """UTC, `Z`, whole seconds unless the time has a fraction."""
    u = t.astimezone(UTC)
    if u.microsecond:
        return u.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0") + "Z"
    return u.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Assumed:
    """The `--assume-runtime` value: a constant number of seconds or a scenario-format distribution."""

    text: str
    constant: float | None = None
    dist: Any = None

    @property
    def random(self) -> bool:
        """A distribution (runs are drawn), not a constant."""
        return self.constant is None

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n runtimes (seconds, > 0 for a distribution; a constant is returned as given)."""
        if self.constant is not None:
            return np.full(n, self.constant)
        from apportion.simulation.workload import draw

        out = draw(self.dist, rng, n, "--assume-runtime")
        return np.maximum(out, 0.0)


def parse_assumed(text: str) -> Assumed:
    """`3600`, `1h`, or a distribution as in docs/scenario.md (`{exponential: 3600}`,
    `{lognormal: {median: 1800, sigma: 1}}`, `{uniform: [60, 600]}`, `{choice: [...]}`)."""
    where = "--assume-runtime"
    s = text.strip()
    if not s.startswith("{"):
        return Assumed(text=s, constant=parse_duration(s, where))
    try:
        data = yaml.safe_load(s)
    except yaml.YAMLError as e:
        raise InputError(f"malformed distribution: {str(e).splitlines()[0]}", where=where) from None
    import jsonschema

    from apportion.simulation.scenario import schema

    sch = dict(schema()["$defs"]["distribution"])
    sch["$defs"] = schema()["$defs"]
    try:
        jsonschema.validate(data, sch)
    except jsonschema.ValidationError as e:
        raise InputError(f"not a distribution of docs/scenario.md: {e.message}", where=where) from None
    if isinstance(data, (int, float)):
        return Assumed(text=s, constant=parse_duration(str(data), where))
    if isinstance(data, dict) and "constant" in data:
        return Assumed(text=s, constant=parse_duration(str(data["constant"]), where))
    return Assumed(text=s, dist=data)
