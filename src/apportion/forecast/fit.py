"""What would make a waiting job fit: the cheapest single changes, each checked by running the session.

For a job that does not start in the next session, each kind of change is searched for its smallest
amount, and every amount is tried by running that session (the real engine and conf on the start
state, with the change applied) - nothing is guessed:

* raise a queue's capability or deserved (the job's queue and, under a hierarchy, its ancestors);
* lower the job's minMember;
* lower the job's per-pod request (every dimension scaled alike);
* free running jobs (the fewest, smallest set found);
* book a reservation, planned by the reservation planner (`apportion.forecast.reserve`).

Searches halve an interval a few times; the amount reported is one the session accepted (rounded to
100m cpu, 256Mi memory, whole scalars). A change is kept only if the job starts with it; the cheapest
(by the share of the cluster the change moves) come first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import field, replace
from typing import Any

from apportion.cluster.model import JobInfo, QueueInfo, TaskInfo, TaskStatus
from apportion.cluster.snapshot import ROOT_QUEUE, Snapshot
from apportion.engine import open_session, run_session
from apportion.forecast import freeing
from apportion.forecast.sim import task_copy
from apportion.forecast.start import JobStart, StartState
from apportion.forecast.text import resources as fmt_res
from apportion.lean_dataclass import dataclass
from apportion.resources import CPU, MEMORY, PODS, Resource, dominant_share

#: how many suggestions a job gets (the cheapest)
KEEP = 3
#: halvings per search: the amount found is within 1/2**STEPS of the smallest that works
STEPS = 6
_UNIT = {CPU: 100.0, MEMORY: 256.0 * 2**20}


def _unit(name: str) -> float:
    return _UNIT.get(name, 1000.0)  # scalars (gpus) in whole units


def round_up(r: Resource) -> Resource:
    """Each dimension up to its unit (100m cpu, 256Mi memory, whole scalars)."""
    out = Resource()
    for n in r.names():
        out.set(n, math.ceil(r.get(n) / _unit(n) - 1e-9) * _unit(n))
    return out


def round_down(r: Resource) -> Resource:
    """Each dimension down to its unit."""
    out = Resource()
    for n in r.names():
        out.set(n, math.floor(r.get(n) / _unit(n) + 1e-9) * _unit(n))
    return out


@dataclass
class Suggestion:
    """One checked change. `change` is JSON and can be applied to the cluster objects (`apply`)."""

    kind: str
    text: str
    change: dict[str, Any]
    cost: float
    #: the change in session objects (the same as `change`, unrounded through no text)
    patch: Callable[[Snapshot], None] = field(repr=False, compare=False, default=lambda s: None)

    def to_json(self) -> dict[str, Any]:
        """The suggestion as the forecast's JSON lists it."""
        return {"kind": self.kind, "text": self.text, "change": self.change, "cost": round(self.cost, 6)}


def natural(r: Resource) -> dict[str, Any]:
    """Natural units without pods (cpu cores, memory bytes, scalars as counts)."""
    out = r.to_natural(keep_zero_scalars=False)
    out.pop(PODS, None)
    return out


@dataclass(frozen=True)
class KnownStart:
    """The job's start as the forecast found it, in the same simulation the checks run without a change
    (the forecast simulator, no assumed runtimes), so a check need not run it again."""

    #: seconds from now; None: not within `horizon` (or never, without one)
    start_in: float | None
    horizon: float | None = None

    def by(self, t: float) -> bool | None:
        """Has the job started by `t` seconds from now (None: the forecast did not look that far)?"""
        if self.start_in is not None:
            return self.start_in <= t + 1e-9
        if self.horizon is None or t <= self.horizon + 1e-9:
            return False
        return None


class Checker:
    """Runs the next session of a start state with one change applied.

    The sessions see the forecast simulator's objects, handed out again from check to check while no
    session changed them (waiting jobs too, as in a forecast), which the patches below allow: they
    replace a job, queue or task, never change one in place. `keep=False` builds every job that is
    not wholly running again for each check (the reference)."""

    def __init__(self, state: StartState, keep: bool = True) -> None:
        from apportion.forecast.sim import forecast_simulator

        self.sim = forecast_simulator(state, keep_waiting=keep)
        self.sessions = 0

    def snapshot(self) -> Snapshot:
        """The objects the next session would see (a fresh snapshot whose jobs may be the last
        check's, untouched by it; queue objects shared: replace them, as jobs)."""
        snap = self.sim.snapshot()
        snap.queues = dict(snap.queues)
        return snap

    def starts(self, uid: str, patch: Callable[[Snapshot], None]) -> bool:
        """Does the job get at least minMember (at least one) pods bound in the session?"""
        snap = self.snapshot()
        patch(snap)
        self.sessions += 1
        ssn = open_session(snap, self.sim.conf, session_id=f"fit-{self.sessions}")
        result = run_session(ssn, queue_report=False)
        job = snap.jobs.get(uid)
        ok = job is not None and sum(1 for t in job.tasks.values() if t.key in result.binds) >= max(
            1, job.min_available)
        ssn.release()
        return ok


# ===================================================================== patches on session objects
def set_queue(name: str, fld: str, to: Resource) -> Callable[[Snapshot], None]:
    """A patch: queue `name`'s capability or deserved becomes `to` (the queue object replaced)."""
    def patch(snap: Snapshot) -> None:
        q = snap.queues[name]
        if fld == "capability":
            names = q.capability_names | frozenset(n for n in to.names() if n in (CPU, MEMORY) and to.get(n) > 0)
            snap.queues[name] = replace(q, capability=to.clone(), capability_set=True, capability_names=names)
        else:
            snap.queues[name] = replace(q, deserved=to.clone(), deserved_set=True)
    return patch


def _job_copy(snap: Snapshot, uid: str, **changes: Any) -> JobInfo:
    """A new job object for the job (its tasks to be added): what a session writes is its own."""
    old = snap.jobs[uid]
    job = replace(old, tasks={}, counts={}, allocated=Resource(), pending_be=0, allocated_as_added=True,
                  gated_tasks=0, version=0, derived={}, conditions={}, nodes_fit_errors={}, failed_roles=set(),
                  annotations=dict(old.annotations), **changes)
    return job


def set_min_member(uid: str, m: int, min_resources: Resource | None) -> Callable[[Snapshot], None]:
    """A patch: the job's minMember becomes `m` (and minResources `min_resources`)."""
    def patch(snap: Snapshot) -> None:
        old = snap.jobs[uid]
        job = _job_copy(snap, uid, min_available=m, min_resources=None if min_resources is None
                        else min_resources.clone())
        for t in old.tasks.values():
            job.add_task(task_copy(t))
        snap.jobs[uid] = job
    return patch


def _with_request(t: TaskInfo, req: Resource) -> TaskInfo:
    new = t.resreq.clone()
    for n in req.names():
        if n != PODS:
            new.set(n, req.get(n))
    # a row and compared columns made for the old request must not follow the task
    return replace(t, resreq=new, kube_requests=None, predicate_key=None, vec=None, cols=None,
                   initial_status=None, last_tx_status=None, nominated_node="",
                   nonzero_cpu=new.cpu or t.nonzero_cpu, nonzero_memory=new.memory or t.nonzero_memory)


def set_request(uid: str, req: Resource, min_resources: Resource | None) -> Callable[[Snapshot], None]:
    """A patch: every pending pod of the job requests `req` (its other dimensions kept)."""
    def patch(snap: Snapshot) -> None:
        old = snap.jobs[uid]
        job = _job_copy(snap, uid, min_resources=None if min_resources is None else min_resources.clone())
        for t in old.tasks.values():
            job.add_task(_with_request(t, req) if t.status is TaskStatus.PENDING else task_copy(t))
        snap.jobs[uid] = job
    return patch


#: the most jobs a "free running" suggestion names in its text (its change lists every one)
FREE_NAMED = 5


def _free_text(chosen: list[str], queue_of: dict[str, str], freed: str) -> str:
    named = ", ".join(f"{u} (queue {queue_of[u]})" for u in chosen[:FREE_NAMED])
    if len(chosen) > FREE_NAMED:
        queues = len({queue_of[u] for u in chosen})
        named = (f"{len(chosen)} jobs in {queues} queue(s): {named} and {len(chosen) - FREE_NAMED} more "
                 "(-o json lists them all)")
    return f"free running {named}: {freed}"


def free_jobs(uids: list[str]) -> Callable[[Snapshot], None]:
    """A patch: these jobs are gone (their pods free their nodes)."""
    def patch(snap: Snapshot) -> None:
        for u in uids:
            snap.jobs.pop(u, None)
    return patch


# ===================================================================== the searches
def _bisect(lo: float, hi: float, works: Callable[[float], bool], *, smallest: bool) -> float | None:
    """The best value in [lo, hi] that works, assuming one side of a threshold works: `smallest` looks
    for the smallest (works at hi), else the largest (works at lo). None if the end that should work
    does not."""
    good = hi if smallest else lo
    if not works(good):
        return None
    bad = lo if smallest else hi
    for _ in range(STEPS):
        mid = (good + bad) / 2
        if works(mid):
            good = mid
        else:
            bad = mid
    return good


class Search:
    """The suggestions for one job."""

    def __init__(self, state: StartState, js: JobStart, checker: Checker, known: KnownStart | None = None,
                 reference: bool = False, free_reference: bool | None = None) -> None:
        self.state = state
        #: the reference searches (`freeing.choose_reference`, each held pod planned apart)
        self.reference = reference
        #: the jobs to free searched by `freeing.choose_reference` (by default when `reference`): the
        #: two searches agree only where freeing more jobs never stops the job from starting
        self.free_reference = reference if free_reference is None else free_reference
        self.known = known
        self.js = js
        self.uid = js.uid
        self.check = checker
        snap = checker.snapshot()
        self.queues = snap.queues
        self.total = Resource()
        for n in state.nodes:
            self.total.add(n.allocatable)
        self.pending = [t.template for t in js.tasks if t.status == "pending"]
        self.job = snap.jobs[self.uid]
        m = max(1, self.job.min_available)
        self.need = Resource()
        for t in self.pending[:m]:
            self.need.add(t.resreq)
        self.hierarchical = any(o.enabled("enableHierarchy") for t in state.conf.tiers for o in t.plugins)

    def cost(self, r: Resource) -> float:
        """What a change moves: its dominant share of the cluster."""
        return dominant_share(r, self.total)

    def works(self, patch: Callable[[Snapshot], None]) -> bool:
        """Does the job start in the next session with `patch` applied?"""
        return self.check.starts(self.uid, patch)

    # ----------------------------------------------------------------- queues
    def _chain(self) -> list[QueueInfo]:
        out = []
        q = self.queues.get(self.job.queue)
        while q is not None and q.name != ROOT_QUEUE and q not in out:
            out.append(q)
            if not self.hierarchical or not q.parent:
                break
            q = self.queues.get(q.parent)
        return out

    def _queue_use(self, name: str) -> Resource:
        """What the jobs of the queue (and, under a hierarchy, of its descendants) hold now."""
        under = {name}
        if self.hierarchical:
            grew = True
            while grew:
                grew = False
                for q in self.queues.values():
                    if q.parent in under and q.name not in under:
                        under.add(q.name)
                        grew = True
        used = Resource()
        for js in self.state.jobs:
            if js.template.queue in under:
                for t in js.tasks:
                    if t.status in ("running", "releasing"):
                        used.add(t.template.resreq)
        return used

    def _queue_trial(self, name: str, fld: str, cur: Resource, delta: Resource) -> Callable[[float], bool]:
        """Does the job start with the queue's `fld` at cur + s × delta (rounded up)?"""
        def works(s: float) -> bool:
            return self.works(set_queue(name, fld, cur.clone().add(round_up(delta.clone().multi(s)))))
        return works

    def queue_raises(self) -> list[Suggestion]:
        """The least raise of capability, then of deserved, of the job's queue and its ancestors."""
        out = []
        for q in self._chain():
            used = self._queue_use(q.name)
            for fld in ("capability", "deserved"):
                cur: Resource = getattr(q, fld)
                limited = q.capability_set if fld == "capability" else q.deserved_set
                if not limited:
                    continue
                target = cur.clone()
                for n in self.need.names():
                    if n == PODS or self.need.get(n) <= 0:
                        continue
                    if fld == "capability" and n in (CPU, MEMORY) and n not in q.capability_names:
                        continue  # unset: unlimited already
                    target.set(n, max(cur.get(n), used.get(n) + self.need.get(n)))
                delta = target.clone().sub_without_assert(cur)
                if delta.is_empty() or all(delta.get(n) <= 0 for n in delta.names()):
                    continue

                s = _bisect(0.0, 1.0, self._queue_trial(q.name, fld, cur, delta), smallest=True)
                if s is None:
                    continue
                to = cur.clone().add(round_up(delta.clone().multi(s)))
                by = to.clone().sub_without_assert(cur)
                out.append(Suggestion(
                    kind=f"queue-{fld}", cost=self.cost(by), patch=set_queue(q.name, fld, to),
                    text=f"raise queue {q.name}'s {fld} by {fmt_res(natural(by))} (to {fmt_res(natural(to))})",
                    change={"type": "queue", "queue": q.name, "field": fld, "to": natural(to), "by": natural(by)}))
        return out

    # ----------------------------------------------------------------- the job itself
    def _min_resources_for(self, m: int, req: Resource | None = None) -> Resource | None:
        if self.job.min_resources is None:
            return None
        total = Resource()
        for t in self.pending[:m]:
            total.add(req if req is not None else t.resreq)
        total.scalars.pop(PODS, None)
        return total

    def min_member(self) -> list[Suggestion]:
        """The largest minMember below the job's with which it starts."""
        m0 = self.job.min_available
        if m0 <= 1:
            return []
        best = None
        lo, hi = 1, m0 - 1
        if not self.works(set_min_member(self.uid, lo, self._min_resources_for(lo))):
            return []
        best = lo
        while lo < hi:  # the largest m that still starts
            mid = (lo + hi + 1) // 2
            if self.works(set_min_member(self.uid, mid, self._min_resources_for(mid))):
                lo = best = mid
            else:
                hi = mid - 1
        freed = Resource()
        for t in self.pending[best:m0]:
            freed.add(t.resreq)
        mr = self._min_resources_for(best)
        return [Suggestion(
            kind="min-member", cost=self.cost(freed), patch=set_min_member(self.uid, best, mr),
            text=f"lower {self.uid}'s minMember from {m0} to {best} (it starts with {best} pod{'s' if best > 1 else ''})",
            change={"type": "minMember", "job": self.uid, "from": m0, "to": best,
                    "minResources": None if mr is None else natural(mr)})]

    def request(self) -> list[Suggestion]:
        """The largest per-pod request (all dimensions scaled alike) with which it starts."""
        if not self.pending:
            return []
        base = self.pending[0].resreq
        if any(not t.resreq.equal(base) for t in self.pending):
            return []  # roles with different requests: no single per-pod request to lower
        dims = Resource()
        for n in base.names():
            if n != PODS and base.get(n) > 0:
                dims.set(n, base.get(n))
        m = max(1, self.job.min_available)

        def at(f: float) -> Resource:
            r = round_down(dims.clone().multi(f))
            for n in dims.names():  # never below one unit (a request of 0 is another kind of pod)
                if r.get(n) <= 0:
                    r.set(n, min(_unit(n), dims.get(n)))
            return r

        def patch_for(f: float) -> Callable[[Snapshot], None]:
            return set_request(self.uid, at(f), self._min_resources_for(m, at(f)))

        f = _bisect(0.0, 1.0, lambda f: self.works(patch_for(f)), smallest=False)
        if f is None or f <= 0:
            return []
        to = at(f)
        less = dims.clone().sub_without_assert(to)
        return [Suggestion(
            kind="task-request", cost=self.cost(less.clone().multi(m)), patch=patch_for(f),
            text=f"lower {self.uid}'s request per pod from {fmt_res(natural(dims))} to {fmt_res(natural(to))}",
            change={"type": "request", "job": self.uid, "from": natural(dims), "to": natural(to)})]

    # ----------------------------------------------------------------- other jobs
    def free(self) -> list[Suggestion]:
        """The cheapest set of running jobs to stop, found smallest-first and largest-first
        (`freeing.choose`; `freeing.choose_reference` when the search is the reference)."""
        running = []
        for js in self.state.jobs:
            if js.uid == self.uid:
                continue
            held = Resource()
            for t in js.tasks:
                if t.status in ("running", "releasing"):
                    held.add(t.template.resreq)
            if not held.is_empty():
                running.append((self.cost(held), js.uid, held))
        if not running:
            return []

        def works(uids: list[str]) -> bool:
            return self.works(free_jobs(uids))

        if self.free_reference:
            chosen = freeing.choose_reference(running, works, self.cost)
        else:
            chosen = freeing.choose(running, works, self.cost)
        if chosen is None:
            return []
        held_by = {u: h for _, u, h in running}
        freed = Resource()
        for u in chosen:
            freed.add(held_by[u])
        queue_of = {js.uid: js.template.queue for js in self.state.jobs}
        return [Suggestion(
            kind="free-jobs", cost=self.cost(freed), patch=free_jobs(sorted(chosen)),
            text=_free_text(sorted(chosen), queue_of, fmt_res(natural(freed))),
            change={"type": "free", "jobs": [{"job": u, "queue": queue_of[u]} for u in sorted(chosen)],
                    "frees": natural(freed)})]
