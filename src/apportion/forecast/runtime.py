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

from datetime import UTC, datetime
from typing import Any

import numpy as np

from apportion.durations import parse_duration
from apportion.errors import InputError
from apportion.lean_dataclass import dataclass

EXPECTED_END_KEY = "apportion.io/expected-end"
DURATION_KEY = "apportion.io/duration"

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


def parse_assumed(text: str, where: str = "--assume-runtime") -> Assumed:
    """`3600`, `1h`, or a distribution as in docs/scenario.md (`{exponential: 3600}`,
    `{lognormal: {median: 1800, sigma: 1}}`, `{uniform: [60, 600]}`, `{choice: [...]}`); errors name
    `where` (the option or parameter it came from)."""
    s = text.strip()
    if not s.startswith("{"):
        return Assumed(text=s, constant=parse_duration(s, where))
    import yaml  # (here: a forecast without a drawn runtime starts without PyYAML)

    try:
        data = yaml.safe_load(s)
    except yaml.YAMLError as e:
        raise InputError(f"malformed distribution: {str(e).splitlines()[0]}", where=where) from None
    import jsonschema

    from apportion.simulation.scenario_schema import schema

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
