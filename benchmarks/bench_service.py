"""The service's submit target (issue 18): reservation submissions from 50 concurrent clients on SQLite,
against a real `apportion serve` on loopback: accepted submissions per second and the p99 latency of a
submit (target: >= 300/s, p99 <= 50 ms on 2 cores). The clients run on the same machine, so they take
CPU from the server; the number is a lower bound of what the server alone would do.

    python benchmarks/bench_service.py [--clients 50] [--seconds 20]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "service"))

from svc_helpers import definition, now_ms  # noqa: E402
from svc_server import LiveServer  # noqa: E402


def _client(url: str, k: int, until: float, lat: list[float], accepted: list[int], lock: threading.Lock) -> None:
    mine: list[float] = []
    ok = 0
    with httpx.Client(base_url=url, params={"user.name": f"u{k % 10}"}, timeout=30) as c:
        while time.monotonic() < until:
            rid = c.post("/ws/v1/cluster/reservation/new-reservation").json()["reservation-id"]
            t = now_ms()
            body = {"queue": "dedicated", "reservation-id": rid, "reservation-definition": definition(
                t, t + 600_000, memory=1024, vcores=1, containers=1, duration=1000)}
            t0 = time.perf_counter()
            r = c.post("/ws/v1/cluster/reservation/submit", json=body)
            mine.append(time.perf_counter() - t0)
            ok += r.status_code == 202
    with lock:
        lat.extend(mine)
        accepted.append(ok)


def run(clients: int = 50, seconds: float = 20.0) -> dict[str, float]:
    """Drive a fresh server; accepted submissions per second and latency percentiles (ms)."""
    with tempfile.TemporaryDirectory() as d:
        server = LiveServer(f"sqlite:///{d}/bench.db", Path(d)).start()
        try:
            lat: list[float] = []
            accepted: list[int] = []
            lock = threading.Lock()
            until = time.monotonic() + seconds
            threads = [threading.Thread(target=_client, args=(server.url, k, until, lat, accepted, lock))
                       for k in range(clients)]
            start = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.monotonic() - start
        finally:
            server.stop()
    lat.sort()
    return {"clients": clients, "seconds": round(wall, 1), "submits": len(lat),
            "accepted_per_s": round(sum(accepted) / wall, 1),
            "p50_ms": round(lat[len(lat) // 2] * 1000, 1), "p99_ms": round(lat[int(len(lat) * 0.99)] * 1000, 1)}


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    print(json.dumps(run(args.clients, args.seconds)))


if __name__ == "__main__":
    main()
