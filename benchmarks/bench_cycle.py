"""One `cycle` (enqueue, allocate) on a synthetic cluster: wall time, pods placed per second, peak RSS."""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any

from apportion.engine import run_cycle
from apportion.kube import build_snapshot
from benchmarks.generate import cluster_objects

SHAPES = {
    "cycle-1k-nodes-10k-pods": dict(nodes=1000, gangs=1000, pods_per_gang=10, queues=100),
    "cycle-5k-nodes-50k-pods": dict(nodes=5000, gangs=5000, pods_per_gang=10, queues=1000),
}
SMOKE = {"cycle-smoke": dict(nodes=20, gangs=20, pods_per_gang=4, queues=4)}


def measure(shape: dict[str, int], repeats: int) -> dict[str, Any]:
    objs = cluster_objects(**shape)
    times, cpu, placed = [], [], 0
    for _ in range(repeats):
        snap = build_snapshot([("bench", o) for o in objs])
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        result = run_cycle(snap)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        placed = len(result.binds)
    med = statistics.median(times)
    # CPU time next to wall time: on a shared machine it shows what the cycle itself costs
    return {"median_s": med, "median_cpu_s": statistics.median(cpu), "runs": times, "placed": placed,
            "pods_per_s": placed / med if med else 0.0}


def run(smoke: bool = False, repeats: int = 5, only: str | None = None) -> dict[str, Any]:
    """Median of `repeats` cycles per shape (`only`: the shapes whose name contains it)."""
    shapes = SMOKE if smoke else SHAPES
    return {name: measure(shape, 1 if smoke else repeats) for name, shape in shapes.items()
            if only is None or only in name}


if __name__ == "__main__":
    import argparse
    import json

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("only", nargs="?", default=None, help="only the shapes whose name contains this")
    ap.add_argument("--smoke", action="store_true", help="small shapes that run in seconds")
    a = ap.parse_args()
    print(json.dumps(run(smoke=a.smoke, only=a.only), indent=1))
