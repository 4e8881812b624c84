"""capacity's queue report: the `queues` map of the cycle output (snapshot-format.md's `queues`)."""

from __future__ import annotations

from apportion.framework.queue_status import QueueStatus, QueueStatuses
from apportion.framework.session import Session
from apportion.plugins.capacity.attrs import QueueAttr
from apportion.plugins.capacity.base import CapacityBase
from apportion.plugins.capacity.ledger import LedgerReport


class Report(CapacityBase):
    """What `apportion cycle` reports per queue capacity keeps attributes for."""

    def queue_report(self, ssn: Session) -> QueueStatuses | None:
        """Every queue capacity keeps attributes for (the cycle output's `queues` map is their view).

        With a ledger (tree.py, `charge_from_ledger`) a queue reports the status it reported last time
        while its attributes are still the ledger's, unchanged, and its state too; the report is then
        made from the ledger's last one, and only the queues that may differ are visited: those this
        session copied, those the last report's session had copied, those whose ledger attributes were
        rebuilt since (docs/semantics.md K12). A change in the session's queues (any QueueInfo replaced,
        added or removed: the states) visits every queue."""
        if not self.tree_ok:
            return None  # no tree, no limits: nothing meaningful to report (the blocking event says why)
        ledger = self._ledger
        if ledger is None:
            out = QueueStatuses()
            for name in sorted(self.attrs):
                out[name] = self._status(ssn, name)
            return out
        last = ledger.report
        rebuilt, ledger.rebuilt = ledger.rebuilt, set()
        if last is not None and len(last.statuses) == len(self.attrs) and last.queues == ssn.queues:
            todo = {*self._owned, *last.owned, *rebuilt}
            out = QueueStatuses(last.statuses, since=last.statuses.token, changed=todo)
            for name in todo:
                out[name] = self._status(ssn, name)
        else:
            out = QueueStatuses()
            for name in sorted(self.attrs):
                out[name] = self._status(ssn, name)
        ledger.report = LedgerReport(out, dict(ssn.queues), list(self._owned))
        return out

    def _status(self, ssn: Session, name: str) -> QueueStatus:
        """The queue's status: the one reported last time while its attributes are the ledger's, unchanged,
        and its state too; else made now (and kept for next time when its attributes are the ledger's)."""
        a: QueueAttr = self.attrs[name]
        state = ssn.queues[name].state if name in ssn.queues else "Open"
        kept = self._ledger.status if self._ledger is not None else None
        shared = kept is not None and name in self._shared
        if shared:
            assert kept is not None
            hit = kept.get(name)
            if hit is not None and hit[0] is a and hit[1] == state:
                return hit[2]
        st = QueueStatus(
            deserved=a.deserved, allocated=a.allocated, request=a.request, inqueue=a.inqueue,
            elastic=a.elastic, capability=a.capability, real_capability=a.real_capability,
            guarantee=a.guarantee, share=a.share, parent=a.parent,
            state=state,
        )
        if shared:
            assert kept is not None
            kept[name] = (a, state, st)
        return st
