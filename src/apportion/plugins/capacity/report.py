"""capacity's queue report: the `queues` map of the cycle output (snapshot-format.md's `queues`)."""

from __future__ import annotations

from typing import Any

from apportion.framework.session import Session
from apportion.plugins import queue_common as qc
from apportion.plugins.capacity.base import CapacityBase


class Report(CapacityBase):
    """What `apportion cycle` reports per queue capacity keeps attributes for."""

    def queue_report(self, ssn: Session) -> dict[str, dict[str, Any]] | None:
        """The `queues` map of the cycle output: every queue capacity keeps attributes for."""
        if not self.tree_ok:
            return None  # no tree, no limits: nothing meaningful to report (the blocking event says why)
        out: dict[str, dict[str, Any]] = {}
        for name in sorted(self.attrs):
            a = self.attrs[name]
            out[name] = {
                "deserved": qc.natural(a.deserved),
                "allocated": qc.natural(a.allocated),
                "request": qc.natural(a.request),
                "inqueue": qc.natural(a.inqueue),
                "elastic": qc.natural(a.elastic),
                "capability": qc.natural(a.capability),
                "realCapability": qc.natural(a.real_capability),
                "guarantee": qc.natural(a.guarantee),
                "share": a.share,
                "parent": a.parent,
                "state": ssn.queues[name].state if name in ssn.queues else "Open",
            }
        return out
