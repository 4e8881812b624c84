"""What the reservations page shows of each plan: its reservations (the Gantt chart), its committed
load against the capacity, and against the sharing policy's instantaneous and average limits.

Everything is read from the plan objects the YARN handlers answer from (`Service.reservations`), so
the page and `GET /ws/v1/cluster/reservation/list` show the same reservations. Amounts are YARN's
(memory in MB, vCores), as the plan holds them.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from apportion.reservation.api import reservation_info
from apportion.reservation.definition import INTERPRETER_NAMES
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import CapacityOverTimePolicy, scaled_limit
from apportion.reservation.stepfn import Res, StepFunction
from apportion.web.charts import Gantt, Lane, Line, Piece, gantt, line_chart, utc_text

if TYPE_CHECKING:
    from apportion.service.core import Service

#: how far back before now the charts start (ms)
PAST_MS = 10 * 60 * 1000
#: the least span the charts cover after now (ms)
MIN_AHEAD_MS = 60 * 60 * 1000


def policy_limits(plan: InMemoryPlan) -> dict[str, Any]:
    """The sharing policy's per-user limits: instantaneous (a Res), average (a Res rate) and window."""
    pol = plan.policy
    out: dict[str, Any] = {"name": getattr(pol, "name", type(pol).__name__), "instantaneous": plan.capacity,
                           "average": plan.capacity, "window_ms": None}
    if isinstance(pol, CapacityOverTimePolicy):
        out["instantaneous"] = scaled_limit(plan.capacity, pol.max_inst)
        out["average"] = scaled_limit(plan.capacity, pol.max_avg)
        out["window_ms"] = int(pol.window)
        out["instantaneous_pct"] = round(100 * pol.max_inst, 2)
        out["average_pct"] = round(100 * pol.max_avg, 2)
    return out


def _steps(f: StepFunction, s: int, e: int) -> list[tuple[int, Res]]:
    """(time, value) at s and at every change inside (s, e)."""
    pts = [(s, f.at(s))] + [(t, v) for t, v in f.items_between(s + 1, e - 1)]
    out: list[tuple[int, Res]] = []
    for t, v in pts:
        if not out or out[-1][1] != v:
            out.append((t, v))
    return out


def max_window_average(f: StepFunction, s: int, e: int, window: int) -> Res:
    """The highest average of f over a window of that length starting in [s - window, e) (every window
    that overlaps [s, e)). A window's integral is piecewise linear in its start, so the maximum is at
    an end of that range or where the window's start or end meets a change of f."""
    lo, hi = s - window, e - 1
    changes = [t for t, _ in f.items_between(lo, hi + window)]
    starts = {lo, hi} | {t for t in changes if lo <= t <= hi} | {t - window for t in changes if lo <= t - window <= hi}
    best: Res | None = None
    for a in sorted(starts):
        avg = tuple(x // window for x in f.integral(a, a + window))
        best = avg if best is None else tuple(max(b, x) for b, x in zip(best, avg))
    return best if best is not None else (0, 0)


def plan_view(svc: Service, name: str, now: int) -> dict[str, Any]:
    """One reservable queue's plan: reservations, load series, limits, and per-user peaks."""
    plan = svc.reservations.plans[name].plan
    settings = svc.plan_settings[name]
    res = sorted(plan.reservations.values(), key=lambda r: (r.start, str(r.id)))
    start = now - PAST_MS
    end = max([now + MIN_AHEAD_MS] + [r.end for r in res if r.period <= 0])
    end = start + ((end - start) * 21) // 20  # a little room after the last reservation
    limits = policy_limits(plan)
    rows = []
    for r in res:
        info = reservation_info(r, True, plan.dims)
        d = r.definition
        rows.append({
            "id": str(r.id), "user": r.user or "", "name": d.name if d else "", "start": r.start, "end": r.end,
            "interpreter": INTERPRETER_NAMES.get(d.interpreter, str(d.interpreter)) if d else "",
            "arrival": d.arrival if d else None, "deadline": d.deadline if d else None,
            "pieces": [(a, b, v) for a, b, v in r.intervals], "periodic": r.period > 0,
            "active": r.start <= now < r.end, "acceptance": r.acceptance_time, "info": info,
        })
    load = _steps(plan.committed_over(start, end), start, end)
    users = []
    for user in sorted(plan.user_load):
        f = plan.user_load[user]
        peak = (0, 0)
        for _, v in _steps(f, now, end):
            peak = (max(peak[0], v[0]), max(peak[1], v[1]))
        avg = max_window_average(f, now, end, limits["window_ms"]) if limits["window_ms"] else None
        users.append({"user": user, "peak": peak, "average": avg})
    t = [ms / 1000 for ms, _ in load] + [end / 1000]
    memory = [float(v[0]) for _, v in load] + [float(load[-1][1][0]) if load else 0.0]

    def flat(v: int) -> list[float]:
        return [float(v)] * len(t)

    load_chart = line_chart(
        f"load-{name}", f"Memory (MB) the plan of {name} has committed over time (green), against its capacity "
        "(black), the per-user instantaneous limit (red, dashed) and the per-user average limit (pink, dotted). "
        "The same numbers are in the tables below.", t,
        [Line("committed (MB)", "reservation", memory, fill=True),
         Line("capacity", "capacity", flat(plan.capacity[0]), step=False),
         Line("instantaneous limit", "limit", flat(limits["instantaneous"][0]), dash=(6, 4), width=1.5, step=False),
         Line("average limit", "average", flat(limits["average"][0]), dash=(2, 3), width=1.5, step=False)],
        "memory (MB)", time=True, height=220)
    return {"name": name, "plan": plan, "settings": settings, "capacity": plan.capacity, "now": now,
            "start": start, "end": end, "reservations": rows, "load": load, "users": users, "limits": limits,
            "committed_now": plan.total_at(now), "load_chart": load_chart,
            "gantt": plan_gantt(name, rows, start, end, now)}


def _hhmm(ms: float) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%H:%M")


def plan_gantt(name: str, rows: list[dict[str, Any]], start: int, end: int, now: int) -> Gantt:
    """The plan's Gantt chart (the shared SVG one, as the report's): a lane per reservation with its
    window from arrival to deadline, a bar per allocation piece whose height is its memory against the
    largest piece shown (the table under the chart has the amounts)."""
    lanes = [Lane(id=r["id"], label=r["name"] or r["id"],
                  pieces=[Piece(a, b, v[0], f"{v[0]} MB, {v[1]} vCores") for a, b, v in r["pieces"]],
                  window=(r["arrival"], r["deadline"]) if r["arrival"] is not None and r["deadline"] is not None
                  else None)
             for r in rows]
    title = (f"Gantt chart of the {len(rows)} accepted reservations of {name} from {utc_text(start / 1000)} to "
             f"{utc_text(end / 1000)}; a bar's height is its memory against the largest allocation shown")
    return gantt(f"gantt-{name}", title, lanes, start, end, _hhmm, now=now)
