"""The outcome hash of a simulation run of the benchmark shape (bench_simulation's scenario with fewer
jobs): every job's outcome and every series the recorder keeps, so a change that must not change what
the simulator decides can be checked on a run of a minute or two.

`python -m benchmarks.outcome_hash [JOBS] [VARIANT]` (default 1,000 jobs, the benchmark's conf) prints
the hash, the sessions and events, and the wall and CPU seconds; VARIANT names one of bench_simulation's
RECLAIM_VARIANTS (`reclaim`, `reclaim+gangAtomic`, ...) to hash a run with reclaim on.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time

from apportion.cluster.model import TaskStatus
from apportion.simulation.engine import simulate
from benchmarks.bench_simulation import RECLAIM_VARIANTS, load

#: the task states as the hash has always spelt them (the simulator's own strings before they became
#: TaskStatus), so hashes stay comparable across that change
_AS_HASHED = {TaskStatus.PENDING: "pending", TaskStatus.RUNNING: "running", TaskStatus.RELEASING: "releasing",
              TaskStatus.SUCCEEDED: "done"}


def outcome_hash(jobs: int = 1000, variant: str = "no-reclaim") -> dict[str, object]:
    """Run the shape with `jobs` jobs (and a RECLAIM_VARIANTS conf); the first 16 hex digits of the
    SHA-256 of its outcome."""
    sc = load(dict(jobs=jobs, queues=1000, parents=32, nodes=240, interarrival=0.5,
                   variant=RECLAIM_VARIANTS[variant]))
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(sc)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    h = hashlib.sha256()
    for j in res.jobs:
        h.update(repr((j.uid, j.state, j.first_start, j.last_start, j.finish, j.evictions, j.lost_gpu_seconds,
                       j.message, j.queue, j.phase.value,
                       [(_AS_HASHED[t.status], t.node, t.attempt) for t in j.tasks])).encode())
    rec = res.recorder
    h.update(repr(rec.times).encode())
    for name in sorted(rec.queues):
        h.update(repr((name, dict(sorted(vars(rec.queues[name]).items())))).encode())
    h.update(repr((dict(rec.used), dict(rec.total), rec.fairness, rec.busy, rec.events, rec.evictions)).encode())
    return {"hash": h.hexdigest()[:16], "sessions": res.sessions, "events": res.events,
            "wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}


if __name__ == "__main__":
    print(json.dumps(outcome_hash(int(sys.argv[1]) if len(sys.argv) > 1 else 1000,
                                  sys.argv[2] if len(sys.argv) > 2 else "no-reclaim")))
