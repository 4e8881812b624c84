"""Output: the terminal summary (rich), and `--out DIR`: report.html, summary.json, CSV time series.

report.html is self-contained: every plot is a matplotlib PNG embedded as base64, no scripts, no
external files, so it opens offline in any browser. It is rendered from the page template and style
sheet the service's dashboard uses (apportion.web), and its plots draw each quantity in the shared
palette's colour, so both read the same way.
"""

from __future__ import annotations

import base64
import csv
import io
import json
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from apportion.resources import GPU
from apportion.simulation.metrics import job_rows
from apportion.simulation.result import SimulationResult
from apportion.web import PALETTE


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
        for col in ("name / id", "queue", "outcome", "window", "jobs in\nwindow", "honoured"):
            r.add_column(col, no_wrap=col in ("queue", "outcome", "window", "honoured"), overflow="fold")
        for e2 in summary["reservations"]:
            if e2["accepted"]:
                inside = sum(1 for x in e2["jobs"] if x.get("insideWindow"))
                outcome = "accepted" + (", deleted by replanner" if "deletedByReplanner" in e2 else "")
                window = f"{_dur(e2['start'])}–{_dur(e2['end'])}"
                jobs = f"{inside}/{len(e2['jobs'])}"
                honoured = "yes" if e2.get("honoured") else "no"
            else:
                outcome = "rejected"  # why: the caption under the table
                window, jobs, honoured = "-", f"0/{len(e2['jobs'])}", "-"
                notes.append(f"{e2['name']}: {e2.get('message', '')}")
            r.add_row(f"{e2['name']}\n{e2['id']}", e2["queue"], outcome, window, jobs, honoured)
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


# ===================================================================== plots
def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _main_dim(res: SimulationResult) -> str:
    return GPU if GPU in res.recorder.dims else "cpu"


def _scale(res: SimulationResult) -> tuple[float, str]:
    end = max(res.recorder.final_time, 1.0)
    if end > 3 * 86400:
        return 86400.0, "days"
    if end > 3 * 3600:
        return 3600.0, "hours"
    if end > 180:
        return 60.0, "minutes"
    return 1.0, "seconds"


def _until(times: list[float], end: float, sc: float) -> list[float]:
    """A step function's change points, scaled, closed at the run's end (series store changes only)."""
    return [x / sc for x in times] + [max(end, times[-1] if times else 0.0) / sc]


def _last_again(values: list[float]) -> list[float]:
    return values + values[-1:]


def plot_queues(res: SimulationResult, other: SimulationResult | None = None) -> str:
    """Allocation vs deserved over time, one panel per leaf queue (B dashed when comparing)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rec = res.recorder
    d = _main_dim(res)
    qs = [q for q in sorted(rec.queues) if max(rec.queues[q].allocated[d] + rec.queues[q].deserved[d]
                                                  + rec.queues[q].pending[d], default=0) > 0]
    qs = qs[:24]
    if not qs:
        qs = sorted(rec.queues)[:1]
    cols = min(3, max(1, len(qs)))
    rows = (len(qs) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 2.6 * rows), squeeze=False, sharex=True)
    sc, unit = _scale(res)
    for k, q in enumerate(qs):
        ax = axes[k // cols][k % cols]
        s = rec.queues[q]
        t = _until(s.times, rec.final_time, sc)
        ax.step(t, _last_again(s.allocated[d]), where="post", label="allocated", color=PALETTE["allocated"])
        ax.step(t, _last_again(s.deserved[d]), where="post", label="deserved", color=PALETTE["deserved"], linestyle="--")
        ax.fill_between(t, _last_again(s.pending[d]), step="post", alpha=0.15, color=PALETTE["pending"], label="pending")
        if other is not None and q in other.recorder.queues:
            ro = other.recorder
            so = ro.queues[q]
            ax.step(_until(so.times, ro.final_time, sc), _last_again(so.allocated[d]), where="post",
                    color=PALETTE["other"], label="allocated (B)", alpha=0.8)
        ax.set_title(q, fontsize=9)
        ax.tick_params(labelsize=7)
    for k in range(len(qs), rows * cols):
        axes[k // cols][k % cols].axis("off")
    axes[0][0].legend(fontsize=7, loc="upper right")
    fig.supxlabel(unit, fontsize=8)
    fig.supylabel("GPUs" if d == GPU else "cores", fontsize=8)
    return _png(fig)


def plot_utilisation(res: SimulationResult, other: SimulationResult | None = None) -> str:
    """The cluster's utilisation over time (and the other run's, to compare), as a base64 PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(10, 4.4), sharex=True)
    sc, unit = _scale(res)
    for r, style in ((res, "-"), (other, ":")):
        if r is None:
            continue
        rec = r.recorder
        t = [x / sc for x in rec.times]
        for d in rec.dims:
            ratio = [u / tt if tt else 0.0 for u, tt in zip(rec.used[d], rec.total[d])]
            ax.step(t, ratio, where="post", linestyle=style, label=f"{_unit_name(d)}{' (B)' if r is other else ''}")
        ax2.step(t, rec.fairness, where="post", linestyle=style, label="Jain" + (" (B)" if r is other else ""))
    ax.set_ylabel("utilisation")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7, loc="lower right")
    ax2.set_ylabel("Jain fairness")
    ax2.set_ylim(0, 1.05)
    ax2.set_xlabel(unit)
    ax2.legend(fontsize=7, loc="lower right")
    return _png(fig)


def plot_waits(res: SimulationResult, other: SimulationResult | None = None) -> str:
    """The distribution of job waits per queue (and the other run's, to compare), as a base64 PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def waits(r: SimulationResult) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for j in r.jobs:
            if j.first_start is not None:
                out.setdefault(j.spec.queue, []).append(j.first_start - j.spec.arrival)
        return out

    wa = waits(res)
    wb = waits(other) if other is not None else {}
    qs = sorted(set(wa) | set(wb))
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(qs) * (2 if other else 1)), 3.6))
    sc, unit = _scale(res)
    if other is None:
        data = [[x / sc for x in wa.get(q, [0.0])] for q in qs]
        ax.boxplot(data, tick_labels=qs, showfliers=True)
    else:
        pos_a = [2 * i + 0.8 for i in range(len(qs))]
        pos_b = [2 * i + 1.6 for i in range(len(qs))]
        ax.boxplot([[x / sc for x in wa.get(q, [0.0])] for q in qs], positions=pos_a, widths=0.6,
                   patch_artist=True, boxprops={"facecolor": PALETTE["allocated"], "alpha": 0.4})
        ax.boxplot([[x / sc for x in wb.get(q, [0.0])] for q in qs], positions=pos_b, widths=0.6,
                   patch_artist=True, boxprops={"facecolor": PALETTE["other"], "alpha": 0.4})
        ax.set_xticks([2 * i + 1.2 for i in range(len(qs))], qs)
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor=PALETTE["allocated"], alpha=0.4, label=res.label or "A"),
                           Patch(facecolor=PALETTE["other"], alpha=0.4, label=f"{other.label or 'B'} (B)")],
                  fontsize=7, loc="upper left")
    ax.set_ylabel(f"wait ({unit})")
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    return _png(fig)


def plot_plan(res: SimulationResult) -> str | None:
    """The reservation plan as a timeline: one bar per reservation (rejected ones hatched at their
    requested window), and the plan capacity."""
    if not res.reservation_log:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = _main_dim(res)
    sc, unit = _scale(res)
    log = res.reservation_log
    fig, ax = plt.subplots(figsize=(10, 0.6 * len(log) + 1.4))
    for i, e in enumerate(log):
        y = len(log) - 1 - i
        w0, w1 = e["window"]
        ax.broken_barh([(w0 / sc, (w1 - w0) / sc)], (y - 0.35, 0.7), facecolors="none", edgecolors="grey",
                       linestyles="dotted")
        if e["accepted"]:
            for s, t_end, amt in e["pieces"]:
                val = amt.get(d, 0)
                ax.broken_barh([(s / sc, (t_end - s) / sc)], (y - 0.3, 0.6), facecolors=PALETTE["reservation"], alpha=0.7)
                ax.text((s + t_end) / 2 / sc, y, f"{val:g} {'GPU' if d == GPU else 'cores'}", ha="center",
                        va="center", fontsize=7)
            jobs_x = [(j.first_start, j.finish) for j in res.jobs if j.spec.reservation == e["name"]
                      and j.first_start is not None]
            for s, f in jobs_x:
                ax.plot([s / sc, (f if f is not None else res.recorder.final_time) / sc], [y - 0.42, y - 0.42],
                        color="black", linewidth=2)
        else:
            ax.broken_barh([(w0 / sc, (w1 - w0) / sc)], (y - 0.3, 0.6), facecolors=PALETTE["other"], alpha=0.25,
                           hatch="//")
            ax.text((w0 + w1) / 2 / sc, y, "rejected", ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(log)), [f"{e['name']} ({e['queue']})" for e in reversed(log)], fontsize=8)
    ax.set_xlabel(f"{unit}  (dotted: requested window; green: allocation; black: the reservation's jobs)",
                  fontsize=8)
    ax.set_xlim(0, max(res.recorder.final_time, max(e["window"][1] for e in log)) / sc)
    return _png(fig)


def render_html(res: SimulationResult, summary: dict[str, Any],
                other: tuple[SimulationResult, dict[str, Any]] | None = None) -> str:
    """The whole report as one HTML string."""
    from rich.console import Console as RichConsole

    o_res = other[0] if other else None
    buf = io.StringIO()
    con = RichConsole(file=buf, width=130, record=True, color_system=None)
    if other is None:
        print_summary(summary, con)
    else:
        print_summary(summary, con, title=f"A: {res.label}")
        print_summary(other[1], con, title=f"B: {other[0].label}")
        con.print(compare_table(summary, other[1], res.label or "A", other[0].label or "B"))
    text = buf.getvalue()
    imgs = [("Allocation vs deserved per queue", plot_queues(res, o_res)),
            ("Cluster utilisation and fairness", plot_utilisation(res, o_res)),
            ("Wait time per queue", plot_waits(res, o_res))]
    plan = plot_plan(res)
    if plan:
        imgs.append(("Reservation plan", plan))
    if o_res is not None:
        plan_b = plot_plan(o_res)
        if plan_b:
            imgs.append(("Reservation plan (B)", plan_b))
    from apportion.web import environment

    intro = (f"seed {summary['seed']}, {summary['sessions']} sessions, {summary['events']} events, "
             f"simulated {_dur(summary['endTime'])}.")
    # the shared page template and style sheet, inlined: the report stays one self-contained file
    return environment().get_template("report.html").render(
        scenario=summary["scenario"], intro=intro, summary_text=text, images=imgs,
        warnings=res.warnings[:50], inline_css=True)
