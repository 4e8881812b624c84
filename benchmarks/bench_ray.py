"""The Ray backend's targets (issue 20), on a local ray.cluster_utils.Cluster:

* bind -> Ray task running: a job's bind (RayBackend.start) to the first line of its task, median over
  single-task jobs bound one per tick (target <= 100 ms), and the same for gangs of two (placement group);
* `apportion sweep` of 8 variants of the default scenario (run.seed=0..7) on a local Ray with 2 CPUs,
  against the same 8 run one after another in this process (target >= 1.7x), with and without the
  local Ray's start and stop; with --cli also the whole command both ways, each in a new process.

Run: `.venv/bin/python benchmarks/bench_ray.py [--jobs 30] [--skip-sweep] [--skip-bind] [--rounds N] [--cli]`.
Results go to stdout with the load average; copy them to benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
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


def bind_to_running(jobs: int) -> dict[str, list[float]]:
    """Milliseconds from each bind to its task's first line: single-task jobs (node affinity), and
    gangs of two tasks of 2 CPUs on two workers (a placement group first; the later task counts),
    bound once Ray has given back the previous gang's group ("gang") and right after the previous
    gang's group was removed ("gang, back to back": Ray frees a removed group's resources
    asynchronously and retries a group it could not place after a backoff of up to a second)."""
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    for w in ("w1", "w2"):
        cluster.add_node(num_cpus=2, resources={w: 1})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    backend = RayBackend()
    out: dict[str, list[float]] = {"single": [], "gang": [], "gang, back to back": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            svc = ray_service(Path(tmp), backend)
            svc.loop.tick()
            for kind, tasks, cpu in (("single", 1, "1"), ("gang", 2, "2"), ("gang, back to back", 2, "2")):
                # two warm-up jobs: the first task on a node also starts its Ray worker process
                for i in range(jobs + 2):
                    job = f"{kind.replace(', ', '-').replace(' ', '-')}{i}"
                    while kind == "gang" and ray.available_resources().get("CPU", 0) < 4:
                        time.sleep(0.01)
                    submit(svc, job, "default", tasks, tasks, {"cpu": cpu}, function_payload(started_at))
                    svc.loop.tick()
                    mine = [s for p, s in backend.running.items() if p.startswith(f"t/{job}-")]
                    assert len(mine) == tasks, svc.loop.waiting
                    ran = max(ray.get([s.ref for s in mine], timeout=60))
                    if i >= 2:
                        out[kind].append((ran - mine[0].started) * 1000)
                    while any(p.startswith(f"t/{job}-") for p in backend.running):
                        svc.loop.tick()  # its completion
            svc.close()
    finally:
        ray.shutdown()
        cluster.shutdown()
    return out


def sweep_speedup() -> dict[str, float]:
    """Seconds for 8 default-scenario variants one after another in this process, and on a local Ray
    with 2 CPUs: without the cluster's start (a Ray started before the clock, as a running cluster
    joined with --ray-address is; the actors' start is inside it) and with it (run_sweep starting and
    stopping its own local Ray, what `apportion sweep` without an address makes a user wait for)."""
    todo = variants(["run.seed=0..7"])
    t0 = time.perf_counter()
    local = run_sweep("", todo, local=True)
    seq = time.perf_counter() - t0
    ray.init(address="local", num_cpus=2, log_to_driver=False)
    try:
        t0 = time.perf_counter()
        warm_out = run_sweep("", todo, local=False)
        warm = time.perf_counter() - t0
    finally:
        ray.shutdown()
    t0 = time.perf_counter()
    cold_out = run_sweep("", todo, local=False)
    cold = time.perf_counter() - t0
    assert warm_out == local and cold_out == local, "the sweep gave different numbers on Ray"
    return {"sequential": seq, "ray": warm, "ray+start": cold}


def cli_sweep() -> dict[str, float]:
    """Wall seconds of the whole command, `apportion sweep --vary run.seed=0..7` with and without
    --local, each a new process (Python's start, imports, the local Ray's start and stop, the report)."""
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in (("cli --local", ["--local"]), ("cli ray", [])):
            t0 = time.perf_counter()
            subprocess.run([str(Path(sys.executable).parent / "apportion"), "sweep", "--vary", "run.seed=0..7",
                            "--out", str(Path(tmp) / label.replace(" ", "_")), *extra],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out[label] = time.perf_counter() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=30)
    ap.add_argument("--skip-sweep", action="store_true")
    ap.add_argument("--skip-bind", action="store_true")
    ap.add_argument("--rounds", type=int, default=1, help="sweep rounds (each: sequential, Ray, Ray with its start)")
    ap.add_argument("--cli", action="store_true", help="also time the whole `apportion sweep` command both ways")
    args = ap.parse_args()
    if not args.skip_bind:
        print(f"load average before: {os.getloadavg()}")
        for kind, lat in bind_to_running(args.jobs).items():
            print(f"bind -> running ({kind}): median {statistics.median(lat):.1f} ms, p90 "
                  f"{sorted(lat)[int(0.9 * (len(lat) - 1))]:.1f} ms, max {max(lat):.1f} ms over {len(lat)} jobs")
    if not args.skip_sweep:
        # the machine's load drifts: rounds alternate the two sides, and each round is reported
        for r in range(args.rounds):
            print(f"round {r + 1}, load average before: {os.getloadavg()}")
            t = sweep_speedup()
            print(f"sweep of 8 variants: sequential {t['sequential']:.1f} s; Ray (2 CPUs) {t['ray']:.1f} s without "
                  f"the cluster's start ({t['sequential'] / t['ray']:.2f}x), {t['ray+start']:.1f} s with it "
                  f"({t['sequential'] / t['ray+start']:.2f}x)", flush=True)
        if args.cli:
            c = cli_sweep()
            print(f"whole command: --local {c['cli --local']:.1f} s, on a local Ray {c['cli ray']:.1f} s "
                  f"({c['cli --local'] / c['cli ray']:.2f}x)", flush=True)
        print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
