"""`apportion forecast` benchmarks.

* one job's forecast on a busy 1,000-node, 10,000-pod dump (target: <= 2 s): the cycle benchmark's
  snapshot with every request doubled, one cycle run on it, and what it placed written back as running
  pods (seeded runtimes as `apportion.io/duration` with start times), the rest left waiting;
* (`--fits`, apart) the same job's fit suggestions, what `apportion forecast DUMP JOB` adds to the
  forecast: the checked sessions and forward runs they take, given the forecast's start
  (`--unknown`: searched without it, as before it was handed over; `--reference`: the reference
  searches, `suggest(..., reference=True)`: each reservation try simulated from now and each held
  pod planned apart, the jobs to free by `freeing.choose_reference`, every check's jobs built again;
  `--start-in=S`: the forecast's answer from an earlier run, its forecast not run again);
* (`--horizon=S`, apart) the forecast alone, once, cut at S simulated seconds: a shorter run whose
  sessions are the whole run's first ones (300: 257 sessions of the 1,002);
* forecast error on the Philly 30-day scenario (docs/examples/philly-30d.yaml, the trace read from
  ../shared/traces): forecasts made at 20 instants from the simulation's own state (exact runtimes),
  with and without the future arrivals, against the starts the simulation then gives.
"""

from __future__ import annotations

import copy
import gc
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from apportion.engine import prepare, resolve_conf, run_cycle
from apportion.forecast.core import forecast
from apportion.forecast.replay import CapturingSimulator
from apportion.forecast.runtime import rfc3339
from apportion.forecast.sim import forecast_simulator
from apportion.forecast.start import start_state
from apportion.kube import build_snapshot
from benchmarks.generate import cluster_objects

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 1, 1, tzinfo=UTC)
SHAPES = {"forecast-1k-nodes-10k-pods": dict(nodes=1000, gangs=1000, pods_per_gang=10, queues=100)}
SMOKE = {"forecast-smoke": dict(nodes=4, gangs=20, pods_per_gang=4, queues=4)}
PHILLY = ROOT / "docs" / "examples" / "philly-30d.yaml"


def busy_objects(shape: dict[str, int], seed: int = 0) -> list[dict[str, Any]]:
    """The cycle benchmark's objects, requests doubled, after one cycle: placed pods run (runtimes
    drawn, lognormal around 2 h, as `apportion.io/duration` with a start time up to that long ago)."""
    objs = cluster_objects(**shape, seed=seed)
    for o in objs:
        if o["kind"] == "Pod":
            req = o["spec"]["containers"][0]["resources"]["requests"]
            req["cpu"] = str(int(req["cpu"]) * 2)
            req["memory"] = f"{int(req['memory'][:-2]) * 2}Gi"
        elif o["kind"] == "PodGroup":
            mr = o["spec"]["minResources"]
            mr["cpu"] = str(int(mr["cpu"]) * 2)
            mr["memory"] = f"{int(mr['memory'][:-2]) * 2}Gi"
    result = run_cycle(build_snapshot([("bench", o) for o in objs]))
    rng = np.random.default_rng(seed)
    for o in objs:
        meta = o["metadata"]
        if o["kind"] == "PodGroup":
            o["metadata"]["creationTimestamp"] = rfc3339(NOW - timedelta(hours=3))
            o["status"]["phase"] = result.podgroups.get(f"bench/{meta['name']}", "Pending")
        if o["kind"] != "Pod":
            continue
        runtime = float(np.round(np.clip(rng.lognormal(np.log(7200), 0.8), 300, 86400)))
        meta["annotations"]["apportion.io/duration"] = str(int(runtime))
        node = result.binds.get(f"bench/{meta['name']}")
        if node:
            o["spec"]["nodeName"] = node
            o["status"] = {"phase": "Running",
                           "startTime": rfc3339(NOW - timedelta(seconds=int(rng.uniform(0, runtime))))}
    return objs


def measure(shape: dict[str, int], repeats: int, period: float = 1.0, horizon: float | None = None) -> dict[str, Any]:
    objs = busy_objects(shape)
    placed = {o["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for o in objs
              if o["kind"] == "Pod" and o["spec"].get("nodeName")}
    pending = sorted(o["metadata"]["name"] for o in objs if o["kind"] == "PodGroup"
                     and o["metadata"]["name"] not in placed)
    # the waiting job in the middle of the name order (names are drawn independently of queues and sizes)
    target = f"bench/{pending[len(pending) // 2]}"
    times, cpu, sessions, skipped, phases_only, answer = [], [], 0, 0, 0, None
    for _ in range(repeats):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        snap = build_snapshot([("bench", o) for o in objs])
        conf = resolve_conf(snap, None)
        prepare(snap, conf)
        state = start_state(snap, conf, NOW, period=period)
        t1 = time.perf_counter()
        sim = forecast_simulator(state, targets=[target], horizon=horizon)
        sim.run()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        sessions = sim.sessions
        # sessions the quiet test skipped (forecast/quiet.py; a tree from before it has none), and of
        # those the ones whose close only moved phases (semantics F2; none before it)
        skipped = getattr(sim, "sessions_skipped", 0)
        phases_only = getattr(sim.quiet, "phases_only", 0)
        fs = sim.jobs[target].first_start
        answer = fs
        load_s = t1 - t0
    med = statistics.median(times)
    return {"median_s": med, "median_cpu_s": statistics.median(cpu), "runs": times, "sessions": sessions,
            "sessions_skipped": skipped, "sessions_phases_only": phases_only, "cpu_runs": cpu,
            "load_s": load_s, "pending_jobs": len(pending), "target": target, "starts_in_s": answer,
            "running_pods": sum(1 for o in objs if o["kind"] == "Pod" and o["spec"].get("nodeName"))}


def measure_fits(shape: dict[str, int], known: bool = True, reference: bool = False,
                 start_in: float | None = None) -> dict[str, Any]:
    """The fit suggestions for the job `measure` forecasts (what `apportion forecast DUMP JOB` adds),
    given the forecast's start (`known`) as `forecast_snapshot` gives it, or searched without it;
    `reference`: the reference searches (`suggest(..., reference=True)`).
    `start_in`: the forecast's answer (seconds from now) from an earlier run, whose forecast is then
    not run again (the fits are measured alone)."""
    from apportion.forecast import fit, reserve
    from apportion.forecast.fit import KnownStart

    try:
        from apportion.forecast import forward
        from apportion.forecast.forward import ForwardRun
    except ImportError:  # a tree from before it (measured against)
        ForwardRun = None  # type: ignore[assignment,misc]
        forward = None  # type: ignore[assignment]
    from apportion.forecast.suggest import suggest

    objs = busy_objects(shape)
    snap = build_snapshot([("bench", o) for o in objs])
    conf = resolve_conf(snap, None)
    prepare(snap, conf)
    state = start_state(snap, conf, NOW)
    pending = sorted(j.uid for j in state.jobs if j.pending)
    target = pending[len(pending) // 2]
    t0 = time.process_time()
    if start_in is None:
        sim = forecast_simulator(state, targets=[target])
        sim.run()
        start = sim.jobs[target].first_start
    else:
        start = state.t0 + start_in
    forecast_cpu = time.process_time() - t0
    counts = {"check_sessions": 0, "forward_runs": 0, "runs_from_now": 0, "copies": 0, "copy_cpu_s": 0.0}
    starts, first = fit.Checker.starts, reserve.first_start
    copy_at = ForwardRun._copy_at if ForwardRun is not None else None
    from_now = forward.run_from_now if forward is not None and hasattr(forward, "run_from_now") else None

    def counted_from_now(*a: Any, **k: Any) -> float | None:
        counts["runs_from_now"] += 1
        return from_now(*a, **k)  # type: ignore[misc]

    def counted_starts(self: Any, *a: Any) -> bool:
        counts["check_sessions"] += 1
        return starts(self, *a)

    def counted_first(*a: Any, **k: Any) -> float | None:
        counts["forward_runs"] += 1
        return first(*a, **k)

    def counted_copy(self: Any, *a: Any) -> Any:
        counts["copies"] += 1
        c0 = time.process_time()
        try:
            return copy_at(self, *a)  # type: ignore[misc]
        finally:
            counts["copy_cpu_s"] += time.process_time() - c0

    fit.Checker.starts = counted_starts  # type: ignore[method-assign,assignment]
    reserve.first_start = counted_first
    if ForwardRun is not None:
        ForwardRun._copy_at = counted_copy  # type: ignore[method-assign]
    if from_now is not None:
        forward.run_from_now = counted_from_now  # ForwardRun's tries near now (the reference's: forward_runs)
    try:
        t0 = time.process_time()
        kw = {"reference": True} if reference else {}
        found = suggest(state, target, known=KnownStart(None if start is None else start - state.t0)
                        if known else None, **kw)
        cpu = time.process_time() - t0
    finally:
        fit.Checker.starts = starts  # type: ignore[method-assign]
        reserve.first_start = first
        if ForwardRun is not None:
            ForwardRun._copy_at = copy_at  # type: ignore[method-assign]
        if from_now is not None:
            forward.run_from_now = from_now
    return {"target": target, "starts_in_s": start, "forecast_cpu_s": forecast_cpu, "fits_cpu_s": cpu, **counts,
            "fits": [f.text for f in found]}


class _ForecastingSimulator(CapturingSimulator):
    """Forecasts at each captured instant straight away (with and without the future arrivals), so a
    run cut short still has the forecasts of the instants it reached."""

    def __init__(self, scenario: Any, instants: list[float], horizon: float, log: Any = None) -> None:
        super().__init__(scenario, instants, arrivals=True)
        self.forecast_horizon = horizon
        self.predicted: list[tuple[float, dict[str, dict[str, float | None]]]] = []
        self.forecast_wall = {"without_arrivals": 0.0, "with_arrivals": 0.0}
        self.log = log

    def capture(self) -> Any:
        state = super().capture()
        out: dict[str, dict[str, float | None]] = {}
        for label in ("without_arrivals", "with_arrivals"):
            st = state if label == "with_arrivals" else copy.copy(state)
            if label == "without_arrivals":
                st.arrivals = []
            t = time.perf_counter()
            fc = forecast(st, horizon=self.forecast_horizon)
            self.forecast_wall[label] += time.perf_counter() - t
            out[label] = {j.job: None if j.start_in is None else state.t0 + j.start_in for j in fc.jobs}
        self.predicted.append((state.t0, out))
        if self.log is not None:
            print(f"instant {state.t0:.0f}: {len(out['with_arrivals'])} pending jobs forecast", file=self.log,
                  flush=True)
        return state


def philly_errors(instants: int = 20, path: Path = PHILLY, horizon: float = 86400.0, log: Any = None,
                  stop: float | None = None) -> dict[str, Any]:
    """Forecasts at `instants` evenly spread instants of the scenario's run, each looking `horizon`
    seconds ahead, with and without the future arrivals, against the starts the run then gives.

    Errors are over the jobs that started within the horizon in the run and were forecast to; the
    rest are counted: forecast within the horizon but started later or never ("early"), or started
    within it but forecast not to ("missed"). `stop` ends the run early (seconds of simulated time).
    """
    from apportion.simulation.scenario import load_scenario

    sc = load_scenario(path)
    end = sc.run.horizon or 30 * 86400.0
    at = [end * (i + 1) / (instants + 1) for i in range(instants)]
    if stop is not None:
        sc.run.horizon = stop
    t0 = time.perf_counter()
    sim = _ForecastingSimulator(sc, at, horizon, log)
    res = sim.run()
    out: dict[str, Any] = {"instants": [t for t, _ in sim.predicted], "horizon_s": horizon,
                           "simulated_s": res.end_time, "wall_s": time.perf_counter() - t0}
    for label in ("without_arrivals", "with_arrivals"):
        errors: list[float] = []
        early = missed = both_later = 0
        for t, pred in sim.predicted:
            for uid, p in pred[label].items():
                actual = sim.first_start_after(uid, t)
                known = actual is not None and actual - t <= horizon and actual <= res.end_time
                if p is not None and known:
                    errors.append(abs(p - actual))  # type: ignore[operator]
                elif p is not None:
                    early += 1
                elif known:
                    missed += 1
                else:
                    both_later += 1  # forecast not to start within the horizon, and it did not
        out[label] = {"jobs": len(errors), "median_error_s": float(np.median(errors)) if errors else None,
                      "p90_error_s": float(np.percentile(errors, 90)) if errors else None,
                      "mean_error_s": float(np.mean(errors)) if errors else None,
                      "exact": sum(1 for e in errors if e == 0), "forecast_but_later": early,
                      "missed": missed, "neither_within_horizon": both_later, "forecast_wall_s": sim.forecast_wall[label]}
    return out


def run(smoke: bool = False, repeats: int = 3, philly: bool = True) -> dict[str, Any]:
    """The 1k forecast (median of `repeats`; also with 60 s sessions) and, unless smoke, the Philly
    forecast errors."""
    shapes = SMOKE if smoke else SHAPES
    out: dict[str, Any] = {}
    out.update({name: measure(shape, 1 if smoke else repeats) for name, shape in shapes.items()})
    if not smoke:
        # sessions every 60 s instead of Volcano's 1 s: completions batch into fewer sessions
        for name, shape in shapes.items():
            out[f"{name}@60s"] = measure(shape, repeats, period=60.0)
    if philly and not smoke:
        out["forecast-philly-30d-error"] = philly_errors()
    return out


if __name__ == "__main__":
    import argparse
    import json
    import sys

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="small shapes that run in seconds")
    ap.add_argument("--no-philly", action="store_true", help="leave out the Philly accuracy run")
    ap.add_argument("--fits", action="store_true", help="time the what-would-make-it-fit searches alone")
    ap.add_argument("--start-in", type=float, default=None, help="with --fits: the job's known start (s)")
    ap.add_argument("--unknown", action="store_true", help="with --fits: without the start known")
    ap.add_argument("--reference", action="store_true", help="with --fits: the reference searches")
    ap.add_argument("--horizon", type=float, default=None,
                    help="one forecast cut at this many simulated seconds (300: 257 sessions)")
    ap.add_argument("--philly-only", action="store_true", help="only the Philly accuracy run")
    ap.add_argument("--instants", type=int, default=20, help="with --philly-only: forecast instants")
    a = ap.parse_args()
    if a.fits:
        print(json.dumps({k: measure_fits(shape, known=not a.unknown, reference=a.reference, start_in=a.start_in)
                          for k, shape in (SMOKE if a.smoke else SHAPES).items()}, indent=1))
    elif a.horizon is not None:
        print(json.dumps({k: measure(shape, 1, horizon=a.horizon) for k, shape in SHAPES.items()}, indent=1))
    elif a.philly_only:
        print(json.dumps(philly_errors(instants=a.instants, log=sys.stderr), indent=1))
    else:
        print(json.dumps(run(smoke=a.smoke, philly=not a.no_philly), indent=1))
