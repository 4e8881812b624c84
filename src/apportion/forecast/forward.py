"""One forward run of the forecast simulator that serves every reservation try of a job.

A try (forecast/reserve.py) asks whether the job starts in the session at a booked start when the
booking is in force from then on; the reference answers it by simulating from now with the booking
(`reserve.first_start`), once per try. Before the booked start the booking changes nothing: the run
with it is the run without it, plus a wake-up at the start (a no-op event). So one run without a
booking goes to each try's start in turn (`Simulator.run_until`, the tries' starts increase), is
copied there, and only the copy gets the booking, its wake-up and the try's horizon and runs on
(a session or two). The run itself goes on to the next try's start unchanged. A try within a few
periods of now is simulated from now instead: that is cheaper than a copy.

The copy is `copy.deepcopy` of the simulator, except what no session changes, which the copies
share: the scenario's nodes, queues and conf, and the start state's objects (the job and task
templates sessions copy from, the nodes, the pods of other schedulers).
"""

from __future__ import annotations

import copy
import heapq
from collections.abc import Callable
from typing import Any

from apportion.cluster.snapshot import Snapshot
from apportion.forecast.sim import DumpObjects, forecast_simulator
from apportion.forecast.start import StartState
from apportion.simulation.engine import Simulator
from apportion.simulation.jobs import EV_ARRIVAL, EV_WAKE

#: a try starting at most this many periods from now is simulated from now, not copied: a copy of a
#: 1,000-node, 10,000-pod simulator costs about as much CPU as 15 of its sessions (benchmarks/README.md),
#: and a run to such a start has at most one session a period
COPY_AFTER = 16


def run_from_now(state: StartState, uid: str, horizon: float,
                 bookings: list[tuple[float, Callable[[Snapshot], None]]]) -> float | None:
    """Job `uid`'s first start (seconds from now) in the forecast simulator run from now to `horizon`
    with these bookings, or None: the reference every try of `ForwardRun` answers as."""
    sim = forecast_simulator(state, targets=(uid,), horizon=horizon, bookings=bookings)
    sim.run()
    first = sim.jobs[uid].first_start
    return None if first is None else first - state.t0


class ForwardRun:
    """The forecast simulator without a booking, advanced to each try's start and copied there."""

    def __init__(self, state: StartState, uid: str) -> None:
        self.state = state
        self.uid = uid
        self._sim: Simulator | None = None
        #: how far the run has gone (seconds from now): a later try must not ask for an earlier start
        self.at = 0.0
        #: copies made (for the benchmark and tests)
        self.copies = 0

    @property
    def sim(self) -> Simulator:
        """The run without a booking (made when a try is first copied from it)."""
        if self._sim is None:
            self._sim = forecast_simulator(self.state, targets=(self.uid,))
        return self._sim

    def _copy_at(self, horizon: float, bookings: list[tuple[float, Callable[[Snapshot], None]]]) -> Simulator:
        """A copy of the run (stopped before a booking's start) as the forecast simulator with these
        bookings and `horizon` (seconds from now) would be there."""
        sim = self.sim
        t0 = self.state.t0
        objects = sim.objects
        assert isinstance(objects, DumpObjects)  # a forecast simulator's sessions see a dump's objects
        shared: dict[int, Any] = {id(sim.sc): sim.sc, id(sim.conf): sim.conf, id(sim.queues): sim.queues}
        shared.update((id(o), o) for o in (*objects.templates.values(), *objects.template_tasks.values(),
                                          objects.node_order, objects.orphans, *sim.nodes.values()))
        # caches keyed by the ids of objects they hold (or derived from the templates alone): one
        # object for the run and its forks, so that a fork's copy never answers for an id it does not hold
        shared[id(objects._fresh_fields)] = objects._fresh_fields
        whole_of = getattr(sim.quiet, "_whole_of", None)
        if whole_of is not None:
            shared[id(whole_of)] = whole_of
        fork: Simulator = copy.deepcopy(sim, shared)
        self.copies += 1
        sc = copy.copy(sim.sc)
        sc.run = copy.copy(sc.run)
        sc.run.horizon = t0 + horizon
        fork.sc = sc
        # what the forecast simulator with that horizon never had: arrivals after it
        fork.heap = [e for e in fork.heap if not (e[1] == EV_ARRIVAL and e[0] > t0 + horizon)]
        heapq.heapify(fork.heap)
        assert isinstance(fork.objects, DumpObjects)
        fork.objects.bookings = sorted(bookings, key=lambda b: b[0])
        for i, (at, _patch) in enumerate(fork.objects.bookings):
            if at > 0:
                fork._push(t0 + at, EV_WAKE, f"wake-{i:04d}", None)
        return fork

    def first_start(self, start: float, horizon: float,
                    bookings: list[tuple[float, Callable[[Snapshot], None]]]) -> float | None:
        """`reserve.first_start(state, uid, horizon, bookings)` for bookings from `start` on (seconds
        from now), or None."""
        if start < self.at - 1e-9 or start < COPY_AFTER * self.state.period:
            # near now (or, should the planner go back, before where the run is): a run of its own from
            # now with the bookings, which is what the copy would be
            return run_from_now(self.state, self.uid, horizon, bookings)
        self.sim.run_until(self.state.t0 + start)
        self.at = start
        first = self.sim.jobs[self.uid].first_start
        if first is not None:
            # started before `start` without the booking, which changes nothing before it; the run
            # stopped there, and a copy would answer the same
            return first - self.state.t0
        fork = self._copy_at(horizon, bookings)
        fork.run()
        first = fork.jobs[self.uid].first_start
        return None if first is None else first - self.state.t0

    def starts_at(self, start: float, patch: Callable[[Snapshot], None]) -> bool:
        """`reserve.starts_at(state, uid, start, patch)`: does the job start in the session at `start`
        (seconds from now), and not before, with the booking in force from then?

        The run stops after the session at `start` (the reference goes a period further): a start
        later than that is a no either way, and the sessions up to `start` see no event after it."""
        first = self.first_start(start, start, [(start, patch)])
        return first is not None and abs(first - start) < 1e-6
