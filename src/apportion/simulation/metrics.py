"""Metrics of a finished simulation: per-job outcomes, per-queue waits and shares, utilisation, fairness,
evictions, reservations (summary.json and the report's tables).

Everything here reads a `SimulationResult` (simulation/result.py): the jobs' outcomes and the series
the Recorder (simulation/recorder.py) kept while the run went; every average is time-weighted over
those step functions.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from apportion.simulation.jobs import SimJob
from apportion.simulation.result import SimulationResult


def time_weighted(times: list[float], values: list[float], end: float) -> float:
    """Mean of a step function over [times[0], end], skipping NaN stretches."""
    if not times:
        return float("nan")
    t = np.asarray(times + [max(end, times[-1])])
    v = np.asarray(values, dtype=float)
    dt = np.diff(t)
    ok = ~np.isnan(v) & (dt > 0)
    if not ok.any():
        ok = ~np.isnan(v)
        return float(v[ok].mean()) if ok.any() else float("nan")
    return float((v[ok] * dt[ok]).sum() / dt[ok].sum())


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def _r(x: float, nd: int = 6) -> float | None:
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return None
    return round(float(x), nd)


def queue_of_record(job: SimJob) -> str:
    """The queue a job is reported under: its submitted queue (reservation jobs under the plan queue)."""
    return job.spec.queue


def summarize(res: SimulationResult) -> dict[str, Any]:
    """The summary (summary.json): deterministic, no wall-clock values."""
    rec = res.recorder
    end = rec.final_time
    jobs = res.jobs
    by_queue: dict[str, list[SimJob]] = defaultdict(list)
    for j in jobs:
        by_queue[queue_of_record(j)].append(j)
    queues: dict[str, Any] = {}
    for q in sorted(by_queue):
        js = by_queue[q]
        waits = [j.first_start - j.spec.arrival for j in js if j.first_start is not None]
        jcts = [j.finish - j.spec.arrival for j in js if j.state == "done" and j.finish is not None]
        entry: dict[str, Any] = {
            "jobs": len(js),
            "completed": sum(1 for j in js if j.state == "done"),
            "rejected": sum(1 for j in js if j.state == "rejected"),
            "killed": sum(1 for j in js if j.state == "killed"),
            "unfinished": sum(1 for j in js if j.state in ("active", "waiting", "held")),
            "wait": {"mean": _r(float(np.mean(waits)) if waits else float("nan")), "p50": _r(_pct(waits, 50)),
                     "p95": _r(_pct(waits, 95)), "max": _r(max(waits) if waits else float("nan"))},
            "jct": {"mean": _r(float(np.mean(jcts)) if jcts else float("nan")), "p50": _r(_pct(jcts, 50)),
                    "p95": _r(_pct(jcts, 95))},
            "evictions": sum(j.evictions for j in js),
            "lostGpuHours": _r(sum(j.lost_gpu_seconds for j in js) / 3600.0),
        }
        queues[q] = entry
    series: dict[str, Any] = {}
    for q in sorted(rec.queues):
        s = rec.queues[q]
        series[q] = {
            "allocated": {d: _r(time_weighted(s.times, s.allocated[d], end)) for d in rec.dims},
            "deserved": {d: _r(time_weighted(s.times, s.deserved[d], end)) for d in rec.dims},
            "pending": {d: _r(time_weighted(s.times, s.pending[d], end)) for d in rec.dims},
            "share": _r(time_weighted(s.times, s.share, end)),
        }
        if q in queues:
            queues[q]["timeAverage"] = series[q]
    # a reservable queue's jobs ran in its children (the plan follower's queues): its time averages
    # are their sums (a sum of time averages is the time average of the sum)
    for q in res.plans:
        kids = [k for k in series if k == f"{q}-default" or k in {e["id"] for e in res.reservation_log
                                                                    if e["queue"] == q}]
        if q in queues and kids:
            queues[q]["timeAverage"] = {
                m: {d: _r(sum(series[k][m][d] or 0.0 for k in kids)) for d in rec.dims}
                for m in ("allocated", "deserved", "pending")
            }
    util = {}
    for d in rec.dims:
        ratio = [u / t if t else 0.0 for u, t in zip(rec.used[d], rec.total[d])]
        util[d] = _r(time_weighted(rec.times, ratio, end))
    reasons: dict[str, int] = defaultdict(int)
    for _, _, _, why in rec.evictions:
        reasons[why] += 1
    node_failures = sum(1 for e in rec.events if e[2] == "NodeFailed")
    waits_all = [j.first_start - j.spec.arrival for j in jobs if j.first_start is not None]
    summary: dict[str, Any] = {
        "scenario": res.scenario.name,
        "label": res.label,
        "seed": res.seed,
        "endTime": _r(end, 3),
        "sessions": res.sessions,
        "events": res.events,
        "jobs": {
            "total": len(jobs),
            "completed": sum(1 for j in jobs if j.state == "done"),
            "rejected": sum(1 for j in jobs if j.state == "rejected"),
            "killed": sum(1 for j in jobs if j.state == "killed"),
            "unfinished": sum(1 for j in jobs if j.state in ("active", "waiting", "held")),
            "meanWait": _r(float(np.mean(waits_all)) if waits_all else float("nan")),
        },
        "utilisation": util,
        "fairness": {
            "jainMean": _r(time_weighted(rec.times, rec.fairness, end)),
            "jainMin": _r(float(np.nanmin(rec.fairness)) if any(not math.isnan(f) for f in rec.fairness) else float("nan")),
        },
        "evictions": {
            "reclaim": reasons.get("reclaim", 0),
            "preempt": reasons.get("preempt", 0),
            "nodeFailure": node_failures,
            "lostGpuHours": _r(sum(j.lost_gpu_seconds for j in jobs) / 3600.0),
            "lostCpuHours": _r(sum(j.lost_cpu_seconds for j in jobs) / 3600.0),
            # the waste of reclaim and preempt alone (node failures and expiry kills lose work too)
            "lostGpuHoursByReason": {r: _r(rec.lost_gpu_seconds.get(r, 0.0) / 3600.0) for r in ("reclaim", "preempt")},
            "jobsReclaimed": sum(1 for c in rec.evicted_jobs.values() if c.get("reclaim")),
            "jobsReclaimedTwiceOrMore": sum(1 for c in rec.evicted_jobs.values() if c.get("reclaim", 0) >= 2),
        },
        "queues": queues,
        "reservations": reservation_outcomes(res),
    }
    if not res.label:
        del summary["label"]
    return summary


def reservation_outcomes(res: SimulationResult) -> list[dict[str, Any]]:
    """Per reservation: accepted or why not, its window, the allocation its plan's agent placed
    (`[start, end, resources]` pieces), and whether its jobs ran inside the window."""
    out = []
    for e in res.reservation_log:
        entry: dict[str, Any] = {k: e[k] for k in ("name", "id", "queue", "user", "submitted", "accepted", "agent")
                                 if k in e}
        if e.get("message"):
            entry["message"] = e["message"]
        if e["accepted"]:
            entry["start"], entry["end"] = e["start"], e["end"]
            entry["allocation"] = e["pieces"]
            if "deletedByReplanner" in e:
                entry["deletedByReplanner"] = e["deletedByReplanner"]
            jobs = []
            for j in res.jobs:
                if j.spec.reservation != e["name"]:
                    continue
                inside = (j.state == "done" and j.first_start is not None and j.finish is not None
                          and j.first_start >= e["start"] - 1e-9 and j.finish <= e["end"] + 1e-9)
                jobs.append({"job": j.uid, "state": j.state, "start": _r(j.first_start) if j.first_start is not None else None,
                             "finish": _r(j.finish) if j.finish is not None else None, "insideWindow": inside})
            entry["jobs"] = jobs
            entry["honoured"] = bool(jobs) and all(x["insideWindow"] for x in jobs)
        else:
            rejected_jobs = [j.uid for j in res.jobs if j.spec.reservation == e["name"]]
            entry["jobs"] = [{"job": u, "state": "rejected"} for u in rejected_jobs]
        out.append(entry)
    return out


def job_rows(res: SimulationResult) -> list[dict[str, Any]]:
    """One row a job for jobs.csv."""
    rows = []
    for j in res.jobs:
        rows.append({
            "job": j.uid, "queue": j.spec.queue, "ranIn": j.queue, "tasks": j.spec.tasks,
            "minMember": j.spec.min_member, "gpusPerTask": j.gpus_per_task, "arrival": j.spec.arrival,
            "start": "" if j.first_start is None else j.first_start,
            "finish": "" if j.finish is None else j.finish,
            "wait": "" if j.first_start is None else round(j.first_start - j.spec.arrival, 6),
            "jct": "" if j.finish is None or j.state != "done" else round(j.finish - j.spec.arrival, 6),
            "run": "" if j.finish is None or j.last_start is None or j.state != "done" else round(j.finish - j.last_start, 6),
            "evictions": j.evictions, "lostGpuHours": round(j.lost_gpu_seconds / 3600.0, 6), "state": j.state,
            "reservation": j.spec.reservation, "message": j.message if j.state != "done" else "",
        })
    return rows
