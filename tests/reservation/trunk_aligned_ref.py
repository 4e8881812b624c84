"""A slow, plain model of trunk's low-cost aligned planner (IterativePlanner with by-demand stage
windows and StageAllocatorLowCostAligned), written from its behaviour for the tests to compare
apportion's fast agent with.

It takes the plan's load and availability from apportion's plan (checked on their own elsewhere)
and models the rest as trunk behaves:

* a candidate window's cost is summed in time order over the pieces of (plan load + the job's
  placements) as trunk's RLE merge leaves them: maximal runs of one value, each adding
  `ratio(value, capacity) * length / step` (the ratio in single precision);
* its fit is the fewest gangs over the pieces of (availability - placements), and the merge that
  builds them refuses (PlanningException) a negative piece from the first change point of the
  job's placements in the window on (trunk's subtractTestNonNegative only compares where both
  operands have started);
* the candidates are the dur-long windows tiling the stage window from its arrival (left) or its
  deadline (right); the cheapest is taken, ties to the earliest end (left) or the latest (right),
  `max(1, max(1, gangs // windows) // smoothness)` gangs at a time, and only the window taken is
  re-evaluated.

Everything is recomputed point by point from the definitions: no arrays, no caches, no runs.
"""

from __future__ import annotations

import math

from apportion.reservation.allocation import fold_intervals
from apportion.reservation.definition import R_ANY, R_ORDER, R_ORDER_NO_GAP, ReservationDefinition, Stage
from apportion.reservation.exceptions import PlanningException
from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
from apportion.reservation.resmath import Res
from apportion.reservation.stepfn import StepFunction

Interval = tuple[int, int, Res]


def _up(t: int, step: int) -> int:
    return -(-t // step) * step


def _down(t: int, step: int) -> int:
    return t // step * step


def _value(pieces: list[Interval], t: int, k: int) -> Res:
    out = [0] * k
    for a, b, r in pieces:
        if a <= t < b:
            out = [x + y for x, y in zip(out, r)]
    return tuple(out)


def _runs(f: StepFunction, extra: list[Interval], sign: int, a: int, b: int) -> list[tuple[int, int, Res]]:
    """(f + sign * extra) over [a, b) as maximal runs of one value."""
    cuts = {a}
    cuts.update(t for t, _v in f.breakpoints() if a < t < b)
    cuts.update(t for x, y, _r in extra for t in (x, y) if a < t < b)
    pts = sorted(cuts)
    out: list[tuple[int, int, Res]] = []
    for x, y in zip(pts, [*pts[1:], b]):
        fv = f.at(x)
        ev = _value(extra, x, len(fv))
        v = tuple(p + sign * q for p, q in zip(fv, ev))
        if out and out[-1][2] == v:
            out[-1] = (out[-1][0], y, v)
        else:
            out.append((x, y, v))
    return out


class _Stage:
    def __init__(self, plan: InMemoryPlan, load: StepFunction, avail: StepFunction, placed: list[Interval],
                 st: Stage) -> None:
        self.plan, self.load, self.avail, self.placed = plan, load, avail, placed
        self.gang: Res = tuple(x * st.concurrency for x in st.capability)

    def cost(self, a: int, b: int) -> float:
        total = 0.0
        for x, y, v in _runs(self.load, self.placed, 1, a, b):
            total += self.plan.calc.ratio(v, self.plan.capacity) * (y - x) / self.plan.step
        return total

    def fit(self, a: int, b: int) -> int:
        started = [t for x, y, _r in self.placed for t in (x, y) if t <= b]
        check_from = max(a, min(started)) if started else None
        best = 2**31 - 1
        for x, _y, v in _runs(self.avail, self.placed, -1, a, b):
            if check_from is not None and x >= check_from and any(c < 0 for c in v):
                raise PlanningException("negative")
            best = min(best, self.plan.calc.gangs(v, self.gang, best))
        return best


def _stage(plan: InMemoryPlan, load: StepFunction, placed: list[Interval], user: str, old_id, st: Stage,
           s: int, d: int, left: bool, period: int, smoothness: int) -> list[Interval] | None:
    step = plan.step
    dur = _up(st.duration, step)
    windows = (d - s) // dur
    if windows <= 0:
        return None
    avail = plan.available(user, old_id, s, d, period)
    ev = _Stage(plan, load, avail, placed, st)
    gangs = st.num_containers // st.concurrency
    per = max(1, max(1, gangs // windows) // smoothness)
    starts = [s + k * dur for k in range(windows)] if left else [d - (k + 1) * dur for k in range(windows)]
    key = {a: (ev.cost(a, a + dur), (a + dur) if left else -(a + dur)) for a in starts if ev.fit(a, a + dur) > 0}
    mine: list[Interval] = []
    while gangs > 0 and key:
        a = min(key, key=key.__getitem__)
        n = min(per, gangs, ev.fit(a, a + dur))
        gangs -= n
        r = tuple(x * n for x in ev.gang)
        placed.append((a, a + dur, r))
        mine.append((a, a + dur, r))
        del key[a]
        if ev.fit(a, a + dur) > 0:
            key[a] = (ev.cost(a, a + dur), (a + dur) if left else -(a + dur))
    if gangs > 0:
        for m in mine:
            placed.remove(m)
        return None
    return StepFunction.from_intervals(mine, plan.zero).nonzero_pieces()


def _long(x: int) -> int:
    return (x + 2**63) % 2**64 - 2**63


def _to_long(x: float) -> int:
    """Java's (long) of a double."""
    if x != x:
        return 0
    if x >= 2**63:
        return 2**63 - 1
    if x <= -(2**63):
        return -(2**63)
    return int(x)


def _jdown(t: int, step: int) -> int:
    """(t / step) * step with Java's division, towards zero."""
    return (abs(t) // step) * step * (1 if t >= 0 else -1)


def _by_demand(plan: InMemoryPlan, d: ReservationDefinition, idx: int, s: int, e: int, left: bool) -> tuple[int, int]:
    """StageExecutionIntervalByDemand: long weights summed from the far end towards the stage."""
    step = plan.step
    walk = list(range(len(d.stages) - 1, idx - 1, -1)) if left else list(range(idx + 1))

    def weight(st: Stage) -> float:
        return float(_long(_long(st.duration * st.capability[0]) * st.num_containers))

    total_w = 0.0
    total_d = 0
    for i in walk:
        total_w += weight(d.stages[i])
        total_d += _up(d.stages[i].duration, step)
    st = d.stages[idx]
    # Java's 0.0 / 0.0 is NaN (apportion deviates there: docs/semantics.md); x / 0.0 is infinite
    share = weight(st) / total_w if total_w else (math.nan if weight(st) == 0 else math.copysign(math.inf, weight(st)))
    slack = _long(_long(e - s) - _long(total_d))
    if left:
        return s, _jdown(_to_long(_long(s + _up(st.duration, step)) + slack * share), step)
    return _jdown(_long(_to_long(_long(e - _up(st.duration, step)) - slack * share) + step - 1), step), e


def ref_plan_job(plan: InMemoryPlan, left: bool, user: str, d: ReservationDefinition,
                 old: ReservationAllocation | None, smoothness: int = 10) -> list[Interval] | None:
    """The low-cost aligned planner's reservation for d as stored (folded into the period when
    periodic), or None where that planner refuses (the agent then tries its greedy planner)."""
    step = plan.step
    period = d.period()
    s0, e0 = _up(d.arrival, step), _down(d.deadline, step)
    load = plan.committed_over(s0, e0) if e0 > s0 else StepFunction(zero=plan.zero)
    if old is not None and e0 > s0:
        load.add_function(old.over_time(s0, e0), -1)
    old_id = old.id if old is not None else None
    placed: list[Interval] = []
    job: list[Interval] = []
    order = list(enumerate(d.stages))
    if not left:
        order.reverse()
    try:
        for idx, st in order:
            s, e = d.arrival, d.deadline
            if d.interpreter in (R_ORDER, R_ORDER_NO_GAP):
                if job:
                    if left:
                        s = max(b for _a, b, _r in job)
                    else:
                        e = min(a for a, _b, _r in job)
                s, e = _by_demand(plan, d, idx, s, e, left)
            cur = _stage(plan, load, placed, user, old_id, st, s, e, left, period, smoothness)
            if cur is None:
                if d.interpreter == R_ANY:
                    continue
                return None
            if d.interpreter == R_ORDER_NO_GAP:
                lo, hi = min(a for a, _b, _r in cur), max(b for _a, b, _r in cur)
                if job and ((left and max(b for _a, b, _r in job) < lo)
                            or (not left and hi < min(a for a, _b, _r in job))):
                    return None
                ends: set[int] = set()
                for a, b, _r in cur:
                    ends ^= {a, b}
                if len(ends) != 2:
                    return None
            job.extend(cur)
            if d.interpreter == R_ANY:
                break
    except PlanningException:
        return None
    if not job:
        return None
    if period > 0:
        return fold_intervals(job, period, plan.zero).nonzero_pieces()
    return StepFunction.from_intervals(job, plan.zero).nonzero_pieces()
