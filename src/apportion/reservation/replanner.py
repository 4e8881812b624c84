"""SimpleCapacityReplanner (contract §10): when the plan no longer fits its capacity, delete the most
recently accepted reservations active at the over-committed times, inside the enforcement window.

It scans t = now, now + step, ... like YARN, but skips straight to the next grid point at which
the committed load changes, so its cost follows the breakpoints, not the time steps.
"""

from __future__ import annotations

from apportion.lean_dataclass import dataclass
from apportion.reservation.definition import ReservationId
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.resmath import ceil_div, rsub


@dataclass
class SimpleCapacityReplanner:
    """Remove the latest-accepted reservations until the plan fits, over `enforcement_window` ms."""

    enforcement_window: int = 3_600_000

    def plan(self, plan: InMemoryPlan, now: int | None = None) -> list[ReservationId]:
        """Run once at `now` (default: the plan clock); return the deleted ids in deletion order."""
        now = plan.now if now is None else now
        step = plan.step
        calc = plan.calc
        removed: list[ReservationId] = []
        limit = now + self.enforcement_window
        t = now
        while t < plan.last_end_time() and t < limit:
            cap = plan.capacity
            excess = rsub(plan.total_at(t), cap)
            if calc.is_positive(excess, cap):
                active = plan.reservations_at(t)
                # latest acceptance first; on a tie the larger id sequence first
                active.sort(key=lambda r: (r.acceptance_time, r.id.cluster_timestamp, r.id.seq), reverse=True)
                for r in active:
                    if not calc.is_positive(excess, cap):
                        break
                    plan.delete_reservation(r.id)
                    excess = rsub(excess, r.resources_at(t))
                    removed.append(r.id)
                t += step
                continue
            # nothing to do until the load changes: jump to the first grid point at or after it
            nxt = self._next_change(plan, t)
            if nxt is None:
                break
            t = t + max(1, ceil_div(nxt - t, step)) * step
        return removed

    @staticmethod
    def _next_change(plan: InMemoryPlan, t: int) -> int | None:
        cands = []
        a = plan.load.next_change_after(t)
        if a is not None:
            cands.append(a)
        if not plan.periodic_load.is_empty():
            T = plan.max_periodicity
            k, off = divmod(t, T)
            b = plan.periodic_load.base.next_change_after(off)
            if b is None:
                first = plan.periodic_load.base.first_change()
                assert first is not None
                b = T + first
            cands.append(k * T + b)
        # the excess test reads only the committed load, so nothing changes before its next breakpoint
        return min(cands) if cands else None
