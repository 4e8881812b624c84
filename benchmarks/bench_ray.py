"""The Ray backend's targets (issue 20), on a local ray.cluster_utils.Cluster:

* bind -> Ray task running: a job's bind (RayBackend.start) to the first line of its task, median over
  single-task jobs bound one per tick (target <= 100 ms);
* `apportion sweep` of 8 variants of the default scenario (run.seed=0..7) on a local Ray with 2 CPUs,
  against the same 8 run one after another in this process (target >= 1.7x).

Run: `.venv/bin/python benchmarks/bench_ray.py [--jobs 30] [--skip-sweep]`. Results go to stdout; copy
them to benchmarks/README.md with the machine's load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import ray
from ray import cloudpickle
from ray.cluster_utils import Cluster

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "backends"))

from svc_ray import ray_service, submit  # noqa: E402

from apportion.backends.ray_backend import RayBackend  # noqa: E402
from apportion.backends.ray_jobs import function_payload  # noqa: E402
from apportion.backends.sweep import run_sweep, variants  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def started_at() -> float:
    """A task body: the wall time its first line ran."""
    return time.time()


def bind_to_running(jobs: int) -> list[float]:
    """Milliseconds from each bind to its task's first line."""
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    for w in ("w1", "w2"):
        cluster.add_node(num_cpus=2, resources={w: 1})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    backend = RayBackend()
    out: list[float] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            svc = ray_service(Path(tmp), backend)
            svc.loop.tick()
            # one warm-up job: the first task on a node also starts its Ray worker process
            for i in range(jobs + 2):
                submit(svc, f"j{i}", "default", 1, 1, {"cpu": "1"}, function_payload(started_at))
                svc.loop.tick()
                (pod, s), = ((p, s) for p, s in backend.running.items() if p == f"t/j{i}-0")
                ran = ray.get(s.ref, timeout=60)
                if i >= 2:
                    out.append((ran - s.started) * 1000)
                svc.loop.tick()  # its completion
            svc.close()
    finally:
        ray.shutdown()
        cluster.shutdown()
    return out


def sweep_speedup() -> tuple[float, float]:
    """Seconds for 8 default-scenario variants one after another, then on a local Ray with 2 CPUs."""
    todo = variants(["run.seed=0..7"])
    t0 = time.perf_counter()
    local = run_sweep("", todo, local=True)
    seq = time.perf_counter() - t0
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        t0 = time.perf_counter()
        on_ray = run_sweep("", todo, local=False)
        par = time.perf_counter() - t0
    finally:
        ray.shutdown()
    assert on_ray == local, "the sweep gave different numbers on Ray"
    return seq, par


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=30)
    ap.add_argument("--skip-sweep", action="store_true")
    args = ap.parse_args()
    lat = bind_to_running(args.jobs)
    print(f"bind -> running: median {statistics.median(lat):.1f} ms, p90 "
          f"{sorted(lat)[int(0.9 * (len(lat) - 1))]:.1f} ms, max {max(lat):.1f} ms over {len(lat)} jobs")
    if not args.skip_sweep:
        seq, par = sweep_speedup()
        print(f"sweep of 8 variants: sequential {seq:.1f} s, Ray (2 CPUs) {par:.1f} s, speedup {seq / par:.2f}x")


if __name__ == "__main__":
    main()
