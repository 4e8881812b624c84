"""reclaim's optional guards against gang reclaim oscillation (apportion's own; off by default).

Volcano reclaims gang members one task at a time: gang's reclaimable answer protects a gang at its
minMember, but an empty answer hands the decision to the next tier (§4.2, Keep), where capacity or
proportion picks members of any queue above its deserved. A gang that loses a member restarts whole,
its queue drops below its deserved and reclaims back: the same work is lost again and again. Two
switches of the `reclaim` action's arguments damp this, as users of other schedulers ask for:

- `minRuntime` (seconds, or a duration such as `"10m"`): a task that has run for less than this is not a
  reclaim candidate (KAI scheduler's `reclaimMinRuntime`; Kueue's preemption-protection proposal).
- `gangAtomicVictims: true`: victims are chosen in whole units, as Volcano's newer `gangreclaim` action
  bundles them (`actions/utils/bundle.go`): a job's tasks above its minMember are single units (taking
  them keeps the gang running); the rest of the job is one unit, all its running tasks on every node,
  eligible only if the reclaimable vote approves every one of them. On a node, the single units go
  first (victim order), then the fewest whole units that make room (a unit that alone covers what is
  still missing, the smallest first; else the one that covers most of it). A node where the task
  already fits (room left by a gang evicted for an earlier task) is taken without evicting anything.

Documented in docs/semantics.md (reclaim guards) and docs/scenario.md.
"""

from __future__ import annotations

import numpy as np

from apportion.cluster.model import TaskInfo, TaskStatus
from apportion.durations import parse_duration, try_time
from apportion.errors import InputError
from apportion.framework.session import Session
from apportion.lean_dataclass import dataclass

MIN_RUNTIME = "minRuntime"
GANG_ATOMIC = "gangAtomicVictims"


@dataclass(frozen=True)
class ReclaimGuards:
    """The reclaim action's guard switches for one session."""

    min_runtime: float = 0.0
    gang_atomic: bool = False
    #: the session's clock (epoch seconds; None: unknown, and then no task is protected)
    now: float | None = None

    @classmethod
    def of(cls, ssn: Session) -> ReclaimGuards:
        """Read the switches from the `reclaim` action's arguments; a bad value is a warning, guard off."""
        args = ssn.conf.action_arguments("reclaim")
        min_runtime = 0.0
        raw = args.get(MIN_RUNTIME)
        if raw is not None:
            parsed = _seconds(raw)
            if parsed is None:
                ssn.warnings.append(f"reclaim: argument {MIN_RUNTIME}={str(raw)[:40]!r} is not a number of seconds "
                                    "or a duration such as '1h30m'; the guard is off")
            else:
                min_runtime = parsed
        gang_atomic = False
        raw_g = args.get(GANG_ATOMIC)
        if raw_g is not None:
            if isinstance(raw_g, bool):
                gang_atomic = raw_g
            elif isinstance(raw_g, str) and raw_g.strip().lower() in ("true", "false"):
                gang_atomic = raw_g.strip().lower() == "true"
            else:
                ssn.warnings.append(f"reclaim: argument {GANG_ATOMIC}={str(raw_g)[:40]!r} is not a boolean; "
                                    "the guard is off")
        now = ssn.now
        if now is None and min_runtime > 0:
            # A dump carries no clock: its own newest timestamp is "now" (as forecast's default --now), so
            # the same dump always gives the same evictions, whenever it is run.
            newest = ssn.snapshot.newest_time()
            now = newest.timestamp() if newest is not None else None
        return cls(min_runtime, gang_atomic, now)

    @property
    def active(self) -> bool:
        """Whether any guard is on (off: Volcano's reclaim, unchanged)."""
        return self.min_runtime > 0 or self.gang_atomic

    def protected(self, task: TaskInfo) -> bool:
        """minRuntime: has this running task run for less than the minimum? An unknown start never is."""
        if self.min_runtime <= 0 or self.now is None:
            return False
        start = task.started_at if task.started_at is not None else _epoch(task.start_time)
        return start is not None and self.now - start < self.min_runtime


def _seconds(raw: object) -> float | None:
    try:
        return parse_duration(raw, MIN_RUNTIME)
    except InputError:
        return None


def _epoch(stamp: str) -> float | None:
    """A pod's `status.startTime` (RFC 3339) in epoch seconds, or None."""
    when = try_time(stamp)
    return when.timestamp() if when is not None else None


# ===================================================================== gang-atomic victim units
def victim_units(ssn: Session, reclaimer: TaskInfo, row: int, victims: list[TaskInfo],
                 guards: ReclaimGuards) -> list[list[TaskInfo]] | None:
    """The units to evict on node `row`, in order, or None if no choice of units makes room.

    `victims` are the node's victims in victim order (the reclaimable vote's answer)."""
    by_job: dict[str, list[TaskInfo]] = {}
    for v in victims:
        by_job.setdefault(v.job, []).append(v)
    singles: list[list[TaskInfo]] = []
    wholes: list[list[TaskInfo]] = []
    for uid, local in by_job.items():
        job = ssn.jobs[uid]
        surplus = job.ready_num() - job.min_available
        if surplus < 0:
            # already below its minMember: no gang left to break, every task is its own unit (bundle.go)
            singles.extend([v] for v in local)
            continue
        taken = local[:surplus]
        singles.extend([v] for v in taken)
        if len(local) <= surplus:
            continue
        # the rest of the job goes as one unit: every running member, on this node or another
        members = [t for t in job.tasks.values()
                   if t.status is TaskStatus.RUNNING and all(t is not x for x in taken)]
        if any(not t.preemptable or guards.protected(t) for t in members):
            continue
        members = ssn.sort_victims(members, reclaimer)
        approved = {id(t) for t in ssn.reclaimable(reclaimer, members)}
        if all(id(t) in approved for t in members):
            wholes.append(members)
    return _fewest(ssn, reclaimer, row, singles, wholes)


def _fewest(ssn: Session, reclaimer: TaskInfo, row: int, singles: list[list[TaskInfo]],
            wholes: list[list[TaskInfo]]) -> list[list[TaskInfo]] | None:
    cols = ssn.task_cols(reclaimer)
    need = ssn.task_vec(reclaimer)[cols]
    avail = ssn.table.future_idle_row(row)[cols].copy()
    name = ssn.nodes[row].name

    def local(unit: list[TaskInfo]) -> np.ndarray:
        out = np.zeros(len(cols))
        for t in unit:
            if t.node_name == name:
                out += ssn.task_vec(t)[cols]
        return out

    def covered(a: np.ndarray) -> bool:
        return bool(np.all((need < a) | (np.abs(need - a) < 0.1)))

    chosen: list[list[TaskInfo]] = []
    for unit in singles:
        if covered(avail):
            return chosen
        chosen.append(unit)
        avail = avail + local(unit)
    left = list(wholes)
    while not covered(avail):
        if not left:
            return None
        gains = [local(u) for u in left]
        closing = [i for i, g in enumerate(gains) if covered(avail + g)]
        if closing:
            # the smallest unit (least work lost) that finishes the job; ties in victim order
            i = min(closing, key=lambda k: (_size(ssn, left[k], cols, need), k))
        else:
            missing = np.maximum(need - avail, 0.0)
            i = max(range(len(left)), key=lambda k: (_score(gains[k], missing), -k))
            if _score(gains[i], missing) <= 0:
                return None
        chosen.append(left[i])
        avail = avail + gains[i]
        del left[i]
    return chosen


def _score(gain: np.ndarray, missing: np.ndarray) -> float:
    """Volcano's scoreAgainstNeed: the covered fraction of each missing dimension, capped at 1, summed."""
    mask = missing > 0
    return float(np.sum(np.minimum(gain[mask], missing[mask]) / missing[mask]))


def _size(ssn: Session, unit: list[TaskInfo], cols: np.ndarray, need: np.ndarray) -> float:
    """A unit's whole request against the reclaimer's (Volcano's GlobalRes score): what evicting it costs."""
    total = np.zeros(len(cols))
    for t in unit:
        total += ssn.task_vec(t)[cols]
    mask = need > 0
    return float(np.sum(total[mask] / need[mask]))
