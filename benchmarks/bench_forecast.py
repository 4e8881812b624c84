"""`apportion forecast` benchmarks.

* one job's forecast on a busy 1,000-node, 10,000-pod dump (target: <= 2 s): the cycle benchmark's
  snapshot with every request doubled, one cycle run on it, and what it placed written back as running
  pods (seeded runtimes as `apportion.io/duration` with start times), the rest left waiting;
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
from apportion.forecast.sim import ForecastSimulator
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


def measure(shape: dict[str, int], repeats: int, period: float = 1.0) -> dict[str, Any]:
    objs = busy_objects(shape)
    placed = {o["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for o in objs
              if o["kind"] == "Pod" and o["spec"].get("nodeName")}
    pending = sorted(o["metadata"]["name"] for o in objs if o["kind"] == "PodGroup"
                     and o["metadata"]["name"] not in placed)
    # the waiting job in the middle of the name order (names are drawn independently of queues and sizes)
    target = f"bench/{pending[len(pending) // 2]}"
    times, cpu, sessions, answer = [], [], 0, None
    for _ in range(repeats):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        snap = build_snapshot([("bench", o) for o in objs])
        conf = resolve_conf(snap, None)
        prepare(snap, conf)
        state = start_state(snap, conf, NOW, period=period)
        t1 = time.perf_counter()
        sim = ForecastSimulator(state, targets=[target])
        sim.run()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        sessions = sim.sessions
        fs = sim.jobs[target].first_start
        answer = fs
        load_s = t1 - t0
    med = statistics.median(times)
    return {"median_s": med, "median_cpu_s": statistics.median(cpu), "runs": times, "sessions": sessions,
            "load_s": load_s, "pending_jobs": len(pending), "target": target, "starts_in_s": answer,
            "running_pods": sum(1 for o in objs if o["kind"] == "Pod" and o["spec"].get("nodeName"))}


def philly_errors(instants: int = 20, path: Path = PHILLY) -> dict[str, Any]:
    """Forecasts at `instants` evenly spread instants of the Philly run, with and without arrivals."""
    from apportion.simulation.scenario import load_scenario

    sc = load_scenario(path)
    horizon = sc.run.horizon or 30 * 86400.0
    at = [horizon * (i + 1) / (instants + 1) for i in range(instants)]
    out: dict[str, Any] = {"instants": at}
    t0 = time.perf_counter()
    sim = CapturingSimulator(copy.deepcopy(sc), at, arrivals=True)
    sim.run()
    out["simulation_s"] = time.perf_counter() - t0
    for label, with_arrivals in (("without_arrivals", False), ("with_arrivals", True)):
        errors: list[float] = []
        never = unknown = 0
        t1 = time.perf_counter()
        for state in sim.states:
            if not with_arrivals:
                state = copy.copy(state)
                state.arrivals = []
            fc = forecast(state, horizon=horizon - state.t0)
            for jf in fc.jobs:
                actual = sim.first_start_after(jf.job, state.t0)
                if actual is None:
                    unknown += 1  # it had not started by the end of the run either
                    continue
                if jf.start_in is None:
                    never += 1
                    continue
                errors.append(abs(state.t0 + jf.start_in - actual))
        out[label] = {"jobs": len(errors), "median_error_s": float(np.median(errors)) if errors else None,
                      "p90_error_s": float(np.percentile(errors, 90)) if errors else None,
                      "forecast_never_but_started": never, "not_started_by_run_end": unknown,
                      "wall_s": time.perf_counter() - t1}
    return out


def run(smoke: bool = False, repeats: int = 3, philly: bool = True, sizes: bool = True) -> dict[str, Any]:
    """The 1k forecast (median of `repeats`; also with 60 s sessions) and, unless smoke, the Philly
    forecast errors."""
    shapes = SMOKE if smoke else SHAPES
    out: dict[str, Any] = {}
    if sizes:
        out.update({name: measure(shape, 1 if smoke else repeats) for name, shape in shapes.items()})
    if sizes and not smoke:
        # sessions every 60 s instead of Volcano's 1 s: completions batch into fewer sessions
        for name, shape in shapes.items():
            out[f"{name}@60s"] = measure(shape, repeats, period=60.0)
    if philly and not smoke:
        out["forecast-philly-30d-error"] = philly_errors()
    return out


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(smoke="--smoke" in sys.argv, philly="--no-philly" not in sys.argv,
                         sizes="--philly-only" not in sys.argv), indent=1))
