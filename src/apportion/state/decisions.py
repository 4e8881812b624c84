"""What leaves a session: the Binder, Evictor and StatusUpdater interfaces (Volcano's `cache.Binder`,
`cache.Evictor`, `cache.StatusUpdater`).

`cycle` and `shadow` use the in-memory implementations (`state.memory`), which send every decision
back into a SchedulerCache as a watch event; the simulator, the service and the Ray backend implement
the same protocols.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import Protocol

from apportion.lean_dataclass import dataclass
from apportion.resources import Resource


@dataclass(frozen=True, slots=True)
class Condition:
    """A PodGroup condition as a session writes it."""

    type: str
    status: str
    reason: str
    message: str
    transition_id: str

    def to_json(self) -> dict[str, str]:
        """The PodGroup status.conditions entry."""
        return {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message,
                "transitionID": self.transition_id}


class Binder(Protocol):
    """Binds pods to nodes. A bind may fail per pod: the pod stays pending and its error is kept (as
    Volcano's resync does with a task whose bind failed)."""

    def bind(self, binds: Sequence[tuple[str, str]]) -> dict[str, str]:
        """Bind each (pod key, node name), in order; return pod key -> error for the binds that failed."""
        ...


class Evictor(Protocol):
    """Evicts pods (reclaim, preempt), with the reason the session gave."""

    def evict(self, pod: str, reason: str) -> str | None:
        """Evict the pod; an error message if that failed, else None."""
        ...


class QueueReport(Protocol):
    """What a StatusUpdater reads of a queue's status at the end of a session."""

    @property
    def allocated(self) -> Resource:
        """What the queue's jobs hold."""
        ...


class StatusUpdater(Protocol):
    """Writes what a session decided about objects it does not bind or evict."""

    def update_pod_group(self, key: str, phase: str, conditions: Sequence[Condition]) -> None:
        """Set a PodGroup's status.phase and the conditions this session wrote."""
        ...

    def nominate(self, pod: str, node: str) -> None:
        """Record a pipelined pod's nominated node (status.nominatedNodeName)."""
        ...

    def update_queue(self, name: str, status: QueueReport) -> None:
        """Write a Queue's status as the queue plugin reports it (`status.allocated` is what Volcano
        writes; an updater that stores nothing pays nothing for the conversion)."""
        ...


@dataclass
class Dispatched:
    """What happened to a session's decisions on the way out."""

    bind_errors: dict[str, str] = field(default_factory=dict)
    evict_errors: dict[str, str] = field(default_factory=dict)
