"""The service's reservation submit job in process, without HTTP (issue 18's CPU per submission).

`bench_service.py submit` measures a live server over loopback, where the CPU per submission moves
with the machine's load (the writer groups more jobs a commit on a starved server). This runs the
writer's part alone, on one thread: a `Service` on a fresh SQLite file with the loop off and a clock
that moves 1/300 s per submission, the benchmark's submissions (one 1 GiB / 1 vCore container for 1
s, due in 10 to 60 minutes, users u0-u9; new-reservation, then the submit job as the writer runs it,
one commit each, on a connection kept as the writer keeps it), and every `--per-tick` submissions a
tick's writer jobs (`loop.parts`: the followers' work ahead of the step in pieces, `follow`,
`publish` in pieces, `schedule`) and a settle of the cycle collector, as the server runs them. It prints the median CPU time of a submit per block of 500 (the plan grows by one
reservation a submission), the last ticks' parts and longest writer job (CPU ms), and a digest of every answer and every allocation:
two trees that plan alike print the same digest. Under `valgrind --tool=callgrind` the difference of
two `--submissions` counts is an instruction count per submission, which a shared machine does not
move.

    python -m benchmarks.bench_submit [--submissions 6000] [--per-tick 300] [--smoke]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import random
import statistics
import tempfile
import time
from typing import Any

from apportion.service.core import Service, ServiceConfig

BLOCK = 500


def _definition(now: int, rng: random.Random) -> dict[str, Any]:
    """`bench_service.py`'s reservation: one container for 1 s, due in 10 to 60 minutes."""
    return {"arrival": now, "deadline": now + rng.randrange(600_000, 3_600_000), "reservation-name": "bench",
            "reservation-requests": {"reservation-request-interpreter": 0, "reservation-request": [
                {"capability": {"memory": 1024, "vCores": 1}, "num-containers": 1, "min-concurrency": 1,
                 "duration": 1000}]}}


def run(submissions: int, per_tick: int) -> dict[str, Any]:
    """The stream on a fresh service; CPU per submit by block, the last ticks' parts (ms), the digest."""
    clock = [1_700_000_000_000]
    digest = hashlib.sha256()
    per: list[float] = []
    ticks: list[tuple[float, ...]] = []
    answers: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as d:
        svc = Service(ServiceConfig(db_url=f"sqlite:///{d}/bench.db", loop=False, clock=lambda: clock[0]))
        rngs = [random.Random(k) for k in range(50)]
        svc.collector.start()  # as the server's lifespan starts it
        # the writer thread's connection, which it keeps (a tree before that had none to keep)
        held = getattr(svc.store, "hold", contextlib.nullcontext)()
        held.__enter__()
        for i in range(submissions):
            clock[0] += 1000 // 3 if i % 3 else 1000 - 2 * (1000 // 3)
            user = f"u{i % 10}"
            rid = svc.new_reservation(user)[1]["reservation-id"]
            # arrival stamps a few ms behind the clock, as the clients' are
            body = {"queue": "dedicated", "reservation-id": rid,
                    "reservation-definition": _definition(clock[0] - (i * 7) % 5, rngs[i % 50])}
            c0 = time.thread_time()
            svc.set_now(svc.clock())
            status, _answer = svc.committed(lambda: svc.reservations.submit(user, body))  # noqa: B023
            per.append(time.thread_time() - c0)
            answers[str(status)] = answers.get(str(status), 0) + 1
            digest.update(f"{rid} {status}\n".encode())
            if (i + 1) % per_tick == 0:
                # the tick's writer jobs as the server runs them (loop.parts), one after the other
                loop = svc.loop
                parts = loop.parts()
                spent: dict[str, float] = {}
                longest = 0.0
                result: Any = None
                while True:
                    try:
                        part, fn = parts.send(result)
                    except StopIteration:
                        break
                    c0 = time.thread_time()
                    result = fn()
                    took = (time.thread_time() - c0) * 1000
                    spent[part] = spent.get(part, 0.0) + took
                    longest = max(longest, took)
                del result  # the server keeps no state of a tick after it
                svc.collector.settle()
                ticks.append(tuple(spent.get(p, 0.0) for p in ("prepare", "follow", "publish", "schedule"))
                             + (longest,))
        held.__exit__(None, None, None)
        for _name, e in sorted(svc.reservations.plans.items()):
            for r in sorted(e.plan.reservations.values(), key=lambda r: str(r.id)):
                digest.update(f"{r.id} {r.intervals!r}\n".encode())
        svc.close()
        svc.collector.stop()
    return {"bench": "submit-in-process", "submissions": submissions, "per_tick": per_tick, "answers": answers,
            "digest": digest.hexdigest()[:16],
            "cpu_ms_per_submit_by_block": [round(statistics.median(per[i:i + BLOCK]) * 1000, 3)
                                           for i in range(0, len(per), BLOCK)],
            "cpu_ms_per_submit_mean": round(sum(per) / len(per) * 1000, 3) if per else None,
            "last_ticks_prepare_follow_publish_schedule_longest_ms": [[round(x, 1) for x in t] for t in ticks[-5:]]}


def main() -> None:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--submissions", type=int, default=6000)
    ap.add_argument("--per-tick", type=int, default=300, help="submissions between two ticks")
    ap.add_argument("--smoke", action="store_true", help="a short run: 600 submissions, two ticks")
    a = ap.parse_args()
    print(json.dumps(run(600 if a.smoke else a.submissions, max(1, a.per_tick))))


if __name__ == "__main__":
    main()
