"""The reservation a waiting job could book, planned by the reservation planner and checked by a session.

It applies to a job in a reservable queue (`apportion.io/reservable: "true"`), or in a child of one,
under the hierarchical capacity plugin (reservations are child queues there, as the simulator's plan
follower makes them). The shape is the job's gang: minMember pods of its per-pod request, for its
runtime (`apportion.io/duration`, else one hour: said in the text). The planner
(`apportion.reservation`, YARN's greedy-left agent: the earliest placement) places it in the plan of
the reservable queue: capacity = its guarantee, else deserved, capped by the cluster (as the follower
counts it), minus the reservation queues it has now (taken as held for the whole window: a dump does
not say when they end). YARN plans memory and vCores only; other resources (GPUs) are in the queue the
reservation becomes, not in the planning.

A reservation the planner starts now is checked by running the next session with it in place (a child
queue deserving and guaranteeing the gang, capped to it, the default child's share reduced by it, the
job moved into it); one it can only start later cannot start the job in the next session and is not
suggested.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import Snapshot
from apportion.forecast.fit import Search, Suggestion, natural
from apportion.forecast.start import JobStart
from apportion.forecast.text import resources as fmt_res
from apportion.forecast.text import seconds
from apportion.resources import CPU, MEMORY, PODS, Resource
from apportion.simulation.reservations import default_child, plan_capacity
from apportion.simulation.scenario import RESERVABLE_KEY, RESERVATION_ID_KEY

#: the name of the reservation queue a suggestion adds (checked sessions only)
SUGGESTED = "suggested-reservation"
#: how far ahead the planner may look, and the runtime assumed for a job without one
WINDOW = 7 * 86400
DEFAULT_RUNTIME = 3600.0


def _yarn(r: Resource) -> tuple[int, int]:
    """(memory MB, vCores), rounded up: YARN's planning units."""
    return math.ceil(r.get(MEMORY) / 2**20), math.ceil(r.get(CPU) / 1000.0)


def _reservable(search: Search) -> QueueInfo | None:
    q = search.queues.get(search.job.queue)
    if q is None or not search.hierarchical:
        return None
    if q.annotations.get(RESERVABLE_KEY) == "true":
        return q
    parent = search.queues.get(q.parent)
    if parent is not None and parent.annotations.get(RESERVABLE_KEY) == "true":
        return parent
    return None


def _patch(uid: str, parent: QueueInfo, amount: Resource) -> Callable[[Snapshot], None]:
    def patch(snap: Snapshot) -> None:
        snap.queues[SUGGESTED] = QueueInfo(
            name=SUGGESTED, weight=1, capability=amount.clone(), deserved=amount.clone(), guarantee=amount.clone(),
            capability_set=True, deserved_set=True, parent=parent.name, reclaimable=parent.reclaimable,
            priority=parent.priority, creation=parent.creation, annotations={"apportion.io/reservation": SUGGESTED},
            capability_names=frozenset({CPU, MEMORY}))
        d = snap.queues.get(default_child(parent.name))
        if d is not None:
            snap.queues[d.name] = replace(d, deserved=d.deserved.exceeded_part(amount),
                                          guarantee=d.guarantee.exceeded_part(amount))
        job = snap.jobs[uid]
        job.queue = SUGGESTED
        job.annotations = {**job.annotations, RESERVATION_ID_KEY: SUGGESTED}
    return patch


def reservation_suggestion(js: JobStart, search: Search) -> list[Suggestion]:
    """The reservation that lets the job start in the next session, if the planner can start one now."""
    from apportion.reservation.agents import make_agent
    from apportion.reservation.definition import R_ALL, ReservationDefinition, ReservationId, Stage
    from apportion.reservation.exceptions import PlanningException
    from apportion.reservation.plan import InMemoryPlan, ReservationAllocation
    from apportion.reservation.policies import NoOverCommitPolicy

    parent = _reservable(search)
    if parent is None or not search.pending:
        return []
    per = search.pending[0].resreq
    if any(not t.resreq.equal(per) for t in search.pending):
        return []
    m = max(1, search.job.min_available)
    amount = per.clone().multi(m)
    amount.scalars.pop(PODS, None)
    runtime = js.runtime if js.runtime is not None and math.isfinite(js.runtime) else DEFAULT_RUNTIME
    ms = max(1000, math.ceil(runtime) * 1000)
    cap = plan_capacity(parent, search.total)
    plan = InMemoryPlan(parent.name, _yarn(cap), step=1000, policy=NoOverCommitPolicy(),
                        maximum_allocation=_yarn(cap))
    held = [q for q in search.queues.values() if q.parent == parent.name and "apportion.io/reservation" in q.annotations]
    for i, q in enumerate(sorted(held, key=lambda q: q.name)):
        plan.add_reservation(ReservationAllocation(ReservationId(1, i + 1), "held", None, 0, WINDOW * 1000,
                                                   [(0, WINDOW * 1000, _yarn(q.deserved))]))
    definition = ReservationDefinition(arrival=0, deadline=ms + WINDOW * 1000,
                                       stages=(Stage(_yarn(per), m, m, ms),), interpreter=R_ALL,
                                       name=f"forecast-{js.uid}")
    agent = make_agent("greedy-left")
    if agent is None:
        return []
    try:
        res = agent.plan_job(plan, ReservationId(2, 1), "forecast", definition, None)
    except PlanningException:
        return []
    first = min((a for a, _b, v in res.intervals if v != (0, 0)), default=None)
    if first is None or first > 0:
        return []  # it would start later (the allocation's first piece, not the window's start)
    patch = _patch(search.uid, parent, amount)
    if not search.works(patch):
        return []
    basis = "" if js.runtime is not None else f" (runtime unknown: {seconds(DEFAULT_RUNTIME)} assumed)"
    return [Suggestion(
        kind="reservation", cost=search.cost(amount), patch=patch,
        text=f"book a reservation in queue {parent.name} of {m} x ({fmt_res(natural(per))}) from now for "
             f"{seconds(ms / 1000)}{basis}",
        change={"type": "reservation", "queue": parent.name, "job": search.uid, "pods": m,
                "perPod": natural(per), "start": 0, "durationSeconds": ms / 1000})]
