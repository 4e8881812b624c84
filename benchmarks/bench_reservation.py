"""Reservation planning benchmark: 1,000 random reservations on a 100-node plan over 2 days, 1 s step.

Each reservation has 2-3 R_ORDER stages; about one in five is periodic (daily). The plan uses
YARN's default sharing policy (CapacityOverTime, 100 % / 100 % over 24 h), so every placement also
pays for the policy's admission checks. For each agent the same seeded request stream is submitted
through the REST handler; the figure reported is the wall time per submitted reservation (median
of a few runs). The seed's per-step `greedy` reference is far slower, so it runs on a prefix of the
stream, and the table gives each agent's speed relative to it.

`python -m benchmarks.bench_reservation [--smoke]`, or `run(smoke)` from the bench runner.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from typing import Any

from apportion.reservation.agents import make_agent
from apportion.reservation.api import ReservationSystem
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import CapacityOverTimePolicy
from apportion.reservation.stepfn import Calculator

DAY = 86_400_000
NODE = (128 * 1024, 32)
AGENTS = ["greedy-left", "greedy-right", "aligned-left", "aligned-right", "greedy"]


def requests(n: int, seed: int = 42, horizon: int = 2 * DAY) -> list[dict[str, Any]]:
    """A seeded stream of REST submission bodies."""
    rng = random.Random(seed)
    out = []
    for i in range(1, n + 1):
        stages = []
        total = 0
        for _ in range(rng.randint(2, 3)):
            dur = rng.randint(5, 60) * 60_000 + rng.choice([0, 0, 500])
            gang = rng.randint(1, 4)
            stages.append({
                "capability": {"memory": rng.choice([2048, 4096, 8192]), "vCores": rng.randint(1, 4)},
                "num-containers": gang * rng.randint(1, 10),
                "min-concurrency": gang,
                "duration": dur,
            })
            total += dur
        window = int(total * rng.uniform(1.5, 3.0))
        periodic = rng.random() < 0.2
        arrival = rng.randint(0, (DAY if periodic else horizon) - window)
        d: dict[str, Any] = {
            "arrival": arrival,
            "deadline": arrival + window,
            "reservation-name": f"job{i}",
            "reservation-requests": {"reservation-request-interpreter": 2, "reservation-request": stages},
        }
        if periodic:
            d["recurrence-expression"] = str(DAY)
        out.append({"queue": "dedicated", "reservation-id": f"reservation_1700000000000_{i:04d}",
                    "reservation-definition": d})
    return out


def fresh(agent: str, nodes: int) -> ReservationSystem:
    plan = InMemoryPlan("dedicated", (NODE[0] * nodes, NODE[1] * nodes), step=1000,
                        calculator=Calculator("default"), policy=CapacityOverTimePolicy(1.0, 1.0, DAY),
                        max_periodicity=DAY, maximum_allocation=(8192, 4))
    return ReservationSystem(plan, make_agent(agent))


def place(agent: str, bodies: list[dict[str, Any]], nodes: int) -> tuple[float, int]:
    """Seconds to submit every body, and how many were accepted."""
    sysm = fresh(agent, nodes)
    users = [f"user{u}" for u in range(20)]
    t0 = time.perf_counter()
    ok = 0
    for i, b in enumerate(bodies):
        status, _ = sysm.submit(users[i % len(users)], b)
        ok += status == 202
    return time.perf_counter() - t0, ok


def run(smoke: bool = False) -> dict[str, dict[str, float]]:
    """Per-reservation time per agent; smoke is a tiny version that finishes in about a second."""
    n = 20 if smoke else 1000
    nodes = 5 if smoke else 100
    runs = 1 if smoke else 3
    ref_n = 5 if smoke else 100
    bodies = requests(n)
    results: dict[str, dict[str, float]] = {}
    for agent in AGENTS:
        use = bodies[:ref_n] if agent == "greedy" else bodies
        times = []
        accepted = 0
        for _ in range(1 if agent == "greedy" else runs):
            secs, accepted = place(agent, use, nodes)
            times.append(secs)
        med = statistics.median(times)
        per = med / len(use) * 1000
        results[f"reservation/{agent}"] = {
            "per_reservation_ms": per,
            "reservations_per_s": len(use) / med if med > 0 else 0.0,
            "reservations": len(use),
            "accepted": accepted,
        }
    ref = results["reservation/greedy"]["per_reservation_ms"]
    for r in results.values():
        r["speedup_vs_greedy_reference"] = ref / r["per_reservation_ms"] if r["per_reservation_ms"] > 0 else 0.0
    return results


def main(argv: list[str]) -> int:
    res = run("--smoke" in argv)
    print(f"{'agent':<28} {'reservations':>12} {'accepted':>9} {'ms/reservation':>15} {'vs greedy ref':>14}")
    for name, r in res.items():
        print(f"{name:<28} {int(r['reservations']):>12} {int(r['accepted']):>9} {r['per_reservation_ms']:>15.2f} "
              f"{r['speedup_vs_greedy_reference']:>13.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
