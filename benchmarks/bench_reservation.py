"""Reservation planning benchmark: 1,000 random reservations on a 100-node plan over 2 days, 1 s step.

Each reservation has 2-3 R_ORDER stages; about one in five is periodic (daily). The plan uses
YARN's default sharing policy (CapacityOverTime, 100 % / 100 % over 24 h), so every placement also
pays for the policy's admission checks. For each agent the same seeded request stream is submitted
through the REST handler; the figures reported are the wall time and the CPU time (process time)
per submitted reservation, each the median of a few runs. On a shared machine the CPU time is the
one to compare: wall time also counts what other processes took.

`greedy` is the seed's agent walking constant segments; `greedy-reference` is the same algorithm
walked one time step at a time, as the seed describes it (issue 7 keeps it as the reference). The
reference is far slower, so it runs on a prefix of the stream only, and fast `greedy` is timed on
that same prefix too: the `ref/fast` column is the ratio of the two on identical requests (and the
benchmark checks that they accepted the same reservations).

`python -m benchmarks.bench_reservation [--smoke] [--runs N] [--agents a,b]`, or `run(smoke)`
from the bench runner.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from typing import Any

from apportion.reservation.agents import make_agent
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import CapacityOverTimePolicy
from apportion.reservation.resmath import Calculator
from apportion.reservation.system import ReservationSystem

DAY = 86_400_000
NODE = (128 * 1024, 32)
AGENTS = ["greedy-left", "greedy-right", "aligned-left", "aligned-right", "greedy"]
REFERENCE = "greedy-reference"


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
    return ReservationSystem.single(plan, make_agent(agent))


def place(agent: str, bodies: list[dict[str, Any]], nodes: int) -> tuple[float, float, int, ReservationSystem]:
    """Wall and CPU seconds to submit every body, how many were accepted, and the system afterwards."""
    sysm = fresh(agent, nodes)
    users = [f"user{u}" for u in range(20)]
    t0 = time.perf_counter()
    c0 = time.process_time()
    ok = 0
    for i, b in enumerate(bodies):
        status, _ = sysm.submit(users[i % len(users)], b)
        ok += status == 202
    return time.perf_counter() - t0, time.process_time() - c0, ok, sysm


def _timed(agent: str, bodies: list[dict[str, Any]], nodes: int, runs: int) -> tuple[dict[str, float], ReservationSystem]:
    times = []
    cpu = []
    accepted = 0
    sysm: ReservationSystem | None = None
    for _ in range(runs):
        secs, cpu_secs, accepted, sysm = place(agent, bodies, nodes)
        times.append(secs)
        cpu.append(cpu_secs)
    assert sysm is not None
    med = statistics.median(times)
    return {
        "per_reservation_ms": med / len(bodies) * 1000,
        "per_reservation_cpu_ms": statistics.median(cpu) / len(bodies) * 1000,
        "reservations_per_s": len(bodies) / med if med > 0 else 0.0,
        "reservations": len(bodies),
        "accepted": accepted,
    }, sysm


def run(smoke: bool = False, runs: int | None = None, agents: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Per-reservation time per agent; smoke is a tiny version that finishes in about a second."""
    n = 20 if smoke else 1000
    nodes = 5 if smoke else 100
    runs = runs if runs is not None else (1 if smoke else 3)
    ref_n = 5 if smoke else 50
    bodies = requests(n)
    results: dict[str, dict[str, float]] = {}
    for agent in agents or AGENTS:
        results[f"reservation/{agent}"], _ = _timed(agent, bodies, nodes, runs)
    # the reference against fast greedy on the same prefix of the stream
    prefix = bodies[:ref_n]
    ref, ref_sys = _timed(REFERENCE, prefix, nodes, 1)
    fast, fast_sys = _timed("greedy", prefix, nodes, runs)
    same = {k: v.intervals for k, v in ref_sys.plan.reservations.items()} == {
        k: v.intervals for k, v in fast_sys.plan.reservations.items()}
    if not same:
        raise AssertionError("greedy and greedy-reference placed the benchmark requests differently")
    ratio = ref["per_reservation_ms"] / fast["per_reservation_ms"] if fast["per_reservation_ms"] > 0 else 0.0
    results[f"reservation/{REFERENCE}"] = dict(ref, reference_over_fast=ratio)
    results[f"reservation/greedy@{ref_n}"] = dict(fast, reference_over_fast=ratio)
    return results


def main(argv: list[str]) -> int:
    runs = None
    agents = None
    if "--runs" in argv:
        runs = int(argv[argv.index("--runs") + 1])
    if "--agents" in argv:
        agents = argv[argv.index("--agents") + 1].split(",")
    res = run("--smoke" in argv, runs, agents)
    print(f"{'agent':<32} {'reservations':>12} {'accepted':>9} {'ms/reservation':>15} {'cpu ms/res':>11} "
          f"{'ref/fast':>9}")
    for name, r in res.items():
        ratio = f"{r['reference_over_fast']:>8.1f}x" if "reference_over_fast" in r else ""
        print(f"{name:<32} {int(r['reservations']):>12} {int(r['accepted']):>9} {r['per_reservation_ms']:>15.2f} "
              f"{r['per_reservation_cpu_ms']:>11.2f} {ratio:>9}")
    ref = res[f"reservation/{REFERENCE}"]
    print(f"{REFERENCE} runs on the first {int(ref['reservations'])} requests only (one time step at a time is "
          f"slow); greedy@{int(ref['reservations'])} is fast greedy on the same requests, and ref/fast is their ratio.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
