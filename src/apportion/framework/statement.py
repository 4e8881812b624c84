"""Statements: the transactions of allocate, reclaim and preempt (`framework/statement.go`).

Each operation is applied to the session at once (shares, node idle and readiness change
immediately); commit sends the external actions, discard undoes everything in reverse order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apportion.cluster.model import TaskInfo
from apportion.lean_dataclass import dataclass

if TYPE_CHECKING:
    from apportion.framework.session import Session


@dataclass(slots=True)
class Operation:
    """One recorded operation, replayed by commit or undone by discard."""

    kind: str  # "evict" | "pipeline" | "allocate"
    task: TaskInfo
    reason: str = ""


class Statement:
    """A recorded sequence of Evict / Pipeline / Allocate operations."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.ops: list[Operation] = []

    def allocate(self, task: TaskInfo, row: int) -> None:
        """Statement.Allocate: place the task on the row's node now; bound at commit."""
        self.ssn.do_allocate(task, row)
        self.ops.append(Operation("allocate", task))

    def pipeline(self, task: TaskInfo, row: int, *, after_eviction: bool = False) -> None:
        """Statement.Pipeline: hold the row's node for the task until resources are released there;
        `after_eviction` nominates the node, as preempt and reclaim do."""
        self.ssn.do_pipeline(task, row)
        if after_eviction:
            task.nominated_node = self.ssn.nodes[row].name
        self.ops.append(Operation("pipeline", task))

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Statement.Evict: the task releases its node now; evicted at commit."""
        self.ssn.do_evict(task, reason)
        self.ops.append(Operation("evict", task, reason))

    def merge(self, other: Statement) -> None:
        """Take over the other statement's operations (it is left empty)."""
        self.ops.extend(other.ops)
        other.ops = []

    def commit(self) -> None:
        """Send the external actions: bind every allocation, evict every eviction."""
        for op in self.ops:
            if op.kind == "evict":
                self.ssn.commit_evict(op.task, op.reason)
            elif op.kind == "allocate":
                self.ssn.commit_bind(op.task)
        self.ops = []

    def discard(self) -> None:
        """Undo every operation, last first, restoring the session as it was before the statement."""
        for op in reversed(self.ops):
            if op.kind == "evict":
                self.ssn.undo_evict(op.task)
            else:
                op.task.nominated_node = ""
                self.ssn.undo_allocate(op.task)
        self.ops = []
