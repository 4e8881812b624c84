"""`GET /api/v1/jobs/{namespace}/{name}/forecast`: when a waiting job will start, and what would make
it fit (issue 21), from the live cluster-state cache.

The forecast is `apportion.forecast.api.forecast_job` on a copy of the cache's snapshot, as the
scheduler sees the cluster (reservation queues as the plan followers publish them, podgroups routed to
them, the conf the next session would use), with the service's clock as now. The copy is taken under
the read side of the lock at a moment between two ticks (`SchedulingLoop.between`: a tick's parts are
separate writer jobs, and only between ticks is the cache whole); the simulation runs outside the
lock, on the forecasts' own thread, which leaves Python's cycle collector to the server
(`apportion.collection.owns_collector`). A forecast costs seconds of CPU, so one runs at a time and a
few wait for their turn; beyond that the answer is 503 with `Retry-After`, rather than a queue that
grows without bound.

The forecast's now is the loop's next session (a period after the last tick; the cache holds what the
last one decided), and its sessions follow every period from there. The reservation plans go on in
the forecast as the loop would follow them (forecast_plans.py): a
reservation's queue comes, changes and goes at its times, and a job held out of the scheduler because
its reservation has not started is forecast to join it when the reservation does (`heldFor` names
the reservation).
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from apportion.cluster.snapshot import Snapshot
from apportion.durations import parse_duration
from apportion.errors import InputError
from apportion.forecast.api import forecast_job
from apportion.forecast.core import DEFAULT_RUNS, NotPending, UnknownJob
from apportion.forecast.runtime import parse_assumed
from apportion.framework.conf import SchedulerConf
from apportion.service.common import json_response
from apportion.service.core import Service
from apportion.service.forecast_plans import PlansTaken, plans_ahead, take_plans
from apportion.service.objects import ObjectNotFound

router = APIRouter(prefix="/api/v1", tags=["apportion"])

#: forecasts waiting for their turn beyond the one running (more are answered 503)
WAITING_MOST = 2
#: most seeded runs a request may ask for (`apportion forecast --runs`' default; the CLI allows 1000
#: on one's own machine)
RUNS_MOST = 20
#: how long a forecast waits for the scheduling loop to be between ticks before it answers 503
BETWEEN_TICKS_WAIT_S = 30.0


class ForecastGate:
    """Forecasts one at a time, on their own thread (not the server's readers' pool, which a forecast
    of several seconds would hold), and at most `waiting` more queued behind the one running."""

    def __init__(self, waiting: int = WAITING_MOST) -> None:
        self.waiting = waiting
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="forecast")
        self._count = threading.Lock()
        self._admitted = 0

    def enter(self) -> bool:
        """Take a place (False: the queue is full)."""
        with self._count:
            if self._admitted > self.waiting:
                return False
            self._admitted += 1
            return True

    def leave(self) -> None:
        """Give the place back."""
        with self._count:
            self._admitted -= 1


def _gate(request: Request) -> ForecastGate:
    state = request.app.state
    gate = getattr(state, "forecast_gate", None)
    if gate is None:
        gate = state.forecast_gate = ForecastGate()
    return gate


def _options(assume_runtime: str | None, horizon: str | None, period: str | None, runs: int, seed: int,
             default_period: float) -> tuple[Any, float | None, float]:
    """The query's options as `apportion forecast` reads its flags (InputError naming the parameter)."""
    assumed = parse_assumed(assume_runtime, "assumeRuntime") if assume_runtime else None
    h = parse_duration(horizon, "horizon") if horizon else None
    p = parse_duration(period, "period") if period else default_period
    if not 1 <= runs <= RUNS_MOST:
        raise InputError(f"must be between 1 and {RUNS_MOST}", where="runs")
    if seed < 0:
        raise InputError("must be 0 or more", where="seed")
    return assumed, h, p


class Busy(Exception):
    """The gate is full, or the scheduling loop left no moment between its ticks: try again shortly."""


def next_session(svc: Service) -> int:
    """The clock (epoch ms) of the scheduling loop's next session: a period after the last tick's,
    or now when that has passed (or no tick ran yet). The cache holds what the last session decided,
    so the forecast's first session is the next one, not the last one again."""
    clock = svc.clock()
    last = svc.loop.last_tick_clock
    return clock if last is None else max(clock, last + int(round(svc.loop.period_s * 1000)))


def _between_ticks(svc: Service) -> tuple[Snapshot, SchedulerConf, int, PlansTaken]:
    """A copy of the cache's snapshot, the conf the next session would use, the clock and the plans,
    taken under the read lock at a moment between two ticks (the cache is whole only then:
    loop.between)."""
    deadline = time.monotonic() + BETWEEN_TICKS_WAIT_S
    between = svc.loop.between
    while True:
        with svc.lock.read():
            if between.is_set():
                return (svc.live.cache.snapshot(), svc.confs.effective(svc.objects.objects)[1], next_session(svc),
                        take_plans(svc))
        left = deadline - time.monotonic()
        if left <= 0:
            raise Busy()
        between.wait(min(left, 1.0))


async def forecast_for(request: Request, namespace: str, name: str, *, assume_runtime: str | None = None,
                       horizon: str | None = None, period: str | None = None, runs: int = DEFAULT_RUNS,
                       seed: int = 0, fits: bool = True) -> dict[str, Any]:
    """The job's forecast as `apportion forecast -o json` answers it. Raises InputError (a parameter),
    ObjectNotFound and UnknownJob (no such job), NotPending (running or finished) and Busy."""
    svc: Service = request.app.state.service
    assumed, h, p = _options(assume_runtime, horizon, period, runs, seed,
                             svc.config.schedule_period)
    uid = f"{namespace}/{name}"
    if ("PodGroup", namespace, name) not in svc.objects.objects:
        raise ObjectNotFound(f"job {uid} not found")
    gate = _gate(request)
    if not gate.enter():
        raise Busy()

    def run() -> dict[str, Any]:
        snap, conf, now_ms, taken = _between_ticks(svc)
        now = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
        ahead = plans_ahead(taken, snap.queues, snap.jobs, now_ms)
        fc = forecast_job(snap, namespace, name, conf=conf, now=now, assumed=assumed, runs=runs, seed=seed,
                          horizon=h, period=p, fits=fits, live=ahead)
        return fc.to_json()

    try:
        return await asyncio.get_running_loop().run_in_executor(gate.executor, run)
    finally:
        gate.leave()


@router.get("/jobs/{namespace}/{name}/forecast")
async def job_forecast(request: Request, namespace: str, name: str, assumeRuntime: str | None = None,  # noqa: N803
                       horizon: str | None = None, period: str | None = None, runs: int = DEFAULT_RUNS,
                       seed: int = 0, fits: bool = True) -> Response:
    """When the waiting job is estimated to start (`apportion forecast -o json`'s answer for it), and
    the cheapest single changes that let it start in the next session (`fits=false` leaves them out).
    `assumeRuntime`: the runtime of pods without `apportion.io/duration` or `apportion.io/expected-end`
    (seconds, a Go duration or a distribution); `period`: seconds between the simulated sessions
    (default: the service's own). 404 for an unknown job, 409 for one that is not pending, 503 while
    other forecasts fill the queue."""
    try:
        body = await forecast_for(request, namespace, name, assume_runtime=assumeRuntime, horizon=horizon,
                                  period=period, runs=runs, seed=seed, fits=fits)
    except UnknownJob as e:  # stored, but not in the cache: another scheduler's, or its queue is gone
        return json_response(404, {"error": str(e)})
    except NotPending as e:
        return json_response(409, {"error": str(e)})
    except Busy:
        return json_response(503, {"error": "other forecasts are running, or the scheduler is busy; try again "
                                            "shortly"}, headers={"Retry-After": "5"})
    return json_response(200, body)
