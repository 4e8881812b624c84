"""capacity's queue report: the `queues` map of the cycle output (snapshot-format.md's `queues`)."""

from __future__ import annotations

from apportion.framework.queue_status import QueueStatus
from apportion.framework.session import Session
from apportion.plugins.capacity.base import CapacityBase


class Report(CapacityBase):
    """What `apportion cycle` reports per queue capacity keeps attributes for."""

    def queue_report(self, ssn: Session) -> dict[str, QueueStatus] | None:
        """Every queue capacity keeps attributes for (the cycle output's `queues` map is their view)."""
        if not self.tree_ok:
            return None  # no tree, no limits: nothing meaningful to report (the blocking event says why)
        out: dict[str, QueueStatus] = {}
        # a queue whose attributes are still the ledger's reports what it reported last time
        kept = self._ledger.status if self._ledger is not None else None
        shared = self._shared
        for name in sorted(self.attrs):
            a = self.attrs[name]
            state = ssn.queues[name].state if name in ssn.queues else "Open"
            if kept is not None and name in shared:
                hit = kept.get(name)
                if hit is not None and hit[0] is a and hit[1] == state:
                    out[name] = hit[2]
                    continue
            out[name] = st = QueueStatus(
                deserved=a.deserved, allocated=a.allocated, request=a.request, inqueue=a.inqueue,
                elastic=a.elastic, capability=a.capability, real_capability=a.real_capability,
                guarantee=a.guarantee, share=a.share, parent=a.parent,
                state=state,
            )
            if kept is not None and name in shared:
                kept[name] = (a, state, st)
        return out
