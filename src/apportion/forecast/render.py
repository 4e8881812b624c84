"""Terminal output of `forecast` and `diff` (80 columns; every forecast is labelled an estimate)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from apportion.forecast.core import Forecast
from apportion.forecast.text import resources, row, rows, seconds, wrap

if TYPE_CHECKING:  # a type only: `forecast` prints without importing the diff (`diff` imports it itself)
    from apportion.forecast.diff import Diff

_JOB_W, _QUEUE_W, _START_W = 28, 12, 19


def _stamp(now: datetime, s: float | None) -> str:
    if s is None:
        return "not foreseen"
    return (now + timedelta(seconds=s)).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def forecast_lines(fc: Forecast) -> list[str]:
    """The forecast as text lines of at most 80 characters."""
    now = fc.now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    arrivals = fc.basis.get("futureArrivals", 0)
    out = wrap(f"Forecast from {now}. ESTIMATES: simulated forward with the real scheduler and conf; "
               + ("no new jobs are assumed to arrive." if not arrivals else f"{arrivals} future arrivals included.")
               + ("" if fc.runs == 1 else f" Runtimes drawn {fc.runs} times: median start, 80 % interval."))
    out += wrap(f"Runtimes: {fc.basis['summary']}.", indent="  ")
    if fc.horizon is not None:
        out += wrap(f"Horizon: {seconds(fc.horizon)} after now.", indent="  ")
    out.append("")
    if not fc.jobs:
        out.append("No pending jobs.")
        return out
    widths = [_JOB_W, _QUEUE_W, _START_W]
    out.append(row(["JOB", "QUEUE", "EST. START (UTC)", "IN"], widths))
    for j in fc.jobs:
        out += rows([j.job, j.queue, _stamp(fc.now, j.start_in), seconds(j.start_in)], widths)
        if j.runs > 1:
            out += wrap(f"80 % of runs: {_stamp(fc.now, j.low)} to {_stamp(fc.now, j.high)} "
                        f"({j.started_runs} of {j.runs} runs start it)", indent="    ", first="  ")
        if j.reason:
            out += wrap(j.reason, indent="    ", first="  ")
        elif j.held_for:
            out += wrap(f"held out of the scheduler until its reservation {j.held_for} is active",
                        indent="    ", first="  ")
        if j.fits:
            out.append("  would start sooner with one of (each checked in simulation):")
            for f in j.fits:
                out += wrap(f.text, indent="      ", first="    - ")
    for w in fc.warnings:
        out += wrap(f"warning: {w}", indent="  ")
    return out


def diff_lines(d: Diff) -> list[str]:
    """The diff as text lines of at most 80 characters."""
    out = wrap(f"Current: {d.current_source}. Proposed: {d.proposed_source}. One session each on the "
               "same cluster state.")
    out.append("")
    if d.queues:
        out.append("Queues (what changes):")
        widths = [16, 14, 23]
        out.append(row(["  QUEUE", "FIELD", "CURRENT", "PROPOSED"], widths))
        for q in d.queues:
            cur, new = q["current"], q["proposed"]
            fmt = (lambda v: "-" if v is None else f"{v:.3f}") if q["field"] == "share" else resources
            out += rows([f"  {q['queue']}", q["field"], fmt(cur), fmt(new)], widths)
    else:
        out.append("Queues: no change in deserved, realCapability or share.")
    out.append("")
    changed = [j for j in d.jobs if j.changed]
    out.append(f"Pending jobs: {len(d.jobs)}, {len(changed)} with another outcome.")
    if d.jobs:
        widths = [_JOB_W + 2, _QUEUE_W, 12]
        out.append(row(["  JOB", "QUEUE", "CURRENT", "PROPOSED"], widths))
        for j in d.jobs:
            mark = "" if j.changed else " (same)"
            out += rows([f"  {j.job}", j.queue, j.current, j.proposed + mark], widths)
    out.append("")
    if d.evictions:
        out.append("Evictions under the proposed configuration (eviction preview):")
        widths = [_JOB_W + 10, 10]
        out.append(row(["  POD", "REASON", "ALSO UNDER CURRENT"], widths))
        for e in d.evictions:
            out += rows([f"  {e.pod}", e.reason, "yes" if e.also_current else "no"], widths)
    else:
        out.append("Evictions under the proposed configuration: none.")
    if d.no_longer_evicted:
        out += wrap("No longer evicted: " + ", ".join(d.no_longer_evicted), indent="  ")
    for w in d.warnings:
        out += wrap(f"warning: {w}", indent="  ")
    out.append("")
    out.append("Result: " + ("changes (exit status 3)." if d.changed else "no change (exit status 0)."))
    return out
