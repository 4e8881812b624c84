"""The report's charts, built from a run with the chart functions the service's dashboard draws with
(apportion.web.charts): a queue's allocated against deserved over time is the dashboard's queue
chart, the reservation plan is the dashboard's Gantt chart, and the queues' bars are the dashboard's
bars. Time is the run's own (seconds since it began, shown in the unit its length reads best in).
"""

from __future__ import annotations

import re
from typing import Any

from apportion.lean_dataclass import dataclass
from apportion.resources import GPU
from apportion.simulation.result import SimulationResult
from apportion.web.charts import (
    Bar,
    Boxes,
    BoxRow,
    Gantt,
    Lane,
    Line,
    LineChart,
    Piece,
    allocated_vs_deserved,
    boxes,
    elapsed_unit,
    gantt,
    line_chart,
    number,
    resource_label,
    resource_unit,
)

#: at most this many queues get a chart over time (the CSV files have every queue)
MAX_QUEUE_CHARTS = 24


def main_dim(res: SimulationResult) -> str:
    """The resource the charts over time show: GPUs when the cluster has them, else cpu."""
    return GPU if GPU in res.recorder.dims else "cpu"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")


def _closed(times: list[float], values: list[float], end: float) -> tuple[list[float], list[float | None]]:
    """A step function's change points, closed at the run's end (the series store changes only)."""
    if not times:
        return [], []
    return [*times, max(end, times[-1])], [*values, values[-1]]


def queue_charts(res: SimulationResult, other: SimulationResult | None = None, prefix: str = "queue"
                 ) -> list[LineChart]:
    """Allocated against deserved over time, with what the jobs wait for shaded, one chart per leaf
    queue that ever held or wanted something (and the other run's allocated, to compare)."""
    rec = res.recorder
    d = main_dim(res)
    qs = [q for q in sorted(rec.queues) if max(rec.queues[q].allocated[d] + rec.queues[q].deserved[d]
                                                  + rec.queues[q].pending[d], default=0) > 0]
    qs = qs[:MAX_QUEUE_CHARTS] or sorted(rec.queues)[:1]
    end = rec.final_time
    if other is not None:
        end = max(end, other.recorder.final_time)
    out = []
    for q in qs:
        s = rec.queues[q]
        so = other.recorder.queues.get(q) if other is not None else None
        if so is None:
            x, alloc = _closed(s.times, s.allocated[d], end)
            _, des = _closed(s.times, s.deserved[d], end)
            _, pend = _closed(s.times, s.pending[d], end)
            b: list[float | None] | None = None
        else:  # both runs' change points: each run's value at every one
            x = sorted(set(s.times) | set(so.times) | {end})
            alloc, des, pend = ([_at(s.times, v, t) for t in x] for v in (s.allocated[d], s.deserved[d], s.pending[d]))
            b = [_at(so.times, so.allocated[d], t) for t in x]
        out.append(allocated_vs_deserved(
            f"{prefix}-{_slug(q)}", q, resource_label(d), resource_unit(d) or resource_label(d), x, alloc, des,
            time=False, end_s=end, pending=pend, other=b, other_label=(other.label or "B") if other else "B",
            table_rows=12, table_latest=False))
    return out


def _at(times: list[float], values: list[float], t: float) -> float | None:
    """A step function's value at t (None before its first change)."""
    lo, hi = 0, len(times)
    while lo < hi:
        mid = (lo + hi) // 2
        if times[mid] <= t:
            lo = mid + 1
        else:
            hi = mid
    return values[lo - 1] if lo else None


def utilisation_charts(res: SimulationResult, other: SimulationResult | None = None) -> list[LineChart]:
    """The cluster's utilisation per resource, and Jain's fairness over the busy queues, over time (the
    other run's dotted, to compare)."""
    end = max(res.recorder.final_time, other.recorder.final_time if other else 0.0)
    rec = res.recorder
    x = list(rec.times) if other is None else sorted(set(rec.times) | set(other.recorder.times))
    util, fair = [], []
    for r, dash, suffix in ((res, (), ""), (other, (2, 3), f" ({other.label or 'B'})" if other else "")):
        if r is None:
            continue
        rr = r.recorder
        same = rr.times == x
        for d in rr.dims:
            ratio = [u / t if t else 0.0 for u, t in zip(rr.used[d], rr.total[d])]
            vals: list[float | None] = list(ratio) if same else [_at(rr.times, ratio, t) for t in x]
            util.append(Line(resource_label(d) + suffix, resource_label(d), vals, dash=dash))
        jain: list[float | None] = list(rr.fairness) if same else [_at(rr.times, rr.fairness, t) for t in x]
        fair.append(Line("Jain" + suffix, "fairness", jain, dash=dash))
    words = "solid" + (f"; run {other.label or 'B'} dotted" if other else "")
    return [
        line_chart("utilisation", f"Share of the cluster in use over time, per resource ({words})", x, util,
                   "utilisation", time=False, end_s=end, y_max=1.05, table_rows=15, table_latest=False),
        line_chart("fairness", f"Jain's fairness index of the busy queues over time (1 is even; {words})", x, fair,
                   "Jain fairness", time=False, end_s=end, y_max=1.05, height=160, table_rows=15,
                   table_latest=False),
    ]


def wait_boxes(res: SimulationResult, other: SimulationResult | None = None) -> Boxes:
    """How long jobs waited to start, per queue (the other run's under each, to compare)."""

    def waits(r: SimulationResult) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for j in r.jobs:
            if j.first_start is not None:
                out.setdefault(j.spec.queue, []).append(j.first_start - j.spec.arrival)
        return out

    wa = waits(res)
    wb = waits(other) if other is not None else {}
    rows = []
    for q in sorted(set(wa) | set(wb)):
        rows.append(BoxRow(q, res.label or "A", "allocated", wa.get(q, [])))
        if other is not None:
            rows.append(BoxRow(q, other.label or "B", "other", wb.get(q, [])))
    longest = max([v for vs in (*wa.values(), *wb.values()) for v in vs] + [0.0])
    scale, unit = elapsed_unit(longest)
    return boxes("waits", f"How long jobs waited to start, per queue, in {unit}: box from the first to the third "
                 "quartile, a line at the median, whiskers to the shortest and the longest", rows, unit, scale)


def plan_gantt(res: SimulationResult, id: str = "plan") -> Gantt | None:
    """The reservations as lanes: the window each asked for (dotted), its allocation (height: its amount
    of the main resource), when its jobs ran; a rejected one's window marked."""
    log = res.reservation_log
    if not log:
        return None
    d = main_dim(res)
    words = resource_unit(d) or resource_label(d)
    end = max([res.recorder.final_time] + [e["window"][1] for e in log])
    scale, unit = elapsed_unit(end)
    lanes = []
    for e in log:
        pieces = [Piece(s, t, float(amt.get(d, 0)), f"{number(float(amt.get(d, 0)))} {words}, "
                        f"{number(round(s / scale, 2))}–{number(round(t / scale, 2))} {unit}")
                  for s, t, amt in e.get("pieces", [])] if e["accepted"] else []
        runs = [(j.first_start, j.finish if j.finish is not None else res.recorder.final_time) for j in res.jobs
                if j.spec.reservation == e["name"] and j.first_start is not None]
        lanes.append(Lane(id=str(e["id"]), label=f"{e['name']} ({e['queue']})", pieces=pieces,
                          window=(e["window"][0], e["window"][1]), rejected=not e["accepted"], runs=runs))
    title = (f"Gantt chart of the {len(log)} reservations of {res.label or res.scenario.name}, over the run in "
             f"{unit}: the window each asked for, its allocation of {words} (a bar's height against the largest), "
             "when its jobs ran; rejected ones marked")
    return gantt(id, title, lanes, 0.0, end, lambda t: number(round(t / scale, 1)), axis_label=unit)


@dataclass
class QueueRow:
    """A queue of the report's queue table: its summary numbers and its time-averaged bars."""

    name: str
    summary: dict[str, Any]
    bars: list[Bar]


def queue_rows(res: SimulationResult, summary: dict[str, Any]) -> tuple[list[QueueRow], dict[str, float]]:
    """Every queue of the summary with its time-averaged allocated and deserved per resource, as bars on
    the cluster's scale (its largest size during the run), the dashboard's bars."""
    rec = res.recorder
    total = {d: max(rec.total[d], default=0.0) for d in rec.dims}
    rows = []
    for name, s in summary["queues"].items():
        ta = s.get("timeAverage") or {}
        bars = [Bar(queue=name, dim=d, label=resource_label(d), unit=resource_unit(d), scale=total[d],
                    values={"allocated": (ta.get("allocated") or {}).get(d), "deserved": (ta.get("deserved") or {}).get(d)})
                for d in rec.dims if total[d] > 0] if ta else []
        rows.append(QueueRow(name, s, bars))
    return rows, total


__all__ = ["MAX_QUEUE_CHARTS", "QueueRow", "main_dim", "plan_gantt", "queue_charts", "queue_rows", "utilisation_charts",
           "wait_boxes"]
