"""Names and units between Ray's resources and Kubernetes' (as the scheduler counts them).

Ray names `CPU`, `GPU`, `memory` (bytes) and any custom resource (`ssd: 2`); Kubernetes' scheduler
admits a scalar only when its name has a domain (`nvidia.com/gpu`), so a custom Ray resource `X` is
`ray.io/X` on the apportion side. Ray's bookkeeping resources (`node:<ip>`, `object_store_memory`,
`accelerator_type:*`) are not schedulable work and are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apportion.errors import InputError, QuantityError
from apportion.quantity import parse_quantity_decimal

GPU_NAME = "nvidia.com/gpu"
CUSTOM_PREFIX = "ray.io/"
_SKIPPED_PREFIXES = ("node:", "accelerator_type:")
_SKIPPED = {"object_store_memory"}


def _number(value: float) -> str:
    """A quantity string: integers as integers, fractions as milli-units."""
    if float(value).is_integer():
        return str(int(value))
    return f"{round(value * 1000)}m"


def kube_resources(ray: Mapping[str, float]) -> dict[str, str]:
    """A Ray resource map (a node's total) as Kubernetes quantities."""
    out: dict[str, str] = {}
    for name, value in sorted(ray.items()):
        if name in _SKIPPED or name.startswith(_SKIPPED_PREFIXES):
            continue
        if name == "CPU":
            out["cpu"] = _number(value)
        elif name == "GPU":
            out[GPU_NAME] = _number(value)
        elif name == "memory":
            out["memory"] = str(int(value))
        else:
            out[CUSTOM_PREFIX + name] = _number(value)
    return out


def ray_options(requests: Mapping[str, Any]) -> dict[str, Any]:
    """A pod's requests as Ray `.options(...)` keywords (num_cpus, num_gpus, memory, resources)."""
    opts: dict[str, Any] = {"num_cpus": 0.0}
    custom: dict[str, float] = {}
    for name, raw in requests.items():
        value = float(parse_quantity_decimal(str(raw)))
        if name == "cpu":
            opts["num_cpus"] = value
        elif name == GPU_NAME:
            opts["num_gpus"] = value
        elif name == "memory":
            opts["memory"] = int(value)
        elif name.startswith(CUSTOM_PREFIX):
            custom[name[len(CUSTOM_PREFIX):]] = value
    if custom:
        opts["resources"] = custom
    return opts


def parse_resources(text: str) -> dict[str, str]:
    """`cpu=2,GPU=1,memory=4Gi,ssd=1` (the submit command's --resources) as a pod's requests."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or not name or not value.strip():
            raise InputError(f"expected NAME=QUANTITY, got {part!r}", where="--resources")
        try:
            parse_quantity_decimal(value.strip())
        except QuantityError as e:
            raise InputError(f"{name}: not a quantity: {value.strip()!r}", where="--resources") from e
        low = name.lower()
        if low == "cpu":
            key = "cpu"
        elif low == "gpu":
            key = GPU_NAME
        elif low == "memory":
            key = "memory"
        elif "/" in name:
            key = name
        else:
            key = CUSTOM_PREFIX + name
        out[key] = value.strip()
    return out
