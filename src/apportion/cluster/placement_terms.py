"""A pod's placement terms as the session sees them (corev1's tolerations, taints and node-affinity
terms): the TaskInfo and NodeInfo fields that say where a pod may go (cluster/model.py, which
exports them too)."""

from __future__ import annotations

from apportion.lean_dataclass import dataclass


@dataclass
class Toleration:
    """A pod's toleration (corev1.Toleration)."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """corev1 Toleration.ToleratesTaint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False


@dataclass
class Taint:
    """A node's taint (corev1.Taint)."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass
class NodeSelectorRequirement:
    """One requirement of a node selector term: a key, an operator (In, NotIn, Exists, DoesNotExist, Gt,
    Lt) and values."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass
class NodeSelectorTerm:
    """A node selector term: requirements on labels and on fields, all of which must hold."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@dataclass
class PreferredTerm:
    """A preferred node-affinity term and its weight."""

    weight: int
    term: NodeSelectorTerm
