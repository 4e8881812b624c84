"""`make bench`: run every benchmark shape, print a table (median wall time, throughput, peak RSS)
and write benchmarks/results.json. Each shape runs in its own process so peak RSS is its own."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODULES = ["bench_cycle", "bench_reservation", "bench_simulation"]


def _one(module: str, smoke: bool) -> dict:
    code = (
        "import json, resource, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        f"from benchmarks import {module} as m\n"
        f"out = m.run(smoke={smoke})\n"
        "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024\n"
        "print(json.dumps({'results': out, 'peak_rss_bytes': rss}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    smoke = "--smoke" in argv
    results = {"machine": f"{platform.machine()} {platform.processor() or ''} python {platform.python_version()}",
               "smoke": smoke, "benchmarks": {}}
    for module in MODULES:
        if not (HERE / f"{module}.py").exists():
            continue
        results["benchmarks"][module] = _one(module, smoke)
    print(f"{'benchmark':<40} {'median':>10} {'throughput':>16} {'peak RSS':>10}")
    for module, res in results["benchmarks"].items():
        if "error" in res:
            print(f"{module:<40} error: {res['error']}")
            continue
        rss = res["peak_rss_bytes"] / 2**20
        for name, r in res["results"].items():
            med = r.get("median_s", r.get("per_reservation_ms", 0))
            unit = "s" if "median_s" in r else "ms/res"
            thr = r.get("pods_per_s") or r.get("events_per_s") or r.get("reservations_per_s") or 0
            print(f"{name:<40} {med:>8.3f}{unit:<3} {thr:>14.0f}/s {rss:>8.0f}Mi")
    if not smoke:
        (HERE / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
