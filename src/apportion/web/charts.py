"""The one chart code path of apportion's HTML: the service's dashboard and the simulator's report.

Each kind of chart is a function from plain numbers to a chart object, and one macro of
`templates/charts.html` draws it, on every page that shows it:

* `line_chart`: a quantity over time (a queue's allocated against deserved, a plan's load, the
  cluster's utilisation). The figure carries a JSON config that `static/charts.js` draws with uPlot,
  and a table of the same numbers under it, so a page read without JavaScript loses nothing.
* `gantt`: reservations over time, one lane each. Drawn on the server as SVG (it needs no script).
* `Bar`: one resource of one queue on the cluster's scale, allocated as a bar and deserved,
  guarantee and capability as marks. HTML and CSS.
* `boxes`: a distribution per row (the report's waits per queue), as SVG box plots.

Colours are the keys of `apportion.web.PALETTE`, resolved by the page's CSS variables, so a quantity
has one colour wherever it is drawn. The module depends on nothing of apportion's: callers pass
numbers already in the unit they show, and the text of their labels.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import Any

from apportion.lean_dataclass import dataclass

#: what the per-resource bars show, in the order the legend and the accessible label name them
BAR_KEYS = ("allocated", "deserved", "guarantee", "capability", "realCapability")
BAR_NAMES = {"allocated": "allocated", "deserved": "deserved", "guarantee": "guarantee",
             "capability": "capability", "realCapability": "real capability"}


def number(v: float | None) -> str:
    """An amount as every page prints it: whole numbers with thousands separators, at most two
    decimals, unlimited as "∞", not set as "-"."""
    if v is None:
        return "-"
    if math.isinf(v):
        return "∞"
    if math.isnan(v):
        return "-"
    if v == int(v):
        return f"{int(v):,}"
    return f"{v:,.2f}".rstrip("0").rstrip(".")


def utc_text(seconds: float) -> str:
    """Seconds since the epoch as a UTC time for people (every time on the pages is in UTC)."""
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


#: the short name and the unit of the resources every page shows (cpu, memory in GiB, GPUs); the
#: names are apportion.resources' (this module imports nothing of apportion's)
RESOURCE_WORDS = {"cpu": ("cpu", "cores"), "memory": ("memory", "GiB"), "nvidia.com/gpu": ("gpu", "GPUs")}


def resource_label(dim: str) -> str:
    """A resource's short name in the pages."""
    return RESOURCE_WORDS.get(dim, (dim, ""))[0]


def resource_unit(dim: str) -> str:
    """The unit a resource's amounts are shown in ("" for other scalars: a count)."""
    return RESOURCE_WORDS.get(dim, (dim, ""))[1]


def elapsed_unit(end_s: float) -> tuple[float, str]:
    """The unit a run of `end_s` seconds reads best in: (seconds per unit, its name)."""
    if end_s > 3 * 86400:
        return 86400.0, "days"
    if end_s > 3 * 3600:
        return 3600.0, "hours"
    if end_s > 180:
        return 60.0, "minutes"
    return 1.0, "seconds"


# ============================================================================ line charts
@dataclass
class Line:
    """One series of a line chart: its legend label, its palette colour and its values (one per x)."""

    label: str
    colour: str
    values: Sequence[float | None]
    #: dash pattern in pixels (empty: solid)
    dash: tuple[int, ...] = ()
    #: shade the area under the line
    fill: bool = False
    #: a step function (the value holds until the next point), as every sampled quantity here is
    step: bool = True
    width: float = 2.0


@dataclass
class LineChart:
    """A line chart over time: x in seconds (since the epoch when `time`, shown in UTC; else since the
    run began, shown in `x_unit`), one or more lines, the y axis' label."""

    id: str
    caption: str
    x: list[float]
    lines: list[Line]
    y_label: str
    time: bool = True
    x_unit: str = "seconds"
    x_scale: float = 1.0
    #: a fixed top of the y axis (ratios: 1.05); None: a tenth above the highest value
    y_max: float | None = None
    height: int = 200
    #: the fallback table: its caption, how many rows at most, and whether they are the newest ones
    #: (a live page) or spread over the whole run (a report)
    table_caption: str = ""
    table_rows: int = 20
    table_latest: bool = True

    def config(self) -> dict[str, Any]:
        """What charts.js draws: every number the chart shows and how (a value that is no number, such
        as the fairness of an idle cluster, is a gap: null)."""
        return {"x": self.x, "time": self.time, "xUnit": self.x_unit, "xScale": self.x_scale,
                "yLabel": self.y_label, "yMax": self.y_max, "height": self.height,
                "series": [{"label": s.label, "colour": s.colour, "values": [_finite(v) for v in s.values],
                            "dash": list(s.dash),
                            "fill": s.fill, "step": s.step, "width": s.width} for s in self.lines]}

    def x_text(self, x: float) -> str:
        """An x value as the table prints it."""
        if self.time:
            return utc_text(x)
        return f"{number(round(x / self.x_scale, 2))} {self.x_unit}"

    def table(self) -> list[tuple[str, list[str]]]:
        """The rows of the fallback table: (time, value per line), at most `table_rows`."""
        n = len(self.x)
        if n <= self.table_rows:
            idx = list(range(n))
        elif self.table_latest:
            idx = list(range(n - self.table_rows, n))
        else:  # evenly over the run, the first and the last point included
            k = self.table_rows - 1
            idx = sorted({round(i * (n - 1) / k) for i in range(k + 1)})
        if self.table_latest:
            idx.reverse()
        return [(self.x_text(self.x[i]), [number(s.values[i]) if i < len(s.values) else "-" for s in self.lines])
                for i in idx]


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def line_chart(id: str, caption: str, x: Sequence[float], lines: list[Line], y_label: str, *,
               time: bool = True, end_s: float | None = None, **kw: Any) -> LineChart:
    """A line chart; an elapsed-time axis (`time=False`) gets the unit its length `end_s` reads best in."""
    scale, unit = (1.0, "seconds") if time else elapsed_unit(end_s if end_s is not None else max(x, default=0.0))
    return LineChart(id=id, caption=caption, x=[float(v) for v in x], lines=lines, y_label=y_label, time=time,
                     x_unit=unit, x_scale=scale, **kw)


def allocated_vs_deserved(id: str, queue: str, resource: str, unit: str, x: Sequence[float],
                          allocated: Sequence[float | None], deserved: Sequence[float | None], *,
                          time: bool = True, end_s: float | None = None, pending: Sequence[float | None] | None = None,
                          other: Sequence[float | None] | None = None, other_label: str = "B",
                          **kw: Any) -> LineChart:
    """A queue's allocated (solid) against its deserved (dashed) over time, on one resource; optionally
    what its jobs wait for (shaded) and another run's allocated (to compare). The dashboard's queue page
    and the report draw their queues with this."""
    lines = [Line("allocated", "allocated", list(allocated)), Line("deserved", "deserved", list(deserved), dash=(6, 4))]
    words = ["allocated (blue)", "deserved (green, dashed)"]
    if pending is not None:
        lines.append(Line("pending", "pending", list(pending), fill=True, width=1.0))
        words.append("what its jobs wait for (orange, shaded)")
    if other is not None:
        lines.append(Line(f"allocated ({other_label})", "other", list(other), width=1.5))
        words.append(f"allocated in run {other_label} (red)")
    caption = f"{queue}, {resource}: " + ", ".join(words) + f" over time, in {unit}"
    kw.setdefault("table_caption", f"{resource} of {queue} over time ({unit})")
    return line_chart(id, caption, x, lines, unit, time=time, end_s=end_s, **kw)


# ============================================================================ Gantt chart
@dataclass
class Piece:
    """One allocation of a reservation: from, to, its amount (the bar's height against the largest
    shown) and the text a pointer on it shows."""

    start: float
    end: float
    amount: float
    title: str


@dataclass
class Lane:
    """One reservation's lane: its allocations; optionally the window it asked for (dotted), whether it
    was rejected (then only the window shows, marked), and when its jobs ran (black lines)."""

    id: str
    label: str
    pieces: list[Piece] = field(default_factory=list)
    window: tuple[float, float] | None = None
    rejected: bool = False
    runs: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class Gantt:
    """The SVG geometry of a Gantt chart (viewBox units)."""

    id: str
    title: str
    width: int
    height: int
    left: int
    top: int
    lanes: list[dict[str, Any]]
    ticks: list[tuple[float, str]]
    now_x: float | None
    axis_label: str
    #: which legend entries apply
    has_window: bool
    has_runs: bool
    has_rejected: bool


def gantt(id: str, title: str, lanes: list[Lane], start: float, end: float, tick_text: Callable[[float], str],
          *, now: float | None = None, axis_label: str = "") -> Gantt:
    """Lay out a Gantt chart of `lanes` over [start, end]: a bar per allocation piece whose height is its
    amount against the largest piece shown (the table beside the chart has the amounts)."""
    width, left, lane_h, top = 1000, 210, 44, 24
    span = max(end - start, 1e-9)
    biggest = max([p.amount for ln in lanes for p in ln.pieces] + [1e-9])

    def x(t: float) -> float:
        return round(left + (width - left - 10) * (min(max(t, start), end) - start) / span, 1)

    out = []
    for i, ln in enumerate(lanes):
        y = top + i * lane_h
        bars = []
        for p in ln.pieces:
            if p.end <= start or p.start >= end:
                continue
            h = max(3.0, (lane_h - 10) * p.amount / biggest) if p.amount > 0 else 3.0
            bars.append({"x": x(p.start), "w": max(x(p.end) - x(p.start), 1.5), "y": round(y + lane_h - 6 - h, 1),
                         "h": round(h, 1), "title": p.title})
        window = None
        if ln.window is not None and ln.window[1] > start and ln.window[0] < end:
            window = {"x": x(ln.window[0]), "w": max(x(ln.window[1]) - x(ln.window[0]), 1.5), "y": y + 3,
                      "h": lane_h - 6}
        runs = [{"x1": x(a), "x2": max(x(b), x(a) + 1.5), "y": y + lane_h - 3} for a, b in ln.runs
                if b > start and a < end]
        out.append({"y": y, "label": ln.label, "id": ln.id, "bars": bars, "window": window, "runs": runs,
                    "rejected": ln.rejected})
    ticks = [(x(start + span * k / 6), tick_text(start + span * k / 6)) for k in range(7)]
    return Gantt(id=id, title=title, width=width, height=top + max(len(lanes), 1) * lane_h + 22, left=left, top=top,
                 lanes=out, ticks=ticks, now_x=x(now) if now is not None else None, axis_label=axis_label,
                 has_window=any(ln.window for ln in lanes), has_runs=any(ln.runs for ln in lanes),
                 has_rejected=any(ln.rejected for ln in lanes))


# ============================================================================ per-resource bars
@dataclass
class Bar:
    """One resource of one queue, on the cluster's scale: the values (None: not set; infinity:
    unlimited) in the unit shown, the resource's short name, the unit, and the scale (the cluster's
    size in that unit)."""

    queue: str
    dim: str
    label: str
    unit: str
    scale: float
    values: dict[str, float | None]
    #: the values (and the scale) are in the caller's unit, shown divided by this (bytes as GiB); the
    #: page's data attributes keep the caller's numbers, the ones its API answers with
    divisor: float = 1.0

    def pct(self, key: str) -> float | None:
        """Where a value sits on the track (percent of the cluster), None when unlimited or absent."""
        v = self.values.get(key)
        if v is None or math.isinf(v) or math.isnan(v) or self.scale <= 0:
            return None
        return max(0.0, min(100.0, 100.0 * v / self.scale))

    def text(self, key: str) -> str:
        """A value as printed."""
        v = self.values.get(key)
        return number(v / self.divisor if v is not None else None)

    def scale_text(self) -> str:
        """The cluster's size as printed."""
        return number(self.scale / self.divisor)

    def shown_keys(self) -> list[str]:
        """The values this bar has (a report's bars have allocated and deserved only)."""
        return [k for k in BAR_KEYS if k in self.values]

    def aria(self) -> str:
        """What a screen reader says for the bar: every value it draws, and the scale."""
        parts = ", ".join(f"{BAR_NAMES[k]} {self.text(k)}" for k in self.shown_keys())
        return f"{self.queue} {self.label}: {parts} {self.unit} of {self.scale_text()}".replace("  ", " ")


# ============================================================================ box plots
@dataclass
class BoxRow:
    """One distribution: its row label, the series it belongs to (a run), its colour, its values."""

    label: str
    series: str
    colour: str
    values: list[float]


def quantile(xs: list[float], q: float) -> float:
    """The q-quantile of sorted xs, linearly interpolated (numpy's default)."""
    if not xs:
        return math.nan
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass
class Boxes:
    """The SVG geometry of horizontal box plots, and their numbers for the table."""

    id: str
    title: str
    unit: str
    width: int
    height: int
    left: int
    rows: list[dict[str, Any]]
    ticks: list[tuple[float, str]]
    series: list[tuple[str, str]]


def boxes(id: str, title: str, rows: list[BoxRow], unit: str, scale: float = 1.0) -> Boxes:
    """Box plots, one row each: whiskers from the least to the largest value, the box from the first to
    the third quartile, a line at the median; values divided by `scale` (seconds to `unit`)."""
    width, left, row_h, top = 1000, 210, 26, 10
    stats = []
    for r in rows:
        xs = sorted(v / scale for v in r.values)
        stats.append({"n": len(xs), "min": xs[0] if xs else math.nan, "q1": quantile(xs, 0.25),
                      "median": quantile(xs, 0.5), "q3": quantile(xs, 0.75), "p95": quantile(xs, 0.95),
                      "max": xs[-1] if xs else math.nan})
    top_v = max([s["max"] for s in stats if s["n"]] + [1e-9])
    step = _nice_step(top_v / 5)
    axis_end = step * math.ceil(top_v / step)

    def x(v: float) -> float:
        return round(left + (width - left - 20) * v / axis_end, 1)

    out = []
    for i, (r, s) in enumerate(zip(rows, stats)):
        y = top + i * row_h
        g: dict[str, Any] = {"label": r.label, "series": r.series, "colour": r.colour, "y": y, "mid": y + row_h / 2,
                             "stats": {k: (v if k == "n" else number(round(v, 2))) for k, v in s.items()}}
        if s["n"]:
            g.update(x_min=x(s["min"]), x_q1=x(s["q1"]), x_med=x(s["median"]), x_q3=x(s["q3"]), x_max=x(s["max"]))
        out.append(g)
    ticks = [(x(k * step), number(round(k * step, 6))) for k in range(int(round(axis_end / step)) + 1)]
    series = list(dict.fromkeys((r.series, r.colour) for r in rows))
    return Boxes(id=id, title=title, unit=unit, width=width, height=top + max(len(rows), 1) * row_h + 34, left=left,
                 rows=out, ticks=ticks, series=series)


def _nice_step(raw: float) -> float:
    """1, 2 or 5 times a power of ten, at least `raw` (axis ticks people read easily)."""
    if raw <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return float(m * mag)
    return float(10 * mag)


__all__ = ["BAR_KEYS", "Bar", "BoxRow", "Boxes", "Gantt", "Lane", "Line", "LineChart", "Piece", "allocated_vs_deserved",
           "boxes", "elapsed_unit", "gantt", "line_chart", "number", "quantile", "resource_label", "resource_unit",
           "utc_text"]
