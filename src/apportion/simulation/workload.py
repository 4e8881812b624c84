"""Synthetic workload: generators with seeded arrival, duration and size distributions.

Each generator draws from its own numpy Generator seeded by (run seed, generator name), so adding or
removing one generator leaves the jobs of the others unchanged, and the same seed gives the same jobs.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from apportion.errors import InputError, shown
from apportion.simulation.scenario import MAX_JOB_TASKS, MAX_WORKLOAD_TASKS, GeneratorSpec, JobSpec, Scenario


def rng_for(seed: int, name: str) -> np.random.Generator:
    """A generator private to one named stream of one run."""
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])


def draw(dist: Any, rng: np.random.Generator, n: int, where: str) -> np.ndarray:
    """n samples of a distribution written as in docs/scenario.md (a number is a constant)."""
    if isinstance(dist, (int, float)):
        return np.full(n, float(dist))
    if "constant" in dist:
        return np.full(n, float(dist["constant"]))
    if "exponential" in dist:
        return rng.exponential(float(dist["exponential"]), n)
    if "uniform" in dist:
        lo, hi = (float(x) for x in dist["uniform"])
        if hi < lo:
            raise InputError("uniform bounds are reversed", where=f"{where}.uniform")
        return rng.uniform(lo, hi, n)
    if "lognormal" in dist:
        p = dist["lognormal"]
        out = rng.lognormal(np.log(float(p["median"])), float(p["sigma"]), n)
        lo = float(dist.get("min", -np.inf))
        hi = float(dist.get("max", np.inf))
        return np.clip(out, lo, hi)
    if "choice" in dist:
        values = np.asarray(dist["choice"], dtype=float)
        w = dist.get("weights")
        if w is not None:
            if len(w) != len(values):
                raise InputError(f"{len(w)} weights for {len(values)} values", where=f"{where}.weights")
            pw = np.asarray(w, dtype=float)
            if pw.sum() <= 0:
                raise InputError("weights sum to zero", where=f"{where}.weights")
            return rng.choice(values, size=n, p=pw / pw.sum())
        return rng.choice(values, size=n)
    raise InputError("unknown distribution", where=where)  # the schema rules this out


def expand_generator(g: GeneratorSpec, seed: int) -> list[JobSpec]:
    """The generator's jobs. Draw order is fixed (arrivals, durations, sizes, queues) for determinism."""
    rng = rng_for(seed, g.name)
    n = g.count
    if n == 0:
        return []
    gaps = draw(g.interarrival, rng, n, f"{g.where}.interarrival")
    if (gaps < 0).any():
        raise InputError("interarrival times must not be negative", where=f"{g.where}.interarrival")
    arrivals = g.start + np.cumsum(gaps) - gaps[0]  # the first job arrives at `start`
    durations = draw(g.duration, rng, n, f"{g.where}.duration")
    if (durations <= 0).any():
        raise InputError("durations must be positive", where=f"{g.where}.duration")
    drawn = np.maximum(1, np.rint(draw(g.tasks, rng, n, f"{g.where}.tasks")))
    if not (drawn <= MAX_JOB_TASKS).all():  # also catches NaN: the cast below would make it garbage
        raise InputError(f"a job may have at most {MAX_JOB_TASKS:,} tasks; this draws {shown(float(drawn.max()))}",
                         where=f"{g.where}.tasks")
    sizes = drawn.astype(int)
    if int(sizes.sum()) > MAX_WORKLOAD_TASKS:  # before building a JobSpec per job
        raise InputError(f"the generator draws {int(sizes.sum()):,} tasks; a workload has at most "
                         f"{MAX_WORKLOAD_TASKS:,}", where=f"{g.where}.count")
    names = sorted(g.queues)
    weights = np.array([g.queues[q] for q in names], dtype=float)
    picks = rng.choice(len(names), size=n, p=weights / weights.sum())
    jobs = []
    for i in range(n):
        tasks = int(sizes[i])
        jobs.append(JobSpec(
            name=f"{g.name}-{i:04d}", queue=names[int(picks[i])],
            # whole milliseconds: keeps times printable and comparisons exact across runs
            arrival=round(float(arrivals[i]), 3), duration=max(0.001, round(float(durations[i]), 3)),
            tasks=tasks, min_member=tasks if g.gang else 1, resources=g.resources.clone(),
            priority_class=g.priority_class, preemptable=g.preemptable, source=g.where,
        ))
    return jobs


def workload(scenario: Scenario, seed: int | None = None) -> list[JobSpec]:
    """Every job of the scenario (explicit, traces, generators), in (arrival, name) order."""
    s = scenario.run.seed if seed is None else seed
    jobs = list(scenario.jobs)
    for g in scenario.generators:
        jobs.extend(expand_generator(g, s))
    total = sum(j.tasks for j in jobs)
    if total > MAX_WORKLOAD_TASKS:
        raise InputError(f"the workload has {total:,} tasks; at most {MAX_WORKLOAD_TASKS:,} fit in a bounded run",
                         where=f"{scenario.source}: workload")
    names: set[str] = set()
    for j in jobs:
        if j.name in names:
            raise InputError(f"two jobs are named {j.name!r}", where=j.source or scenario.source)
        names.add(j.name)
    jobs.sort(key=lambda j: (j.arrival, j.name))
    return jobs
