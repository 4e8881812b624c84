"""Output: the terminal summary (rich), and `--out DIR`: report.html, summary.json, CSV time series.

report.html is one self-contained file that opens offline: the page template, style sheet, palette
and charts are the service's dashboard's (apportion.web), with the style sheets and the chart scripts
(uPlot, vendored, and apportion's charts.js) inlined. Every chart's numbers are in a table beside it,
and the Gantt chart, the box plots and the bars are SVG and HTML, so the report reads without
JavaScript too.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from apportion.resources import GPU
from apportion.simulation import report_charts as rc
from apportion.simulation.metrics import job_rows
from apportion.simulation.result import SimulationResult
from apportion.web.charts import resource_label


def _fmt(x: Any, unit: str = "") -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        if unit == "s":
            return _dur(x)
        return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"
    return str(x)


def _dur(s: float) -> str:
    if s < 120:
        return f"{s:.1f}s"
    if s < 7200:
        return f"{s / 60:.1f}m"
    if s < 172800:
        return f"{s / 3600:.1f}h"
    return f"{s / 86400:.1f}d"


def _amount(r: dict[str, Any]) -> str:
    """A natural-units resource in short: `2 cpu 4Gi 1 gpu` (an extended resource by its last part)."""
    parts = []
    for name, v in sorted(r.items(), key=lambda kv: (kv[0] != "cpu", kv[0] != "memory", kv[0])):
        if name == "memory":
            parts.append(f"{v / 2**30:g}Gi")
        else:
            parts.append(f"{v:g} {name.rsplit('/', 1)[-1]}")
    return " ".join(parts)


def summary_tables(summary: dict[str, Any], title: str = "") -> list[Table]:
    """The terminal tables for one run."""
    run = Table(title=title or f"apportion simulate: {summary['scenario']}", show_header=False, title_justify="left")
    j = summary["jobs"]
    run.add_row("simulated time", _dur(summary["endTime"]))
    run.add_row("sessions / events", f"{summary['sessions']} / {summary['events']}")
    run.add_row("jobs", f"{j['total']} total, {j['completed']} completed, {j['unfinished']} unfinished, "
                        f"{j['rejected']} rejected, {j['killed']} killed")
    run.add_row("utilisation", ", ".join(f"{k} {v:.0%}" for k, v in summary["utilisation"].items() if v is not None))
    f = summary["fairness"]
    run.add_row("fairness (Jain, busy queues)", f"mean {_fmt(f['jainMean'])}, min {_fmt(f['jainMin'])}")
    e = summary["evictions"]
    run.add_row("evictions", f"reclaim {e['reclaim']}, preempt {e['preempt']}, node failure {e['nodeFailure']}; "
                             f"lost {e['lostGpuHours']:.2f} GPU-h")
    by = e.get("lostGpuHoursByReason", {})
    if e.get("jobsReclaimed"):
        run.add_row("reclaim waste", f"{by.get('reclaim', 0.0):.2f} GPU-h evicted; {e['jobsReclaimed']} jobs reclaimed, "
                                     f"{e['jobsReclaimedTwiceOrMore']} of them twice or more")
    # light borders and unwrapped cells: the tables stay readable on an 80-column pipe
    q = Table(title="queues", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("queue", "jobs", "done", "wait\nmean", "wait\np95", "JCT\nmean", "evict", "lost\nGPU-h", "alloc/\ndeserved"):
        q.add_column(col, justify="left" if col == "queue" else "right", no_wrap=True, overflow="fold")
    for name, s in summary["queues"].items():
        ta = s.get("timeAverage", {})
        dom = ""
        if ta:
            parts = []
            for d in (GPU, "cpu"):
                a, dv = ta["allocated"].get(d), ta["deserved"].get(d)
                if a is not None and dv:
                    parts.append(f"{a / dv:.0%} {('gpu' if d == GPU else d)}")
                    break
            dom = " ".join(parts)
        q.add_row(name, str(s["jobs"]), str(s["completed"]), _fmt(s["wait"]["mean"], "s"), _fmt(s["wait"]["p95"], "s"),
                  _fmt(s["jct"]["mean"], "s"), str(s["evictions"]), f"{s['lostGpuHours']:.2f}", dom)
    out = [run, q]
    if summary["reservations"]:
        r = Table(title="reservations", title_justify="left", caption_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False)
        notes: list[str] = []
        # The id goes under the name: both are long, and side by side they push an 80-column table over.
        for col in ("name / id", "queue", "outcome", "window /\nallocation", "jobs in\nwindow", "honoured"):
            r.add_column(col, no_wrap=col in ("name / id", "queue", "outcome", "honoured"), overflow="fold")
        for e2 in summary["reservations"]:
            if e2["accepted"]:
                inside = sum(1 for x in e2["jobs"] if x.get("insideWindow"))
                outcome = "accepted" + (", deleted by replanner" if "deletedByReplanner" in e2 else "")
                # the window, then each piece the agent placed (when, how much)
                window = "\n".join([f"{_dur(e2['start'])}–{_dur(e2['end'])}"] + [
                    f" {_dur(a)}–{_dur(b)} {_amount(x)}" for a, b, x in e2.get("allocation", [])])
                jobs = f"{inside}/{len(e2['jobs'])}"
                honoured = "yes" if e2.get("honoured") else "no"
            else:
                outcome = "rejected"  # why: the caption under the table
                window, jobs, honoured = "-", f"0/{len(e2['jobs'])}", "-"
                notes.append(f"{e2['name']}: {e2.get('message', '')}")
            r.add_row(f"{e2['name']}\n{e2['id']}" + (f"\n{e2['agent']}" if "agent" in e2 else ""), e2["queue"],
                      outcome, window, jobs, honoured)
        if notes:
            r.caption = "\n".join(notes)
        out.append(r)
    return out


def compare_table(a: dict[str, Any], b: dict[str, Any], la: str, lb: str) -> Table:
    """Side by side: waits, fairness, evictions, reservation outcomes per queue."""
    t = Table(title=f"A/B: {la} vs {lb}", title_justify="left")
    t.add_column("metric")
    t.add_column(la, justify="right")
    t.add_column(lb, justify="right")
    t.add_column("Δ", justify="right")

    def row(label: str, x: Any, y: Any, unit: str = "") -> None:
        d = "-"
        if isinstance(x, (int, float)) and isinstance(y, (int, float)):
            d = (_dur(y - x) if (y - x) >= 0 else "-" + _dur(x - y)) if unit == "s" else f"{y - x:+.3g}"
        t.add_row(label, _fmt(x, unit), _fmt(y, unit), d)

    row("jobs completed", a["jobs"]["completed"], b["jobs"]["completed"])
    row("mean wait", a["jobs"]["meanWait"], b["jobs"]["meanWait"], "s")
    row("fairness (Jain mean)", a["fairness"]["jainMean"], b["fairness"]["jainMean"])
    row("evictions (reclaim)", a["evictions"]["reclaim"], b["evictions"]["reclaim"])
    row("evictions (preempt)", a["evictions"]["preempt"], b["evictions"]["preempt"])
    row("lost GPU-hours", a["evictions"]["lostGpuHours"], b["evictions"]["lostGpuHours"])
    row("lost GPU-hours (reclaim)", a["evictions"].get("lostGpuHoursByReason", {}).get("reclaim"),
        b["evictions"].get("lostGpuHoursByReason", {}).get("reclaim"))
    row("jobs reclaimed twice or more", a["evictions"].get("jobsReclaimedTwiceOrMore"),
        b["evictions"].get("jobsReclaimedTwiceOrMore"))
    for d, v in a["utilisation"].items():
        row(f"utilisation {d}", v, b["utilisation"].get(d))
    for q in sorted(set(a["queues"]) | set(b["queues"])):
        qa, qb = a["queues"].get(q, {}), b["queues"].get(q, {})
        row(f"{q}: mean wait", (qa.get("wait") or {}).get("mean"), (qb.get("wait") or {}).get("mean"), "s")
        row(f"{q}: evictions", qa.get("evictions"), qb.get("evictions"))
    ra = {r["name"]: r for r in a["reservations"]}
    rb = {r["name"]: r for r in b["reservations"]}
    for n in sorted(set(ra) | set(rb)):
        def oc(r: dict[str, Any] | None) -> str:
            if r is None:
                return "-"
            return ("honoured" if r.get("honoured") else "accepted") if r["accepted"] else "rejected"
        t.add_row(f"reservation {n}", oc(ra.get(n)), oc(rb.get(n)), "")
    return t


def print_summary(summary: dict[str, Any], console: Console | None = None, title: str = "") -> None:
    """Print the summary tables."""
    console = console or Console()
    for t in summary_tables(summary, title):
        console.print(t)


# ===================================================================== files
def write_outputs(out: Path, res: SimulationResult, summary: dict[str, Any],
                  other: tuple[SimulationResult, dict[str, Any]] | None = None) -> Path:
    """Write summary.json, the CSV series and report.html into `out`; return the report's path."""
    out.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = summary if other is None else {"A": summary, "B": other[1]}
    (out / "summary.json").write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    write_csvs(out, res, "")
    if other is not None:
        write_csvs(out, other[0], "b-")
    path = out / "report.html"
    path.write_text(render_html(res, summary, other), encoding="utf-8")
    return path


def write_csvs(out: Path, res: SimulationResult, prefix: str) -> None:
    """Write the time series as CSV files (queues, cluster, jobs, events), each name starting with
    `prefix`."""
    rec = res.recorder
    with (out / f"{prefix}queues.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["time", "queue", "resource", "allocated", "deserved", "pending", "share"])
        for q in sorted(rec.queues):
            s = rec.queues[q]
            for i, t in enumerate(s.times):
                for d in rec.dims:
                    w.writerow([t, q, _unit_name(d), s.allocated[d][i], s.deserved[d][i], s.pending[d][i],
                                round(s.share[i], 6)])
    with (out / f"{prefix}cluster.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["time", *[f"used_{_unit_name(d)}" for d in rec.dims], *[f"total_{_unit_name(d)}" for d in rec.dims],
                    "busy_queues", "jain"])
        for i, t in enumerate(rec.times):
            jn = rec.fairness[i]
            w.writerow([t, *[rec.used[d][i] for d in rec.dims], *[rec.total[d][i] for d in rec.dims], rec.busy[i],
                        "" if jn != jn else round(jn, 6)])
    rows = job_rows(res)
    with (out / f"{prefix}jobs.csv").open("w", newline="", encoding="utf-8") as f:
        if rows:
            w2 = csv.DictWriter(f, fieldnames=list(rows[0]))
            w2.writeheader()
            w2.writerows(rows)
    with (out / f"{prefix}events.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["time", "object", "reason", "message"])
        for ev in sorted(rec.events + [(t, j, reason, task) for t, j, task, reason in rec.evictions]):
            w.writerow(ev)


def _unit_name(d: str) -> str:
    return {"memory": "memory_gib", GPU: "gpu", "cpu": "cpu"}.get(d, d)


# ===================================================================== the page
def render_html(res: SimulationResult, summary: dict[str, Any],
                other: tuple[SimulationResult, dict[str, Any]] | None = None) -> str:
    """The whole report as one HTML string: the dashboard's page template, style sheet, palette and
    charts, with the style sheets and scripts inlined so the file opens offline."""
    from rich.console import Console as RichConsole

    from apportion.web import environment

    o_res = other[0] if other else None
    buf = io.StringIO()
    con = RichConsole(file=buf, width=130, record=True, color_system=None)
    if other is None:
        print_summary(summary, con)
    else:
        print_summary(summary, con, title=f"A: {res.label}")
        print_summary(other[1], con, title=f"B: {other[0].label}")
        con.print(compare_table(summary, other[1], res.label or "A", other[0].label or "B"))
    runs = [(res.label or "A" if other else "", *rc.queue_rows(res, summary))]
    if other is not None:
        runs.append((other[0].label or "B", *rc.queue_rows(other[0], other[1])))
    plans = [(f"Reservation plan{'' if other is None else ' (' + (res.label or 'A') + ')'}", rc.plan_gantt(res))]
    if o_res is not None:
        plans.append((f"Reservation plan ({o_res.label or 'B'})", rc.plan_gantt(o_res, "plan-b")))
    d = rc.main_dim(res)
    intro = (f"seed {summary['seed']}, {summary['sessions']} sessions, {summary['events']} events, "
             f"simulated {_dur(summary['endTime'])}.")
    return environment().get_template("report.html").render(
        scenario=summary["scenario"], intro=intro, summary_text=buf.getvalue(), runs=runs,
        queue_charts=rc.queue_charts(res, o_res), main_label=resource_label(d),
        utilisation=rc.utilisation_charts(res, o_res), waits=rc.wait_boxes(res, o_res),
        plans=[(t, g) for t, g in plans if g is not None], warnings=res.warnings[:50], inline_css=True,
        other_label=(o_res.label or "B") if o_res is not None else "", duration=lambda s: _fmt(s, "s"), amount=_amount,
        reservations=[(label, sm["reservations"]) for label, sm in
                      ([("", summary)] if other is None else [(res.label or "A", summary),
                                                              (other[0].label or "B", other[1])])])
