"""The scheduler cache (issue 16): one event applied (median), a session in which nothing changed, the
cache's memory, and `cycle` end to end from a JSON dump (process start to JSON out).

Times are CPU seconds of this process (the machine is shared), except `cycle`'s, which are the
child process's wall and CPU time. The cluster is `generate.cluster_objects` with every pod but the last gang's bound and running (so a
session has a full cache and little to do). `python -m benchmarks.bench_state [--smoke]`.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from apportion.engine import run_cache_session
from apportion.framework.conf import parse_conf
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, MODIFIED, WatchEvent
from benchmarks.bench_simulation import CONF as CAPACITY_CONF
from benchmarks.generate import cluster_objects

ROOT = Path(__file__).resolve().parents[1]
SHAPES = {
    "state-5k-nodes-50k-pods": dict(nodes=5000, gangs=5000, pods_per_gang=10, queues=1000),
}
CYCLE_SHAPES = {
    "cycle-json-1k-nodes-10k-pods": dict(nodes=1000, gangs=1000, pods_per_gang=10, queues=100),
    "cycle-json-5k-nodes-50k-pods": dict(nodes=5000, gangs=5000, pods_per_gang=10, queues=1000),
}
SMOKE = {"state-smoke": dict(nodes=20, gangs=20, pods_per_gang=4, queues=4)}
CYCLE_SMOKE = {"cycle-json-smoke": dict(nodes=20, gangs=20, pods_per_gang=4, queues=4)}


def running_cluster(shape: dict[str, int]) -> list[dict[str, Any]]:
    """The shape's objects with the pods bound round-robin to nodes and running, their groups Running."""
    objs = cluster_objects(**shape)
    nodes = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]
    i = 0
    for o in objs:
        if o["kind"] == "Pod":
            o["spec"]["nodeName"] = nodes[i % len(nodes)]
            o["status"] = {"phase": "Running"}
            i += 1
        elif o["kind"] == "PodGroup":
            o.setdefault("status", {})["phase"] = "Running"
    return objs


def measure_state(shape: dict[str, int], repeats: int) -> dict[str, Any]:
    objs = running_cluster(shape)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    cache = SchedulerCache(report=lambda line: None)
    t0 = time.perf_counter()
    for i, o in enumerate(objs):
        cache.apply(WatchEvent(ADDED, o, f"bench {i}"))
    load_s = time.perf_counter() - t0
    gc.collect()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    # one event, the commonest of a live watch: a running pod's status updated (a new resourceVersion and
    # a Ready condition; its phase stays). Then one the cache must parse: the pod's spec changed (a label
    # added, as kubectl label does).
    pods = [o for o in objs if o["kind"] == "Pod"][:2000]
    per_event, per_parse = [], []
    for i, o in enumerate(pods):
        status = {**o["status"], "conditions": [{"type": "Ready", "status": "True"}]}
        ev = WatchEvent(MODIFIED, {**o, "metadata": {**o["metadata"], "resourceVersion": str(i)}, "status": status},
                        "bench")
        t = time.process_time()
        cache.apply(ev)
        per_event.append(time.process_time() - t)
    for i, o in enumerate(pods):
        meta = {**o["metadata"], "resourceVersion": f"l{i}", "labels": {"bench": str(i)}}
        ev = WatchEvent(MODIFIED, {**o, "metadata": meta}, "bench")
        t = time.process_time()
        cache.apply(ev)
        per_parse.append(time.process_time() - t)
    # a session in which nothing changed: the second of two over the same cache (given again, as the
    # engine does when the cache has not changed), and the same session run in full for comparison
    run_cache_session(cache)
    idle, full = [], []
    for _ in range(repeats):
        t = time.process_time()
        run_cache_session(cache)
        idle.append(time.process_time() - t)
    for _ in range(max(1, repeats // 2)):
        t = time.process_time()
        run_cache_session(cache, reuse=False)
        full.append(time.process_time() - t)
    # a session after one change, the service's and shadow's usual period: a running pod completes, then
    # a session (Volcano's default conf, and capacity in tree mode as the simulation benchmark runs it)
    after_change: dict[str, float] = {}
    running = [o for o in objs if o["kind"] == "Pod"]
    for label, conf in (("default", None), ("capacity", parse_conf(CAPACITY_CONF))):
        run_cache_session(cache, conf)
        times = []
        for _ in range(repeats * 2):
            o = running.pop()
            cache.apply(WatchEvent(MODIFIED, {**o, "status": {"phase": "Succeeded"}}, "bench"))
            t = time.process_time()
            run_cache_session(cache, conf)
            times.append(time.process_time() - t)
        after_change[label] = statistics.median(times)
    return {"median_s": statistics.median(idle), "idle_session_s": statistics.median(idle),
            "idle_session_full_s": statistics.median(full),
            "session_after_one_change_s": after_change["default"],
            "session_after_one_change_capacity_s": after_change["capacity"],
            "event_median_us": statistics.median(per_event) * 1e6,
            "event_parsed_median_us": statistics.median(per_parse) * 1e6, "load_s": load_s,
            "objects": len(objs), "cache_rss_bytes": rss - rss0, "peak_rss_bytes": rss}


def measure_cycle_json(shape: dict[str, int], repeats: int) -> dict[str, Any]:
    objs = cluster_objects(**shape)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "dump.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
        walls, cpus = [], []
        for _ in range(repeats):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", "from apportion.cli import main; main()", "cycle", "-o",
                                   "json", str(path)], capture_output=True, cwd=ROOT, env=dict(os.environ))
            walls.append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if proc.returncode != 0:
                raise RuntimeError(proc.stderr.decode()[-500:])
        placed = len(json.loads(proc.stdout)["binds"])
    med = statistics.median(walls)
    return {"median_s": med, "median_cpu_s": statistics.median(cpus), "runs": walls, "placed": placed}


def run(smoke: bool = False, repeats: int = 5, only: str | None = None) -> dict[str, Any]:
    """The state shapes and the JSON cycles (`only`: the shapes whose name contains it)."""
    out: dict[str, Any] = {}
    for name, shape in (SMOKE if smoke else SHAPES).items():
        if only is None or only in name:
            out[name] = measure_state(shape, 1 if smoke else repeats)
    for name, shape in (CYCLE_SMOKE if smoke else CYCLE_SHAPES).items():
        if only is None or only in name:
            out[name] = measure_cycle_json(shape, 1 if smoke else 3)
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("only", nargs="?", default=None, help="only the shapes whose name contains this")
    ap.add_argument("--smoke", action="store_true", help="small shapes that run in seconds")
    a = ap.parse_args()
    print(json.dumps(run(smoke=a.smoke, only=a.only), indent=1))
