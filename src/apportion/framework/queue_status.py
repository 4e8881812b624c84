"""A queue's status after a session, as the queue plugin keeps it: Resources, not display strings.

Follows the per-queue attributes of Volcano's proportion and capacity plugins (`queueAttr` in
`plugins/proportion/proportion.go` and `plugins/capacity/capacity.go`: deserved, allocated, request,
inqueue, elastic, capability, realCapability, guarantee, share) and the status Volcano writes back to
the Queue object. The plugins return these from `Plugin.queue_report`; `CycleResult.queue_status`
holds them; `apportion cycle`'s `queues` map (docs/snapshot-format.md) is `to_json`, a view over them.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from apportion.lean_dataclass import dataclass
from apportion.resources import Resource


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """One queue's attributes at the end of a session.

    The Resources are the plugin's own, not copies: a session's attributes are never changed after it
    closes (the next session builds its own or, for capacity's queues that no change reached, shares
    the ledger's, which nothing changes), and capacity's deserved, guarantee and capabilities are shared
    by every session that takes its tree from the memo. Read them; never modify them.
    """

    deserved: Resource
    allocated: Resource
    request: Resource
    inqueue: Resource
    elastic: Resource
    #: None when the queue sets no capability (proportion) or has none (capacity)
    capability: Resource | None
    real_capability: Resource | None
    guarantee: Resource
    share: float
    #: spec.parent, else `root` (the webhook's default); "" for root itself
    parent: str
    state: str

    def to_json(self) -> dict[str, Any]:
        """The queue's entry in the cycle output's `queues` map: natural units, absent dimensions absent."""
        return {
            "deserved": _natural(self.deserved),
            "allocated": _natural(self.allocated),
            "request": _natural(self.request),
            "inqueue": _natural(self.inqueue),
            "elastic": _natural(self.elastic),
            "capability": _natural(self.capability),
            "realCapability": _natural(self.real_capability),
            "guarantee": _natural(self.guarantee),
            "share": self.share,
            "parent": self.parent,
            "state": self.state,
        }


def _natural(r: Resource | None) -> dict[str, float | str]:
    return {} if r is None else r.to_natural()


class QueueStatuses(dict[str, QueueStatus]):
    """Queue name -> status, as a session reports its queues, with what differs from an earlier report:
    every queue not named in `changed` has the very status object (and the same key set) that the report
    whose `token` is `since` had. `since` None: no such report is known, read every queue."""

    def __init__(self, statuses: dict[str, QueueStatus] | None = None, *, since: object | None = None,
                 changed: Collection[str] = ()) -> None:
        super().__init__(statuses or {})
        #: this report's identity, for a later report's `since`
        self.token = object()
        self.since = since
        self.changed = changed

    def copy_as(self) -> QueueStatuses:
        """A copy that is the same report: the same token, `since` and `changed`."""
        out = QueueStatuses(self, since=self.since, changed=self.changed)
        out.token = self.token
        return out
