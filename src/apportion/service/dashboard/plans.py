"""What the reservations page shows of each plan: its reservations (the Gantt chart), its committed
load against the capacity, and against the sharing policy's instantaneous and average limits.

Everything is read from the plan objects the YARN handlers answer from (`Service.reservations`), so
the page and `GET /ws/v1/cluster/reservation/list` show the same reservations. Amounts are YARN's
(memory in MB, vCores), as the plan holds them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from apportion.reservation.api import reservation_info
from apportion.reservation.definition import INTERPRETER_NAMES
from apportion.reservation.plan import InMemoryPlan
from apportion.reservation.policies import CapacityOverTimePolicy, scaled_limit
from apportion.reservation.stepfn import Res, StepFunction

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
    best = (0, 0)
    for a in sorted(starts):
        m, v = f.integral(a, a + window)
        best = (max(best[0], m // window), max(best[1], v // window))
    return best


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
        info = reservation_info(r, True)
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
    series = {"t": [t / 1000 for t, _ in load] + [end / 1000],
              "memory": [v[0] for _, v in load] + [load[-1][1][0] if load else 0],
              "vcores": [v[1] for _, v in load] + [load[-1][1][1] if load else 0],
              "capacity": list(plan.capacity), "instantaneous": list(limits["instantaneous"]),
              "average": list(limits["average"]), "now": now / 1000}
    return {"name": name, "plan": plan, "settings": settings, "capacity": plan.capacity, "now": now,
            "start": start, "end": end, "reservations": rows, "load": load, "users": users, "limits": limits,
            "committed_now": plan.total_at(now), "series_json": json.dumps(series, separators=(",", ":")),
            "gantt": gantt(rows, start, end, now)}


def gantt(rows: list[dict[str, Any]], start: int, end: int, now: int) -> dict[str, Any]:
    """The Gantt chart's geometry (an SVG the server draws, so it shows without JavaScript): one lane
    per reservation, a bar per allocation piece whose height is its memory against the largest piece
    shown (the table under the chart has the amounts)."""
    width, left, lane, top = 1000, 210, 44, 24
    span = max(end - start, 1)
    biggest = max([v[0] for r in rows for _a, _b, v in r["pieces"]] + [1])

    def x(t: int) -> float:
        return round(left + (width - left - 10) * (min(max(t, start), end) - start) / span, 1)

    lanes = []
    for i, r in enumerate(rows):
        y = top + i * lane
        bars = []
        for a, b, v in r["pieces"]:
            if b <= start or a >= end:
                continue
            h = max(3.0, (lane - 8) * v[0] / biggest)
            bars.append({"x": x(a), "w": max(x(b) - x(a), 1.5), "y": round(y + lane - 4 - h, 1), "h": round(h, 1),
                         "title": f"{v[0]} MB, {v[1]} vCores"})
        lanes.append({"y": y, "label": r["name"] or r["id"], "id": r["id"], "bars": bars})
    ticks = []
    n = 6
    for k in range(n + 1):
        t = start + span * k // n
        ticks.append({"x": x(t), "t": t})
    return {"width": width, "height": top + max(len(rows), 1) * lane + 22, "left": left, "lanes": lanes,
            "now_x": x(now), "ticks": ticks, "top": top}
