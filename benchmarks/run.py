"""`make bench`: run every benchmark shape, print a table (median wall and CPU time, throughput, peak
RSS, target) and write benchmarks/results.json.

Each job runs in its own process, so its peak RSS is its own; the two cycle shapes run apart for that
reason. `--smoke` runs the tiny shapes (the test suite does, so the benchmarks cannot rot) and writes
nothing.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODULES = ["bench_cycle", "bench_reservation", "bench_simulation", "bench_state"]
#: (module, keyword arguments of its run()) per process; smoke runs one process per module
JOBS: list[tuple[str, dict[str, Any]]] = [
    ("bench_cycle", {"only": "cycle-1k"}),
    ("bench_cycle", {"only": "cycle-5k"}),
    ("bench_reservation", {}),
    ("bench_simulation", {}),
    ("bench_state", {"only": "state-"}),
    ("bench_state", {"only": "cycle-json"}),
]
#: issue 7's targets on this 2-core machine: (limit, unit) of the median
TARGETS = {
    "cycle-1k-nodes-10k-pods": (1.0, "s"),
    "cycle-5k-nodes-50k-pods": (10.0, "s"),
    "simulation-15k-jobs-1k-queues": (30.0, "s"),
    "reservation/": (1.0, "ms/res"),
    # issue 16
    "state-5k-nodes-50k-pods": (0.005, "s"),
    "cycle-json-1k-nodes-10k-pods": (1.2, "s"),
    "cycle-json-5k-nodes-50k-pods": (6.0, "s"),
}
PEAK_RSS_LIMIT = {"cycle-5k-nodes-50k-pods": 2 * 2**30}


def _one(module: str, smoke: bool, kwargs: dict[str, Any]) -> dict[str, Any]:
    code = (
        "import json, resource, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        f"from benchmarks import {module} as m\n"
        f"out = m.run(smoke={smoke}, **{kwargs!r})\n"
        "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024\n"
        "print(json.dumps({'results': out, 'peak_rss_bytes': rss}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def _target(name: str) -> tuple[float, str] | None:
    if "reference" in name or "@" in name:
        return None  # the step-by-step reference agent, and the fast agent timed on its prefix
    for prefix, target in TARGETS.items():
        if name == prefix or (prefix.endswith("/") and name.startswith(prefix)):
            return target
    return None


def _row(name: str, r: dict[str, Any], rss: float, smoke: bool) -> str:
    if "median_s" in r:
        med, unit = r["median_s"], "s"
    else:
        med, unit = r.get("per_reservation_ms", 0.0), "ms/res"
    cpu = r.get("median_cpu_s", r.get("per_reservation_cpu_ms"))
    thr = r.get("pods_per_s") or r.get("events_per_s") or r.get("reservations_per_s") or 0
    target = None if smoke else _target(name)
    verdict = ""
    if target is not None:
        verdict = f"<= {target[0]:g}{target[1]} {'met' if med <= target[0] else 'NOT met'}"
    limit = None if smoke else PEAK_RSS_LIMIT.get(name)
    if limit is not None:
        verdict += f"; RSS <= {limit / 2**30:g}Gi {'met' if rss <= limit else 'NOT met'}"
    cpu_s = f"{cpu:>8.3f}{'s' if unit == 's' else 'ms'}" if cpu is not None else f"{'':>10}"
    return f"{name:<34} {med:>8.3f}{unit:<6} {cpu_s} {thr:>12.0f}/s {rss / 2**20:>7.0f}Mi  {verdict}"


def main(argv: list[str]) -> int:
    smoke = "--smoke" in argv
    results: dict[str, Any] = {
        "machine": f"{platform.machine()} {platform.processor() or ''} python {platform.python_version()}",
        "smoke": smoke, "benchmarks": {}}
    jobs = [(m, {}) for m in MODULES] if smoke else JOBS
    for module, kwargs in jobs:
        if not (HERE / f"{module}.py").exists():
            continue
        label = module + "".join(f"[{v}]" for v in kwargs.values())
        results["benchmarks"][label] = _one(module, smoke, kwargs)
    print(f"{'benchmark':<34} {'median':>14} {'cpu':>9} {'throughput':>14} {'peak RSS':>9}  target")
    for label, res in results["benchmarks"].items():
        if "error" in res:
            print(f"{label:<34} error: {res['error']}")
            continue
        for name, r in res["results"].items():
            print(_row(name, r, res["peak_rss_bytes"], smoke))
    if not smoke:
        (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
