"""capacity's per-queue state: realCapability and its terms, the queue attributes, the simulation copy.

Follows `plugins/capacity/capacity.go` (`queueAttr`, `capacityState`, `updateQueueAttrShare`,
`getQueueLevel`, `queueAncestorAtDepth`) and the realCapability rule of the semantics guide §6.10-6.11:
the same formula flat (basis: the cluster total) and in the tree (basis: the parent's realCapability).
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any

from apportion.lean_dataclass import dataclass
from apportion.plugins import queue_common as qc
from apportion.resources import CPU, MEMORY, MIN_RESOURCE, PODS, UNLIMITED, Resource, format_amount

GUARANTEE_ENABLE = "capacity.GuaranteeEnable"
ELASTIC_ENABLE = "capacity.ElasticEnable"
ROOT_CAPABILITY = "capacity.rootCapability"
ANCESTOR_RECLAIM_LEVEL = "ancestorReclaimLevel"
#: the key of the plugin's snapshot in a task's cycle state (Volcano's capacityStateKey).
STATE_KEY = "capacity"


# ===================================================================== realCapability
@dataclass
class RealCapabilityTerms:
    """The two terms of realCapability = min(capability, ExceededPart(basis, Σ guarantees) + guarantee).

    `basis` is the cluster total (flat) or the parent's realCapability (tree); `sum_guarantee` is the
    guarantee of every queue (flat) or of every child of the parent (tree). Kept so that `apportion quota`
    can say which term won on each dimension.
    """

    basis_from: str
    basis: Resource
    sum_guarantee: Resource
    guarantee: Resource
    capability: Resource | None
    #: capability dimensions inherited from the parent (tree mode), for the explainer.
    inherited: frozenset[str] = frozenset()

    def headroom(self) -> Resource:
        """The guarantee term: what is left of the basis after every guarantee, plus this queue's own."""
        return self.basis.exceeded_part(self.sum_guarantee).add(self.guarantee)

    def value(self) -> Resource:
        """realCapability from these terms."""
        return real_capability(self.basis, self.sum_guarantee, self.guarantee, self.capability)

    def why(self) -> dict[str, dict[str, Any]]:
        """Per dimension of realCapability: both terms (internal units) and which one won."""
        head = self.headroom()
        real = self.value()
        out: dict[str, dict[str, Any]] = {}
        for n in real.names():
            cap = self.capability.get(n) if self.capability is not None and self.capability.has(n) else None
            if cap is not None and cap == UNLIMITED:
                cap = None  # an unset cpu/memory capability is "no limit", not a term
            h = head.get(n)
            if cap is None or h < cap:
                won = "headroom"
            elif cap < h:
                won = "capability"
            else:
                won = "both"
            out[n] = {
                "value": real.get(n),
                "capability": cap,
                "basis": self.basis.get(n),
                "sumGuarantee": self.sum_guarantee.get(n),
                "guarantee": self.guarantee.get(n),
                "headroom": h,
                "won": won,
                "inherited": n in self.inherited,
            }
        return out


def real_capability(basis: Resource, sum_guarantee: Resource, guarantee: Resource,
                    capability: Resource | None) -> Resource:
    """min(capability, ExceededPart(basis, Σ guarantees) + guarantee); dimensions the capability does
    not list keep the guarantee term (MinDimensionResource, mode Infinity). Same formula flat and tree."""
    return qc.real_capability_flat(basis, sum_guarantee, guarantee, capability)


# ===================================================================== per-queue attributes
@dataclass
class QueueAttr:
    """Volcano's queueAttr: what capacity knows about one queue during the session."""

    name: str
    deserved: Resource
    guarantee: Resource
    #: None in flat mode when spec.capability is empty; in tree mode always set (inherited).
    capability: Resource | None
    real_capability: Resource | None = None
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    inqueue: Resource = field(default_factory=Resource)
    elastic: Resource = field(default_factory=Resource)
    share: float = 0.0
    #: tree mode: the parent's name ("" for root and in flat mode), ancestors root first, children by name.
    parent: str = ""
    ancestors: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    terms: RealCapabilityTerms | None = None
    #: tree mode: the capability dimensions taken from the parent (unset in the Queue).
    inherited: set[str] = field(default_factory=set)

    def is_leaf(self) -> bool:
        """No child queues (flat mode: always)."""
        return not self.children

    def update_share(self) -> None:
        """updateQueueAttrShare: a best-effort queue (deserved empty, pods ignored) has share 1."""
        self.share = 1.0 if self.deserved.is_empty() else qc.queue_share(self.allocated, self.deserved)

    def own_copy(self) -> QueueAttr:
        """A copy whose accounting (allocated, request, inqueue, elastic) is its own; the limits and links,
        which no session changes, are shared."""
        a = QueueAttr.__new__(QueueAttr)
        d = a.__dict__
        d.update(self.__dict__)
        d["allocated"], d["request"] = self.allocated.clone(), self.request.clone()
        d["inqueue"], d["elastic"] = self.inqueue.clone(), self.elastic.clone()
        return a

    def clone(self) -> QueueAttr:
        """A copy for simulation: the accounting is copied; the limits are fixed for the session and shared."""
        return replace(self, allocated=self.allocated.clone(), inqueue=self.inqueue.clone(),
                       ancestors=list(self.ancestors), children=list(self.children))


@dataclass
class CapacityState:
    """capacityState: the per-task snapshot of every queue's attributes that the simulate points edit."""

    attrs: dict[str, QueueAttr]

    def clone(self) -> CapacityState:
        """A copy whose accounting can change independently."""
        return CapacityState({n: a.clone() for n, a in self.attrs.items()})



def queue_level(l: QueueAttr, r: QueueAttr) -> int:
    """getQueueLevel: the index of the deepest common entry of the two ancestor lists."""
    level = 0
    for i in range(min(len(l.ancestors), len(r.ancestors))):
        if l.ancestors[i] != r.ancestors[i]:
            return level
        level = i
    return level


def ancestor_at_depth(attr: QueueAttr, depth: int) -> str | None:
    """queueAncestorAtDepth: 1 = the parent, 2 = the grandparent, ...; None above the root."""
    if depth <= 0 or len(attr.ancestors) < depth:
        return None
    return attr.ancestors[len(attr.ancestors) - depth]


# ===================================================================== small helpers
def _adds_anything(r: Resource) -> bool:
    """Whether adding r could change a sum: some dimension non-zero, or a scalar listed."""
    return bool(r.cpu or r.memory or r.scalars)


def _less_partly(mine: Resource, sum_children: Resource) -> list[str]:
    """The dimensions (pods aside) on which the children's sum is above the parent's value by Volcano's
    epsilon or more (its LessEqual treats a smaller excess as equal, so it is no over-commit)."""
    names = dict.fromkeys([CPU, MEMORY, *sum_children.scalars])
    return [n for n in names if n != PODS and sum_children.get(n) - mine.get(n) >= MIN_RESOURCE]


def _dims(names: list[str], left: Resource, right: Resource) -> str:
    """`cpu 205.81 > 205.8`: with as many digits as it takes for the two sides to read differently."""
    out = []
    for n in names:
        a, b = left.get(n), right.get(n)
        digits = next((d for d in range(4, 18) if format_amount(n, a, digits=d) != format_amount(n, b, digits=d)), 17)
        out.append(f"{n} {format_amount(n, a, digits=digits)} > {format_amount(n, b, digits=digits)}")
    return ", ".join(out)


def _fmt(r: Resource) -> str:
    parts = [f"{n} {format_amount(n, r.get(n))}" for n in r.names() if n != PODS and (r.get(n) or n in r.scalars)]
    return ", ".join(parts) or "nothing"


def _same_cpu_memory(a: Resource, b: Resource) -> bool:
    return a.cpu == b.cpu and a.memory == b.memory
