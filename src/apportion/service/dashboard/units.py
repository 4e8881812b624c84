"""How the dashboard shows an amount of a resource: cores, GiB, GPUs (natural units in, text out)."""

from __future__ import annotations

import math
from typing import Any

from apportion.resources import CPU, GPU, MEMORY, PODS
from apportion.web.charts import number, resource_label, resource_unit

GIB = 1024.0**3


def dims_of(names: list[str]) -> list[str]:
    """The resources worth a bar, in a fixed order: cpu, memory, GPUs, then other scalars by name."""
    first = [d for d in (CPU, MEMORY, GPU) if d in names]
    return first + sorted(d for d in names if d not in first and d != PODS)


def label(dim: str) -> str:
    """A resource's short name in the page."""
    return resource_label(dim)


def unit(dim: str) -> str:
    """The unit the numbers of a resource are shown in."""
    return resource_unit(dim)


def value(v: Any) -> float | None:
    """A natural-unit amount as a float: infinity for unlimited (the queue report writes "unlimited"),
    None for anything else (absent)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if v == "unlimited":
        return math.inf
    return None


def shown(dim: str, v: float | None) -> str:
    """An amount as the page prints it (memory in GiB, the rest as is), unlimited as "∞", not set as "-"."""
    if v is not None and dim == MEMORY:
        v = v / GIB
    return number(v)
