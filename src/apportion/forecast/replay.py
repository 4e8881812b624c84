"""Start states taken from a running simulation, and what then really happened.

The accuracy tests and the Philly benchmark need forecasts whose truth is known: `CapturingSimulator`
runs a scenario and, at chosen instants, hands the cluster objects its next session is about to see
to `start_state` (after writing each pod's runtime on it as the annotations a live cluster would
carry), then goes on and records every job's starts. A scenario with an eviction grace is not captured
exactly: its releasing pods restart in the simulation, while a forecast takes a pod being deleted as gone.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

from apportion.cluster.model import TaskStatus
from apportion.forecast.runtime import DURATION_KEY, EXPECTED_END_KEY, rfc3339
from apportion.forecast.start import StartState, start_state
from apportion.simulation.engine import Simulator
from apportion.simulation.scenario import Scenario

#: the wall-clock time of a simulation's second 0 (any fixed instant would do)
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """The wall-clock time of a simulation second."""
    return EPOCH + timedelta(seconds=seconds)


class CapturingSimulator(Simulator):
    """A simulator that captures start states at `instants` (each at the first session at or after it;
    `arrivals=True` also hands over the jobs still to arrive) and records every job's starts.

    It watches its own sessions through the simulator's public seam (`observers`,
    simulation/observer.py) and overrides nothing of the simulator's loop."""

    def __init__(self, scenario: Scenario, instants: list[float], *, arrivals: bool = False,
                 seed: int | None = None) -> None:
        super().__init__(scenario, seed=seed)
        self.instants = sorted(instants)
        self.with_arrivals = arrivals
        self.states: list[StartState] = []
        #: job uid -> the session instants at which one of its tasks was bound
        self.starts: dict[str, list[float]] = {}
        self.observers.append(self)

    def before_session(self, sim: Simulator) -> None:
        """Capture the state the session about to run sees, at each instant it reaches."""
        while self.instants and self.instants[0] <= self.now:
            self.instants.pop(0)
            if self.active:
                self.states.append(self.capture())

    def after_session(self, sim: Simulator) -> None:
        """Record the jobs the session started a task of."""
        for uid, sj in self.active.items():
            if sj.last_start == self.now:
                seen = self.starts.setdefault(uid, [])
                if not seen or seen[-1] != self.now:
                    seen.append(self.now)

    def first_start_after(self, uid: str, t: float) -> float | None:
        """The first session at or after `t` that bound a task of the job."""
        return next((s for s in self.starts.get(uid, []) if s >= t), None)

    def capture(self) -> StartState:
        """The start state of the session about to run at `now` (objects copied, runtimes annotated)."""
        live = self.snapshot()
        memo, live.memo = live.memo, None
        try:
            snap = copy.deepcopy(live)
        finally:
            live.memo = memo
        for uid, job in snap.jobs.items():
            sj = self.jobs[uid]
            for t in job.tasks.values():
                _, st = self.task_by_key[t.key]
                t.annotations = {**t.annotations, DURATION_KEY: repr(sj.spec.duration)}
                if t.status is TaskStatus.RUNNING:
                    t.start_time = rfc3339(at(st.start))
                    t.annotations[EXPECTED_END_KEY] = rfc3339(at(st.start + sj.spec.duration))
        state = start_state(snap, self.conf, at(self.now), period=self.period)
        state.t0 = self.now
        state.plans = copy.deepcopy(self.plans)
        state.children = copy.deepcopy(self.children)
        state.reservation_ids = dict(self.res_by_name)
        state.reservation_accepted = dict(self.res_accepted)
        if self.with_arrivals:
            state.arrivals = [copy.deepcopy(sj.spec) for sj in self.jobs.values() if sj.state == "waiting"]
        return state
