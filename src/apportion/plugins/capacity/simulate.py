"""capacity's per-task simulation state and event handlers: what keeps `allocated` and the shares current.

Follows `PrePredicateFn`, `SimulateAddTaskFn`, `SimulateRemoveTaskFn`, `SimulateAllocatableFn` and the
allocate/deallocate `EventHandler` of `plugins/capacity/capacity.go`; the handlers refresh the share of
every ancestor too (the seed's worked example, docs/semantics.md C2).
"""

from __future__ import annotations

from typing import Any

from apportion.cluster.model import QueueInfo, TaskInfo
from apportion.plugins.capacity.attrs import STATE_KEY, CapacityState
from apportion.plugins.capacity.base import CapacityBase

#: False: an allocate event charges each queue on the path with `Resource.add` (the reference); True: the
#: same additions written out in the loop (`Simulation.on_allocate`, docs/semantics.md K58)
LEAN_CHARGE = True


class Simulation(CapacityBase):
    """The simulate points (topology-aware preemption) and the in-session event handlers."""

    def pre_predicate(self, task: TaskInfo) -> str | None:
        """PrePredicateFn: snapshot every queue's attributes into the task's cycle state."""
        if not self.ssn.simulation_state_needed:
            return None  # nothing will read the copy this session
        state = CapacityState({n: a.clone() for n, a in self.attrs.items()})
        self.ssn.cycle_states.setdefault(task.uid, {})[STATE_KEY] = state
        return None

    def _simulate(self, state: dict[str, Any], task: TaskInfo, sign: int) -> None:
        cs = state.get(STATE_KEY)
        job = self.ssn.jobs.get(task.job)
        if not isinstance(cs, CapacityState) or job is None or job.queue not in cs.attrs:
            return
        leaf = cs.attrs[job.queue]
        for a in [leaf] + [cs.attrs[n] for n in leaf.ancestors]:
            if sign > 0:
                a.allocated.add(task.resreq)
            else:
                a.allocated.sub(task.resreq)
            a.update_share()

    def simulate_add_task(self, state: dict[str, Any], task: TaskInfo, row: int) -> None:
        """SimulateAddTaskFn: add the task to its queue and every ancestor in the snapshot."""
        self._simulate(state, task, +1)

    def simulate_remove_task(self, state: dict[str, Any], task: TaskInfo, row: int) -> None:
        """SimulateRemoveTaskFn: take the task off its queue and every ancestor in the snapshot."""
        self._simulate(state, task, -1)

    def simulate_allocatable(self, queue: QueueInfo, task: TaskInfo, state: dict[str, Any]) -> bool:
        """SimulateAllocatableFn: the allocatable test on the snapshot, leaf to root."""
        cs = state.get(STATE_KEY)
        if not isinstance(cs, CapacityState):
            return False  # Volcano: no state (PrePredicate not run) -> not allocatable
        return self._allocatable_in(cs.attrs, queue.name, task, explain=False)

    def on_allocate(self, task: TaskInfo) -> None:
        """AllocateFunc: charge the task to its queue and every ancestor; refresh every share on the path.

        With `LEAN_CHARGE` each queue's `allocated.add(task.resreq)` is written out: the same additions
        (cpu, memory, then each of the request's scalars onto the queue's, from 0.0 when it has none) in
        the same order, so the same sums."""
        attr = self._queue_of(task)
        if attr is None:
            return
        if LEAN_CHARGE:
            # the request read at each step as `add` reads it (were it a queue's own object, the sums
            # would still be add's)
            req = task.resreq
            log = self.share_log
            for a in self._own_path(attr):
                used = a.allocated
                used.cpu += req.cpu
                used.memory += req.memory
                if req.scalars:
                    have = used.scalars
                    for n, v in req.scalars.items():
                        have[n] = have.get(n, 0.0) + v
                a.update_share()  # Deviation (seed's worked example): ancestors' shares too
                log.append(a.name)
            return
        for a in self._own_path(attr):
            a.allocated.add(task.resreq)
            a.update_share()  # Deviation (seed's worked example): ancestors' shares too
            self.share_log.append(a.name)

    def on_deallocate(self, task: TaskInfo) -> None:
        """DeallocateFunc: the reverse of on_allocate."""
        attr = self._queue_of(task)
        if attr is None:
            return
        for a in self._own_path(attr):
            a.allocated.sub(task.resreq)
            a.update_share()
            self.share_log.append(a.name)
