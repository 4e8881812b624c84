"""Joining a Ray cluster, for the service (`serve --backend ray`) and for `apportion sweep`.

Without an address Ray's `ray.init()` does not start a Ray of its own when another Ray instance runs
on the machine: it joins the last one started there (`/tmp/ray/ray_current_cluster`), whoever started
it. apportion's "no address: a local Ray" means a new local Ray, so it asks for one by name (`local`);
`RAY_ADDRESS`, Ray's own way to name a cluster, is still honoured.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any


def init_address(address: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The address to give `ray.init`: the one asked for, else `RAY_ADDRESS`, else a new local Ray."""
    env = os.environ if environ is None else environ
    return address or env.get("RAY_ADDRESS") or "local"


def connect(address: str | None, **kwargs: Any) -> bool:
    """Join (or start) the Ray cluster unless this process is already connected; whether it joined
    here (then it is this caller's to leave with `ray.shutdown()`)."""
    import ray

    if ray.is_initialized():
        return False
    ray.init(address=init_address(address), log_to_driver=False, configure_logging=False, **kwargs)
    return True
