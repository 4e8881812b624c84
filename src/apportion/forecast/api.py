"""The library entry points the CLI and the service call.

`forecast_snapshot` (cluster objects in, `Forecast` out) is what `GET /api/v1/jobs/{ns}/{name}/forecast`
wraps (`forecast_job`); `forecast_dump` and `diff_dump` read kubectl YAML files as `apportion cycle` does.
"""

from __future__ import annotations

from dataclasses import field
from datetime import datetime
from typing import TYPE_CHECKING

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import Snapshot
from apportion.durations import parse_duration, parse_time
from apportion.engine import load_conf_file, load_inputs, prepare, resolve_conf
from apportion.errors import InputError
from apportion.forecast.core import DEFAULT_RUNS, Forecast, forecast
from apportion.forecast.runtime import Assumed, parse_assumed
from apportion.forecast.start import newest_timestamp, start_state
from apportion.framework.conf import SchedulerConf
from apportion.lean_dataclass import dataclass

if TYPE_CHECKING:
    from apportion.forecast.diff import Diff
    from apportion.simulation.reservations import SimPlan

# the fit search (and the reservation planner it asks) and the diff are imported by the calls that use
# them: a forecast without fits, the CLI's `--no-fits`, starts without them

@dataclass
class LiveAhead:
    """How a live cluster (the service's) goes on that a dump does not say, for a forecast from its
    snapshot: each reservable queue's plan (a `SimPlan` the forecast simulator's follower runs) and
    the plan's queues in the snapshot now (by reservable queue); the snapshot's jobs kept out of the
    scheduler until their reservation is active (uid -> reservation id); finished jobs staying in
    the sessions as Completed PodGroups; the cache's order of queues; and an evicted pod going back
    to Pending alone (a gang's other members run on: the service's Evictor)."""

    plans: dict[str, SimPlan]
    children: dict[str, list[QueueInfo]]
    held: dict[str, str] = field(default_factory=dict)
    #: jobs that finish stay in the sessions as Completed PodGroups, as the live cluster keeps them
    keep_done: bool = True
    #: the queues' order in the live cache (a session sees them so); None: the simulator's own
    queue_order: list[str] | None = None


#: without named jobs, fit suggestions are searched for this many waiting jobs (each search runs tens
#: of sessions)
FITS_UNNAMED = 5


def forecast_snapshot(snap: Snapshot, jobs: list[str] | None = None, *, conf: SchedulerConf | None = None,
                      now: datetime | None = None, assumed: Assumed | None = None, runs: int = DEFAULT_RUNS,
                      seed: int = 0, horizon: float | None = None, period: float = 1.0,
                      fits: bool = True, live: LiveAhead | None = None) -> Forecast:
    """Forecast the named jobs (default: every pending job) of a snapshot, with fit suggestions for
    each named job that does not start in the next session (without names, for the first
    FITS_UNNAMED such jobs). `snap` is used, not kept; it may be changed. `live`: how the live
    cluster the snapshot comes from goes on (`LiveAhead`); without it the snapshot is taken as a
    dump: its queues stay as they are, and finished jobs and evicted gangs go as the simulator's do."""
    if seed < 0:
        raise InputError(f"the seed must be 0 or more, got {seed}")
    conf = resolve_conf(snap, conf)
    prepare(snap, conf)
    # the stamps `newest_timestamp` parses, parsed once for `start_state` too
    times: dict[str, datetime | None] = {}
    if now is None:
        now = newest_timestamp(snap, times)
        if now is None:
            raise InputError("the cluster state carries no timestamp to take as now; give --now (RFC 3339)")
    state = start_state(snap, conf, now, period=period, times=times)
    if live is not None:
        state.plans, state.children, state.held = dict(live.plans), dict(live.children), dict(live.held)
        state.keep_done, state.queue_order, state.whole_gangs = live.keep_done, live.queue_order, False
    fc = forecast(state, jobs, assumed=assumed, runs=runs, seed=seed, horizon=horizon)
    if fits:
        from apportion.forecast.fit import KnownStart
        from apportion.forecast.sim import draws_needed
        from apportion.forecast.suggest import suggest

        # a held job cannot start in the next session whatever changes: it waits for its reservation
        waiting = [jf for jf in fc.jobs if (jf.start_in is None or jf.start_in > 0) and not jf.held_for]
        if not jobs and len(waiting) > FITS_UNNAMED:
            fc.warnings.append(f"fit suggestions for the first {FITS_UNNAMED} of {len(waiting)} waiting jobs only; "
                               "name a job to get its own")
            waiting = waiting[:FITS_UNNAMED]
        # the checks run the forecast simulator without assumed runtimes: the forecast's own answer is
        # theirs when it drew none
        same = fc.runs == 1 and (assumed is None or draws_needed(state) == 0)
        for jf in waiting:
            jf.fits = suggest(state, jf.job, known=KnownStart(jf.start_in, horizon) if same else None)
    return fc


def forecast_job(snap: Snapshot, namespace: str, name: str, *, conf: SchedulerConf | None = None,
                 now: datetime | None = None, assumed: Assumed | None = None, runs: int = DEFAULT_RUNS,
                 seed: int = 0, horizon: float | None = None, period: float = 1.0, fits: bool = True,
                 live: LiveAhead | None = None) -> Forecast:
    """One job's forecast, with its fit suggestions (what `GET /api/v1/jobs/{ns}/{name}/forecast`
    serves). InputError when `namespace/name` does not exist or is not pending."""
    return forecast_snapshot(snap, [f"{namespace}/{name}"], conf=conf, now=now, assumed=assumed, runs=runs,
                             seed=seed, horizon=horizon, period=period, fits=fits, live=live)


def forecast_dump(paths: list[str], jobs: list[str] | None = None, *, conf_path: str | None = None,
                  now: str | None = None, assume_runtime: str | None = None, runs: int = DEFAULT_RUNS,
                  seed: int = 0, horizon: str | None = None, period: str = "1", fits: bool = True) -> Forecast:
    """`apportion forecast`: kubectl YAML files and the options as typed."""
    snap, conf = load_inputs(paths, conf_path)  # as `apportion cycle` reads them
    when = parse_time(now, "--now") if now else None
    assumed = parse_assumed(assume_runtime) if assume_runtime else None
    h = parse_duration(horizon, "--horizon") if horizon else None
    p = parse_duration(period, "--period")
    if p <= 0:
        raise InputError("must be more than 0 seconds", where="--period")
    return forecast_snapshot(snap, jobs, conf=conf, now=when, assumed=assumed, runs=runs, seed=seed, horizon=h,
                             period=p, fits=fits)


def diff_dump(paths: list[str], *, conf_path: str | None = None, queues_path: str | None = None) -> Diff:
    """`apportion diff`: the dump under its current configuration and under the proposed one."""
    from apportion.forecast.diff import diff, load_queue_file
    from apportion.kube import build_snapshot, read_documents

    docs = read_documents(paths)  # read once: `-` is stdin
    build_snapshot(docs)  # bad input in the dump is reported before the proposal's
    conf = load_conf_file(conf_path) if conf_path else None
    queues = load_queue_file(queues_path) if queues_path else None
    what = " and ".join(x for x in (conf_path and f"conf {conf_path}", queues_path and f"queues {queues_path}") if x)
    return diff(lambda: build_snapshot(docs), conf=conf, queues=queues, proposed_source=what)
