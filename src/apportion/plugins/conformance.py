"""conformance: never evict critical pods or kube-system pods (§6.3)."""

from __future__ import annotations

from apportion.cluster.model import TaskInfo
from apportion.framework import extension as ep
from apportion.framework.interface import Plugin
from apportion.framework.session import Session

CRITICAL = ("system-cluster-critical", "system-node-critical")


class ConformancePlugin(Plugin):
    """Volcano's conformance (`plugins/conformance/conformance.go`): critical pods and kube-system are never victims."""

    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        """Register the evictable filter for preempt and reclaim."""
        ssn.add_fn(ep.PREEMPTABLE, self.name, self.evictable)
        ssn.add_fn(ep.RECLAIMABLE, self.name, self.evictable)

    def evictable(self, evictor: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """PreemptableFn / ReclaimableFn: everything except critical classes and kube-system."""
        victims = [
            c for c in candidates if c.priority_class_name not in CRITICAL and c.namespace != "kube-system"
        ]
        return victims, ep.PERMIT
