"""`forecast`: when each pending job starts, by simulating forward from a start state.

One run when every runtime is known or assumed constant; with an assumed distribution, `runs` seeded
runs, reported as the median start and the 80 % interval (10th to 90th percentile). A job that does
not start within a run (it waits on a pod that never ends, or past the horizon) counts as starting
"never" in that run.
"""

from __future__ import annotations

from dataclasses import field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from apportion.errors import InputError
from apportion.forecast.runtime import Assumed, rfc3339
from apportion.forecast.start import (
    ASSUMED,
    BASIS_RELEASING,
    BASIS_UNKNOWN,
    DURATION,
    EXPECTED_END,
    JobStart,
    StartState,
)
from apportion.lean_dataclass import dataclass

#: default number of seeded runs when runtimes are drawn from a distribution
DEFAULT_RUNS = 20


@dataclass
class JobForecast:
    """One job's answer. Seconds are from the state's instant; None: not within the run(s)."""

    job: str
    queue: str
    start_in: float | None
    #: the 80 % interval over seeded runs (equal to start_in for a single run)
    low: float | None
    high: float | None
    runs: int
    started_runs: int
    basis: str
    reason: str = ""
    fits: list[Any] = field(default_factory=list)
    #: the reservation the job waits for, when it is kept out of the scheduler until that is active
    #: (a service's job submitted to a reservation that has not started)
    held_for: str = ""

    def to_json(self, now: datetime) -> dict[str, Any]:
        """The job's entry of the JSON answer (times as RFC 3339 from `now`)."""
        def at(s: float | None) -> str | None:
            return None if s is None else rfc3339(now + timedelta(seconds=s))

        out: dict[str, Any] = {"job": self.job, "queue": self.queue, "start": at(self.start_in),
                               "startIn": self.start_in, "basis": self.basis,
                               "fits": [f.to_json() for f in self.fits]}
        if self.runs > 1:
            out["interval80"] = {"from": at(self.low), "to": at(self.high), "fromIn": self.low, "toIn": self.high}
            out["runs"], out["startedRuns"] = self.runs, self.started_runs
        if self.reason:
            out["reason"] = self.reason
        if self.held_for:
            out["heldFor"] = self.held_for
        return out


@dataclass
class Forecast:
    """The answer for every job asked about."""

    now: datetime
    jobs: list[JobForecast]
    basis: dict[str, Any]
    runs: int
    horizon: float | None
    warnings: list[str] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        """Every runtime came from annotations and there was one run (still a model of the future)."""
        return self.basis["pods"].get(ASSUMED, 0) == 0 and self.basis["pods"].get(BASIS_UNKNOWN, 0) == 0 and self.runs == 1

    def to_json(self) -> dict[str, Any]:
        """The JSON answer (`apportion forecast -o json`)."""
        return {"now": rfc3339(self.now), "estimate": True, "basis": self.basis, "runs": self.runs,
                "horizonSeconds": self.horizon, "jobs": [j.to_json(self.now) for j in self.jobs],
                "warnings": self.warnings}


class UnknownJob(InputError):
    """A job asked about that the cluster state does not hold (the service answers 404)."""


class NotPending(InputError):
    """A job asked about that is not waiting: its pods hold nodes, or finished (the service answers 409)."""


def find_job(state: StartState, name: str) -> JobStart:
    """`namespace/podgroup`, or a podgroup name that only one namespace has; InputError otherwise."""
    if "/" in name:
        js = state.job(name)
        if js is None:
            raise UnknownJob(f"job {name!r} does not exist in the cluster state")
        return js
    hits = [j for j in state.jobs if j.template.name == name]
    if not hits:
        raise UnknownJob(f"job {name!r} does not exist in the cluster state")
    if len(hits) > 1:
        raise InputError(f"job name {name!r} is in several namespaces ({', '.join(j.uid for j in hits)}); "
                         "write it as <namespace>/<podgroup>")
    return hits[0]


def _not_pending(js: JobStart) -> str:
    holding = sum(1 for t in js.tasks if t.status in ("running", "releasing"))
    if holding:
        return f"job {js.uid} is not pending: {holding} of its {len(js.tasks)} pods hold nodes"
    if not js.tasks:
        return f"job {js.uid} is not pending: it has no pods"
    return f"job {js.uid} is not pending: its pods have finished"


def select_jobs(state: StartState, names: list[str] | None) -> list[JobStart]:
    """The jobs asked about (every pending job when `names` is empty), checked to be pending."""
    if not names:
        return [j for j in state.jobs if j.pending]
    out: list[JobStart] = []
    for n in names:
        js = find_job(state, n)
        if not js.pending:
            raise NotPending(_not_pending(js))
        if js not in out:
            out.append(js)
    return out


def basis_of(state: StartState, assumed: Assumed | None) -> dict[str, Any]:
    """Where the running pods' remaining times and the jobs' runtimes come from."""
    pods = state.basis_counts()
    if assumed is not None and pods.get(BASIS_UNKNOWN):
        pods[ASSUMED] = pods.pop(BASIS_UNKNOWN)
    jobs_unknown = sum(1 for j in state.jobs if j.runtime is None and any(t.status == "pending" for t in j.tasks))
    parts = []
    if pods.get(EXPECTED_END):
        parts.append(f"{pods[EXPECTED_END]} end at their {EXPECTED_END} annotation")
    if pods.get(DURATION):
        parts.append(f"{pods[DURATION]} by their {DURATION} annotation and start time")
    if pods.get(ASSUMED):
        parts.append(f"{pods[ASSUMED]} assumed to run {assumed.text if assumed else '?'}")
    if pods.get(BASIS_UNKNOWN):
        parts.append(f"{pods[BASIS_UNKNOWN]} with no known end (never free their nodes)")
    if pods.get(BASIS_RELEASING):
        parts.append(f"{pods[BASIS_RELEASING]} being deleted (free their nodes by the next session)")
    summary = "running pods: " + ", ".join(parts) if parts else "no running pods"
    if jobs_unknown:
        summary += (f"; waiting jobs without a runtime: {jobs_unknown} ("
                    + (f"assumed {assumed.text})" if assumed else "run forever once started)"))
    return {"pods": dict(sorted(pods.items())), "jobsWithoutRuntime": jobs_unknown,
            "assumedRuntime": assumed.text if assumed else None,
            "futureArrivals": len(state.arrivals),
            "summary": summary}


def _pct(xs: list[float], q: float) -> float | None:
    v = float(np.percentile(np.asarray(xs), q, method="lower"))
    return None if not np.isfinite(v) else v


def forecast(state: StartState, names: list[str] | None = None, *, assumed: Assumed | None = None,
             runs: int = DEFAULT_RUNS, seed: int = 0, horizon: float | None = None) -> Forecast:
    """Forecast the start of each job named (default: every pending job) from `state`."""
    from apportion.forecast.sim import FORWARD_SESSION_LIMIT, forecast_simulator

    targets = select_jobs(state, names)
    basis = basis_of(state, assumed)
    random = assumed is not None and assumed.random and bool(basis["pods"].get(ASSUMED) or
                                                               basis["jobsWithoutRuntime"])
    n_runs = max(1, runs) if random else 1
    uids = [j.uid for j in targets]
    starts: dict[str, list[float]] = {u: [] for u in uids}
    warnings: list[str] = list(state.warnings)
    limited = False
    for r in range(n_runs):
        sim = forecast_simulator(state, assumed=assumed, seed=seed + r, targets=uids, horizon=horizon)
        sim.run()
        limited = limited or sim.stopped_at_limit
        for w in sim.warnings:
            if w not in warnings:
                warnings.append(w)
        for u in uids:
            fs = sim.jobs[u].first_start
            starts[u].append(np.inf if fs is None else fs - state.t0)
    out: list[JobForecast] = []
    for js in targets:
        xs = starts[js.uid]
        med = _pct(xs, 50)
        reason = ""
        if med is None and limited:
            reason = (f"no start found within {FORWARD_SESSION_LIMIT} simulated sessions: the scheduler's "
                      "decisions keep changing (e.g. reclaim evicting and placing pods again every period)")
        elif med is None and js.uid in state.held:
            reason = (f"held out of the scheduler until its reservation {state.held[js.uid]} is active, and does "
                      "not start " + ("within the horizon" if horizon is not None else "with the plan as it is"))
        elif med is None:
            reason = ("does not start within the horizon" if horizon is not None
                      else "does not start while the pods ahead of it run (some have no known end)"
                      if basis["pods"].get(BASIS_UNKNOWN) else "does not start with the cluster as it is")
        out.append(JobForecast(job=js.uid, queue=js.template.queue, start_in=med, low=_pct(xs, 10),
                               high=_pct(xs, 90), runs=n_runs, started_runs=sum(1 for x in xs if np.isfinite(x)),
                               basis=basis["summary"], reason=reason, held_for=state.held.get(js.uid, "")))
    return Forecast(now=state.now, jobs=out, basis=basis, runs=n_runs, horizon=horizon, warnings=warnings)
