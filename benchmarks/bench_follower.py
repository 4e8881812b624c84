"""The plan follower's step at thousands of active reservations, in process (issue 18's writer stall).

The shape of `bench_service.py submit` at 300 submissions/s: every second `--per-tick` reservations
arrive, each one container (1 GB, 1 vCore) for 1-10 minutes placed 10-60 minutes after its arrival and
active from its arrival (zero until its allocation, as YARN's zero-padding makes it); the plan is
first filled with `--reservations` of them arrived over the seconds before. Then `--ticks` ticks: the
new arrivals, the clock one second on, one follower step, whose CPU time (this thread's) is recorded;
every fifth tick has no arrival. Both followers run on the same stream, alternately (`full`:
`PlanFollower`, the step main's service takes; `incremental`: `IncrementalFollower`), each on its
own plan, and their published states are checked equal.

    python benchmarks/bench_follower.py [--reservations 6000] [--per-tick 300] [--ticks 30] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

from apportion.reservation.definition import ReservationId
from apportion.reservation.follower import FollowerState, PlanFollower
from apportion.reservation.follower_inc import IncrementalFollower
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.policies import NoPolicy

CAP = (1000 * 65536, 1000 * 32)


def _stream(n: int, per_tick: int, ticks: int, seed: int) -> list[list[ReservationAllocation]]:
    """Arrivals per second: the first n over the seconds before the clock's start, then the ticks'."""
    rng = random.Random(seed)
    before = (n + per_tick - 1) // per_tick
    out: list[list[ReservationAllocation]] = []
    seq = 0
    for sec in range(before + ticks):
        batch = []
        k = per_tick if sec < before else (0 if (sec - before) % 5 == 4 else per_tick)
        for _ in range(k):
            seq += 1
            arrival = sec * 1000 + rng.randrange(1000)
            s = arrival + rng.randrange(600, 3600) * 1000
            e = s + rng.randrange(60, 600) * 1000
            batch.append(ReservationAllocation(ReservationId(1700000000000, seq), f"user{seq % 10}", None,
                                               arrival, e, [(s, e, (1024, 1))]))
        out.append(batch)
    return out


def _plan() -> InMemoryPlan:
    return InMemoryPlan("dedicated", CAP, step=1000, policy=NoPolicy())


def _copy(r: ReservationAllocation) -> ReservationAllocation:
    return ReservationAllocation(r.id, r.user, None, r.start, r.end, list(r.intervals))


def run(kind: str, stream: list[list[ReservationAllocation]], ticks: int) -> tuple[list[float], list[FollowerState]]:
    """Fill a plan, step once, then tick; the CPU ms of each tick's step and the states published."""
    plan = _plan()
    follower = IncrementalFollower(plan) if kind == "incremental" else PlanFollower(plan)
    before = len(stream) - ticks
    for batch in stream[:before]:
        for r in batch:
            plan.add_reservation(_copy(r), is_recovering=True)
    follower.step(before * 1000)
    ms, states = [], []
    for i, batch in enumerate(stream[before:]):
        for r in batch:
            plan.add_reservation(_copy(r), is_recovering=True)
        c0 = time.thread_time()
        states.append(follower.step((before + i + 1) * 1000))
        ms.append((time.thread_time() - c0) * 1000)
    return ms, states


def main() -> None:
    """Run both followers alternately and print the step's CPU p50 / p95 / max."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reservations", type=int, default=6000)
    ap.add_argument("--per-tick", type=int, default=300)
    ap.add_argument("--ticks", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    stream = _stream(a.reservations, a.per_tick, a.ticks, a.seed)
    for rnd in range(a.rounds):
        got: dict[str, list[FollowerState]] = {}
        for kind in ("full", "incremental") if rnd % 2 == 0 else ("incremental", "full"):
            load = os.getloadavg()[0]
            ms, got[kind] = run(kind, stream, a.ticks)
            quiet = [m for i, m in enumerate(ms) if i % 5 == 4]
            busy = [m for i, m in enumerate(ms) if i % 5 != 4]
            q = statistics.quantiles(busy, n=20, method="inclusive")
            print(f"round {rnd} {kind:12s} load {load:4.1f}: step CPU with {a.per_tick} arrivals p50 "
                  f"{statistics.median(busy):6.2f} ms p95 {q[18]:6.2f} max {max(busy):6.2f}; "
                  f"no arrival p50 {statistics.median(quiet):6.2f} ms; active {len(got[kind][-1].active)}",
                  flush=True)
        if got["full"] != got["incremental"]:
            raise SystemExit("the followers published different states")


if __name__ == "__main__":
    main()
