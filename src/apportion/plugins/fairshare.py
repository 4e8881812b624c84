"""proportion's weighted water-filling of `deserved` (semantics guide §6.9), as a pure function.

Every round hands the resources that are still unclaimed (`remaining`) to the queues that are not yet
"met", in proportion to their weights; each queue's share is then capped by its realCapability and its
request and raised to its guarantee. Whatever a cap cut off flows back into `remaining` for the next
round. Everything is per dimension (cpu, memory and every scalar, `pods` included), exactly as
`OnSessionOpen` of Volcano's `plugins/proportion/proportion.go` does it.

Kept from Volcano on purpose:

- a queue is met when `request <= deserved` (rule a, with the 0.1 tolerance) or when its deserved did not
  change in the round (exact equality), both judged *before* the guarantee is applied;
- the guarantee raise is charged against `remaining` like any other increase, and `remaining` is clamped
  at zero (`ExceededPart`). So when a guarantee lifts a queue above what the round gave it, the sum of
  deserved can exceed the cluster total in that dimension, by at most the sum of the guarantees;
- with a total weight of 0 no round runs and every deserved stays empty (not even the guarantee).
"""

from __future__ import annotations

from collections.abc import Iterable

from apportion.errors import InternalError
from apportion.lean_dataclass import dataclass
from apportion.resources import Resource

#: A safety net, far beyond any real input: Volcano's loop has no bound, a broken invariant here should
#: fail loudly rather than hang the scheduler.
MAX_ROUNDS = 100_000


@dataclass(frozen=True)
class FairShareQueue:
    """What the water-filling needs to know about one queue (none of it is modified)."""

    name: str
    weight: int
    request: Resource
    #: None when the queue has no realCapability (proportion always has one; kept for generality).
    real_capability: Resource | None
    guarantee: Resource


@dataclass
class FairShareResult:
    """The water-filling's answer: each queue's deserved and how many rounds it took."""

    deserved: dict[str, Resource]
    #: rounds run; 0 when the total weight was 0 from the start.
    rounds: int
    #: the round in which each queue became met (absent: never met, e.g. the loop ran out of resources).
    met_in_round: dict[str, int]


def diff(new: Resource, old: Resource) -> tuple[Resource, Resource]:
    """Volcano's `Resource.Diff(old, Zero)`: the per-dimension increase and decrease from old to new."""
    inc, dec = Resource(), Resource()
    for name in {*new.names(), *old.names()}:
        delta = new.get(name) - old.get(name)
        if delta > 0:
            inc.set(name, delta)
        elif delta < 0:
            dec.set(name, -delta)
    return inc, dec


def water_fill(total: Resource, queues: Iterable[FairShareQueue], *, max_rounds: int = MAX_ROUNDS) -> FairShareResult:
    """Compute every queue's deserved from the cluster total. Inputs are not modified.

    Queues are visited in name order. Within a round the visiting order cannot change any queue's
    result (all of them read the same `remaining`); a fixed order also fixes the floating-point sums of
    the increases, so the outcome is bit-for-bit reproducible.
    """
    qs = sorted(queues, key=lambda q: q.name)
    if len({q.name for q in qs}) != len(qs):
        raise InternalError("water_fill: duplicate queue names")
    deserved = {q.name: Resource() for q in qs}
    met: dict[str, int] = {}
    remaining = total.clone()
    rounds = 0
    while True:
        total_weight = sum(q.weight for q in qs if q.name not in met)
        if total_weight == 0:
            break
        rounds += 1
        if rounds > max_rounds:
            raise InternalError(f"proportion: deserved did not converge after {max_rounds} rounds")
        old_remaining = remaining.clone()
        increased, decreased = Resource(), Resource()
        for q in qs:
            if q.name in met:
                continue
            old = deserved[q.name]
            d = old.clone().add(remaining.clone().multi(q.weight / total_weight))
            if q.real_capability is not None:
                # a dimension realCapability does not list stays as it is
                d.min_dimension_resource(q.real_capability, "infinity")
            # a scalar the queue does not request is not deserved at all
            d.min_dimension_resource(q.request, "zero")
            if q.request.less_equal(d, "zero") or d.equal(old):
                met[q.name] = rounds
            d = Resource.max_of(d, q.guarantee)
            inc, dec = diff(d, old)
            increased.add(inc)
            decreased.add(dec)
            deserved[q.name] = d
        remaining = remaining.add(decreased).exceeded_part(increased)
        if remaining.is_empty() or remaining.equal(old_remaining):
            break
    return FairShareResult(deserved=deserved, rounds=rounds, met_in_round=met)


__all__ = ["MAX_ROUNDS", "FairShareQueue", "FairShareResult", "diff", "water_fill"]
