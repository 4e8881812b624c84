"""The plan followers' queues as the live cache gets them, made again only where they changed.

Each active reservation is a child queue of its reservable queue (guarantee = deserved = its
resources now; capability the reservable queue's when the plan allows over-use and the reservation
is not a gang, else its resources), and `<queue>-default` gets the rest of the plan.
`reservation_queues` makes them all from the followers' states: the reference.

`QueuePublisher` keeps, per plan, the queue objects it made at the last tick, the active
reservations' resources summed, and the follower step it made them from. When a follower's new
state says what changed since that step (`FollowerState.changes`, which the incremental follower
gives), only those reservations' queues are made again, so a tick costs what changed rather than
what is active: at 6,000 active reservations the walk over all of them was most of the tick's
second writer job (benchmarks/README.md, issue 18, fifth session). Otherwise (a full step, a plan
whose settings or parent queue changed, a cache loaded afresh) the plan's queues are all made again
and compared with what was published. Either way a queue whose object would be the same is the very
same object, and the publisher answers what the cache must change: the queues made or gone, and the
reservations that became active or stopped being active.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any

from apportion.lean_dataclass import dataclass
from apportion.service.reservations import vector_json

if TYPE_CHECKING:
    from apportion.reservation.follower import FollowerState, ReservationShare
    from apportion.reservation.stepfn import Res

#: a reservation queue object as last made, by queue (reservation id) name: (what it was made from,
#: the object); keyed by the name, whose hash a str keeps, not by the ReservationId
QueueMemo = dict[str, tuple[tuple[Any, ...], dict[str, Any]]]

#: what a plan's queues are made from besides its reservations: the reservable queue's capability
#: (its stored spec), over-use allowed, the plan's dimensions, capacity and default queue
PlanInputs = tuple[Any, bool, tuple[str, ...], "Res", str]


def _queue(qname: str, name: str, made: tuple[Any, ...], share: ReservationShare, dims: tuple[str, ...],
           overuse: bool, cap: Any) -> dict[str, Any]:
    v = share.resources
    spec: dict[str, Any] = {"parent": qname, "guarantee": {"resource": vector_json(v, dims)},
                            "deserved": vector_json(v, dims)}
    spec["capability"] = cap if (overuse and cap and not share.gang) else vector_json(v, dims)
    return {"kind": "Queue", "metadata": {"name": name}, "spec": spec}


def _default_queue(qname: str, st: FollowerState, used: list[int], dims: tuple[str, ...], cap: Any
                   ) -> dict[str, Any]:
    rest = tuple(max(c - u, 0) for c, u in zip(st.plan_capacity, used))
    dspec: dict[str, Any] = {"parent": qname, "deserved": vector_json(rest, dims)}
    if any(rest):
        dspec["guarantee"] = {"resource": vector_json(rest, dims)}
    if cap:
        dspec["capability"] = cap
    return {"kind": "Queue", "metadata": {"name": st.default_queue}, "spec": dspec}


def reservation_queues(states: dict[str, FollowerState], inputs: dict[str, PlanInputs],
                       memo: QueueMemo | None = None) -> tuple[list[dict[str, Any]], set[str]]:
    """Queue objects for the plan followers' children, and the ids of the active reservations (the
    reference of `QueuePublisher`). With a `memo`, a reservation whose queue would be the same as
    the memo's gets the very same object back."""
    out: list[dict[str, Any]] = []
    active: set[str] = set()
    seen: QueueMemo = {}
    for qname, st in sorted(states.items()):
        cap, overuse, dims, _, _ = inputs[qname]
        used = [0] * len(dims)
        for share in st.active:
            name = str(share.id)
            active.add(name)
            v = share.resources
            if any(v):  # most active reservations hold nothing at this instant
                for i, x in enumerate(v):
                    used[i] += x
            made = (qname, v, dims, share.gang, overuse, cap)
            old = memo.get(name) if memo is not None else None
            if old is not None and old[0] == made:
                seen[name] = old
                out.append(old[1])
                continue
            obj = _queue(qname, name, made, share, dims, overuse, cap)
            seen[name] = (made, obj)
            out.append(obj)
        out.append(_default_queue(qname, st, used, dims, cap))
    if memo is not None:
        memo.clear()
        memo.update(seen)
    return out, active


@dataclass
class _PlanQueues:
    """What was published of one plan."""

    inputs: PlanInputs
    serial: int
    default: dict[str, Any]
    used: list[int]
    memo: QueueMemo = field(default_factory=dict)


@dataclass
class Published:
    """What the cache must change after a tick: each queue made (its object) or gone (None), by name;
    the reservations that became active or stopped being active; and every active one."""

    changed: dict[str, dict[str, Any] | None]
    flipped: set[str]
    active: set[str]


class QueuePublisher:
    """The followers' queues from tick to tick (see the module)."""

    def __init__(self) -> None:
        self._plans: dict[str, _PlanQueues] = {}
        self.active: set[str] = set()

    def reset(self) -> None:
        """Forget what was published (the cache was loaded afresh): the next tick sends everything."""
        self._plans = {}
        self.active = set()

    def publish(self, states: dict[str, FollowerState], inputs: dict[str, PlanInputs]) -> Published:
        """The queues of the followers' new states, and what changed since the last call."""
        changed: dict[str, dict[str, Any] | None] = {}
        before = set(self.active)
        for qname in sorted(set(self._plans) - set(states)):
            gone = self._plans.pop(qname)
            for name in gone.memo:
                changed[name] = None
                self.active.discard(name)
            changed[gone.default["metadata"]["name"]] = None
        for qname, st in sorted(states.items()):
            kept = self._plans.get(qname)
            if (kept is not None and st.changes is not None and st.changes[0] == kept.serial
                    and kept.inputs == inputs[qname]):
                self._follow(qname, st, kept, changed)
            else:
                self._remake(qname, st, inputs[qname], kept, changed)
        # a name whose queue went and came back in one call (two plans) is the last word's
        flipped = {n for n in changed if (n in self.active) != (n in before)}
        return Published(changed, flipped, self.active)

    def _follow(self, qname: str, st: FollowerState, kept: _PlanQueues, changed: dict[str, dict[str, Any] | None]
                ) -> None:
        """Only the reservations the follower says changed."""
        assert st.changes is not None
        cap, overuse, dims, _, _ = kept.inputs
        memo, used, active = kept.memo, kept.used, self.active
        for name, share in st.changes[1].items():
            old = memo.get(name)
            if old is not None:
                for i, x in enumerate(old[0][1]):
                    used[i] -= x
            if share is None:
                if old is not None:
                    del memo[name]
                    active.discard(name)
                    changed[name] = None
                continue
            v = share.resources
            for i, x in enumerate(v):
                used[i] += x
            made = (qname, v, dims, share.gang, overuse, cap)
            active.add(name)
            if old is not None and old[0] == made:
                continue
            obj = _queue(qname, name, made, share, dims, overuse, cap)
            memo[name] = (made, obj)
            changed[name] = obj
        kept.serial = st.serial
        self._set_default(qname, st, kept, changed)

    def _remake(self, qname: str, st: FollowerState, inputs: PlanInputs, kept: _PlanQueues | None,
                changed: dict[str, dict[str, Any] | None]) -> None:
        """Every queue of the plan made again (those that are the same keep their objects)."""
        memo: QueueMemo = dict(kept.memo) if kept is not None else {}
        old_names = set(memo)
        queues, names = reservation_queues({qname: st}, {qname: inputs}, memo)
        for name in old_names - names:
            changed[name] = None
            self.active.discard(name)
        for name in names:
            made_obj = memo[name][1]
            if kept is None or kept.memo.get(name, (None, None))[1] is not made_obj:
                changed[name] = made_obj
        self.active |= names
        used = [0] * len(inputs[2])
        for share in st.active:
            for i, x in enumerate(share.resources):
                used[i] += x
        default = queues[-1]
        if kept is not None and kept.default["metadata"]["name"] != st.default_queue:
            changed[kept.default["metadata"]["name"]] = None
        plan = _PlanQueues(inputs, st.serial, kept.default if kept is not None else {}, used, memo)
        self._plans[qname] = plan
        self._set_default(qname, st, plan, changed, default)

    @staticmethod
    def _set_default(qname: str, st: FollowerState, kept: _PlanQueues, changed: dict[str, dict[str, Any] | None],
                     made: dict[str, Any] | None = None) -> None:
        """The plan's default queue: the same object while it would be equal."""
        cap, _, dims, _, _ = kept.inputs
        obj = made if made is not None else _default_queue(qname, st, kept.used, dims, cap)
        if obj != kept.default:
            kept.default = obj
            changed[st.default_queue] = obj
