"""What leaves a simulated session: the simulator's Binder, Evictor and StatusUpdater.

A decision changes the simulated cluster (a bound task runs and will finish, an evicted one stops and
restarts later, a PodGroup's phase carries over), which reaches the scheduler cache as watch events
at the next session.
"""

from __future__ import annotations

from collections.abc import Sequence

from apportion.cluster.model import (
    PENDING,
    RUNNING,
    PodGroupPhase,
)
from apportion.simulation.jobs import EV_FINISH
from apportion.simulation.lifecycle import TaskLifecycle
from apportion.state.decisions import Condition, QueueReport


class Outlet:
    """The simulator's Binder, Evictor and StatusUpdater: decisions change the simulated cluster, which
    reaches the cache as events at the next session."""

    def __init__(self, sim: TaskLifecycle) -> None:
        self.sim = sim
        self.phase_changed = False

    def bind(self, binds: Sequence[tuple[str, str]]) -> dict[str, str]:
        """A bound task runs on its node from now and finishes `duration` later."""
        sim = self.sim
        errors: dict[str, str] = {}
        for key, node in binds:
            sj, t = sim.task_by_key[key]
            if t.status is not PENDING:
                errors[key] = f"task is {t.status.value}, not Pending"
                continue
            sim._set_status(sj, t, RUNNING)
            t.node = node
            t.start = sim.now
            sim.node_tasks[node].add((sj.uid, t.index))
            if sj.first_start is None:
                sj.first_start = sim.now
            sj.last_start = sim.now
            sim._push(sim.now + sj.spec.duration, EV_FINISH, t.name, (sj.uid, t.index, t.attempt))
        return errors

    def evict(self, pod: str, reason: str) -> str | None:
        """The victim stops (a gang stops whole); its work is lost."""
        sj, t = self.sim.task_by_key[pod]
        if t.status is not RUNNING:
            return f"task is {t.status.value}, not Running"
        self.sim._evict(sj, t, reason)
        return None

    def update_pod_group(self, key: str, phase: str, conditions: Sequence[Condition]) -> None:
        """Phases carry over to the next session (Pending -> Inqueue -> Running)."""
        sj = self.sim.active.get(key)
        if sj is not None and phase != sj.phase.value:  # most phases stay: convert only a changed one
            self.phase_changed = True
            sj.phase = PodGroupPhase(phase)
            self.sim._dirty.add(key)
            self.sim._early_dirty.add(key)

    def nominate(self, pod: str, node: str) -> None:
        """Pipelined tasks stay pending; a later session places them once the victims are gone."""

    def update_queue(self, name: str, status: QueueReport) -> None:
        """Queue status is read from the session report by the metrics instead (dispatch sends none)."""
