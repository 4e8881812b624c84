"""Simulation benchmark: 15,000 jobs over 1,000 hierarchical capacity queues (target ≤ 30 s wall).

The scenario is synthetic and seeded: 1,000 leaf queues under 32 parent queues (capacity plugin with
`enableHierarchy`, deserved split evenly), a GPU cluster, and one generator that spreads 15,000 jobs
(one in five a gang of 2-4 tasks) uniformly over the leaves. Arrivals are Poisson over about two
hours and durations log-normal, so demand is about the cluster's size for most of the run: queues
wait and borrow (no reclaim: see CONF). Kueue's CI runs a comparable
15,000-workload scheduling test in about 351 s.

What is timed is `simulate()` on an already loaded scenario (the loader's cost is reported apart as
`load_s`). events/s counts the simulator's events (arrivals, completions, releases, ...).

`python -m benchmarks.bench_simulation [--smoke]`, or `run(smoke)` from the bench runner.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from typing import Any

import yaml

from apportion.simulation.engine import simulate
from apportion.simulation.scenario import Scenario, parse_scenario

SHAPES = {
    "simulation-15k-jobs-1k-queues": dict(jobs=15_000, queues=1_000, parents=32, nodes=240, interarrival=0.5),
}
SMOKE = {"simulation-smoke": dict(jobs=100, queues=10, parents=2, nodes=12, interarrival=10)}

# No reclaim: with 1,000 leaves each deserves ~2 GPUs, less than one gang, so every gang makes its
# queue reclaimable, and because an empty gang verdict passes the decision to the next tier (as in
# Volcano) gangs get reclaimed and restart whole, back and forth between queues. That oscillation is
# worth seeing in a what-if run, but a throughput benchmark dominated by it measures the
# oscillation. Kueue's comparable test runs without preemption too.
CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: capacity
    enableHierarchy: true
  - name: nodeorder
"""


def scenario_document(jobs: int, queues: int, parents: int, nodes: int, interarrival: float,
                      seed: int = 0) -> dict[str, Any]:
    """The benchmark scenario as a scenario-file document (what a user would write in YAML)."""
    gpus = nodes * 8
    queue_objs: list[dict[str, Any]] = []
    for p in range(parents):
        share = gpus / parents
        queue_objs.append({"kind": "Queue", "metadata": {"name": f"org-{p:02d}"},
                           "spec": {"parent": "root", "deserved": _res(share)}})
    for q in range(queues):
        queue_objs.append({"kind": "Queue", "metadata": {"name": f"q-{q:04d}"},
                           "spec": {"parent": f"org-{q % parents:02d}", "deserved": _res(gpus / queues)}})
    return {
        "name": "bench-simulation",
        "cluster": {"generate": [{"count": nodes, "namePrefix": "gpu",
                                  "allocatable": {"cpu": 64, "memory": "512Gi", "nvidia.com/gpu": 8}}]},
        "queues": queue_objs,
        "scheduler": CONF,
        "workload": {"generators": [
            {"name": "single", "queues": {f"q-{q:04d}": 1 for q in range(queues)}, "count": jobs * 4 // 5,
             "interarrival": {"exponential": interarrival * 5 / 4},
             "duration": {"lognormal": {"median": 300, "sigma": 0.8}, "min": 30, "max": 7200},
             "tasks": 1, "resources": {"cpu": 4, "memory": "32Gi", "nvidia.com/gpu": 1}},
            {"name": "gang", "queues": {f"q-{q:04d}": 1 for q in range(queues)}, "count": jobs - jobs * 4 // 5,
             "interarrival": {"exponential": interarrival * 5}, "gang": True,
             "duration": {"lognormal": {"median": 450, "sigma": 0.6}, "min": 60, "max": 7200},
             "tasks": {"choice": [2, 4]}, "resources": {"cpu": 8, "memory": "64Gi", "nvidia.com/gpu": 2}},
        ]},
        "run": {"period": 1, "seed": seed},
    }


def _res(gpus: float) -> dict[str, Any]:
    return {"cpu": f"{gpus * 8:g}", "memory": f"{gpus * 64:g}Gi", "nvidia.com/gpu": f"{gpus:g}"}


def load(shape: dict[str, Any]) -> Scenario:
    return parse_scenario(yaml.safe_dump(scenario_document(**shape), sort_keys=False), source="bench-simulation.yaml")


def measure(shape: dict[str, Any], repeats: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    sc = load(shape)
    load_s = time.perf_counter() - t0
    times: list[float] = []
    res = None
    cpu: list[float] = []
    for _ in range(repeats):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        res = simulate(sc)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    assert res is not None
    med = statistics.median(times)
    done = sum(1 for j in res.jobs if j.state == "done")
    waits = [j.first_start - j.spec.arrival for j in res.jobs if j.first_start is not None]
    return {"median_s": med, "median_cpu_s": statistics.median(cpu), "runs": times, "load_s": load_s, "jobs": len(res.jobs), "completed": done,
            "events": res.events, "sessions": res.sessions, "events_per_s": res.events / med if med else 0.0,
            "simulated_s": res.end_time, "mean_wait_s": statistics.fmean(waits) if waits else 0.0}


def run(smoke: bool = False, repeats: int = 1) -> dict[str, dict[str, Any]]:
    # one repeat by default: a full run is tens of seconds and deterministic (same events each time)
    shapes = SMOKE if smoke else SHAPES
    return {name: measure(shape, repeats) for name, shape in shapes.items()}


if __name__ == "__main__":
    import json

    print(json.dumps(run(smoke="--smoke" in sys.argv), indent=1))
