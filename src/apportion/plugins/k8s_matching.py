"""kube-scheduler's node matching, vectorised over the session's nodes (the node view is in k8s_view.py).

Used by the `predicates` and `nodeorder` plugins:

- `NodeIndex` answers "which nodes match this nodeSelector / node-selector term / toleration set" as a
  boolean mask over every node at once. Node labels, taints and `spec.unschedulable` do not change
  during a session, so the plugins cache these masks per *signature* of a pod's constraints; the index
  itself caches per label key, per distinct label value and per distinct taint list, so even the first
  evaluation of a signature costs a few numpy operations rather than a Python loop over nodes.

Matching follows `k8s.io/component-helpers/scheduling/corev1/nodeaffinity` and `corev1` toleration rules:

- a term with neither matchExpressions nor matchFields matches no node;
- a term with an invalid requirement (In/NotIn without values, Exists/DoesNotExist with values, Gt/Lt
  without exactly one integer value, a matchFields key other than `metadata.name`, a matchFields
  requirement without exactly one value or with an operator other than In/NotIn) matches no node, and
  the other terms are still evaluated;
- NotIn and DoesNotExist match a node without the label; Gt/Lt need the label and an int64 value on it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import field

import numpy as np

from apportion.cluster.model import (
    NodeInfo,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredTerm,
    Taint,
    Toleration,
)
from apportion.lean_dataclass import dataclass

#: the only field a node selector's matchFields may name.
NODE_NAME_FIELD = "metadata.name"
#: the taint kube-scheduler's NodeUnschedulable filter looks for a toleration of.
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", value="", effect="NoSchedule")

_INT64_RE = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# Hashable forms of a pod's constraints, used as cache keys.
ReqKey = tuple[str, str, tuple[str, ...]]
TermKey = tuple[tuple[ReqKey, ...], tuple[ReqKey, ...]]
TolKey = tuple[tuple[str, str, str, str], ...]


def parse_int64(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): optional sign, decimal digits, int64 range; else None."""
    if not _INT64_RE.match(text):
        return None
    v = int(text)
    return v if _INT64_MIN <= v <= _INT64_MAX else None


def requirement_key(r: NodeSelectorRequirement) -> ReqKey:
    return (r.key, r.operator, tuple(r.values))


def term_key(t: NodeSelectorTerm) -> TermKey:
    """A hashable summary of a node selector term (the placement cache's key)."""
    return (tuple(requirement_key(r) for r in t.match_expressions), tuple(requirement_key(r) for r in t.match_fields))


def selector_key(selector: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """A hashable summary of a nodeSelector."""
    return tuple(sorted(selector.items()))


def required_key(terms: tuple[NodeSelectorTerm, ...] | None) -> tuple[TermKey, ...] | None:
    """A hashable summary of required node affinity (None: none)."""
    return None if terms is None else tuple(term_key(t) for t in terms)


def tolerations_key(tolerations: Iterable[Toleration]) -> TolKey:
    """A hashable summary of a pod's tolerations."""
    return tuple((t.key, t.operator, t.value, t.effect) for t in tolerations)


def tolerated(taint: Taint, tolerations: Iterable[Toleration]) -> bool:
    """v1helper.TolerationsTolerateTaint: some toleration tolerates the taint."""
    return any(t.tolerates(taint) for t in tolerations)


def expression_valid(r: NodeSelectorRequirement) -> bool:
    """labels.NewRequirement's value-count rules for a matchExpressions requirement."""
    if r.operator in ("In", "NotIn"):
        return len(r.values) > 0
    if r.operator in ("Exists", "DoesNotExist"):
        return len(r.values) == 0
    if r.operator in ("Gt", "Lt"):
        return len(r.values) == 1 and parse_int64(r.values[0]) is not None
    return False


def field_valid(r: NodeSelectorRequirement) -> bool:
    """nodeSelectorRequirementsAsFieldSelector: metadata.name only, one value, In or NotIn."""
    return r.key == NODE_NAME_FIELD and len(r.values) == 1 and r.operator in ("In", "NotIn")


@dataclass
class _LabelKey:
    """Where one label key is set, the node rows per value, and the int64 reading for Gt/Lt."""

    has: np.ndarray
    rows_by_value: dict[str, np.ndarray]
    ints: np.ndarray | None = None
    int_ok: np.ndarray | None = None


@dataclass
class _TaintGroup:
    """Nodes that share one exact taint list (in node order), with that list."""

    taints: tuple[Taint, ...]
    rows: np.ndarray


@dataclass
class NodeIndex:
    """Static facts of the session's nodes (labels, names, taints, unschedulable) for vectorised matching."""

    nodes: list[NodeInfo]
    _labels: dict[str, _LabelKey] = field(default_factory=dict)
    _names: dict[str, int] = field(default_factory=dict)
    _taint_groups: list[_TaintGroup] = field(default_factory=list)
    unschedulable: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def __post_init__(self) -> None:
        self.n = len(self.nodes)
        self._names = {node.name: i for i, node in enumerate(self.nodes)}
        self.unschedulable = np.array([node.unschedulable for node in self.nodes], dtype=bool)
        groups: dict[tuple[tuple[str, str, str], ...], list[int]] = {}
        first: dict[tuple[tuple[str, str, str], ...], tuple[Taint, ...]] = {}
        for i, node in enumerate(self.nodes):
            k = tuple((t.key, t.value, t.effect) for t in node.taints)
            groups.setdefault(k, []).append(i)
            first.setdefault(k, node.taints)
        self._taint_groups = [
            _TaintGroup(first[k], np.array(rows, dtype=np.int64)) for k, rows in groups.items()
        ]

    def same_nodes(self, nodes: list[NodeInfo]) -> bool:
        """Whether these nodes have the names, labels, taints and schedulability of the index's own."""
        return len(nodes) == self.n and all(
            (a.name, a.labels, a.taints, a.unschedulable) == (b.name, b.labels, b.taints, b.unschedulable)
            for a, b in zip(self.nodes, nodes))

    # ------------------------------------------------------------------ labels
    def _key(self, key: str) -> _LabelKey:
        lk = self._labels.get(key)
        if lk is None:
            has = np.zeros(self.n, dtype=bool)
            rows: dict[str, list[int]] = {}
            for i, node in enumerate(self.nodes):
                v = node.labels.get(key)
                if v is not None:
                    has[i] = True
                    rows.setdefault(v, []).append(i)
            lk = _LabelKey(has, {v: np.array(r, dtype=np.int64) for v, r in rows.items()})
            self._labels[key] = lk
        return lk

    def _eq(self, key: str, values: Iterable[str]) -> np.ndarray:
        lk = self._key(key)
        m = np.zeros(self.n, dtype=bool)
        for v in values:
            rows = lk.rows_by_value.get(v)
            if rows is not None:
                m[rows] = True
        return m

    def _ints(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        lk = self._key(key)
        if lk.ints is None or lk.int_ok is None:
            ints = np.zeros(self.n, dtype=np.int64)
            ok = np.zeros(self.n, dtype=bool)
            for v, rows in lk.rows_by_value.items():
                iv = parse_int64(v)
                if iv is not None:
                    ints[rows] = iv
                    ok[rows] = True
            lk.ints, lk.int_ok = ints, ok
        return lk.ints, lk.int_ok

    def selector_mask(self, selector: dict[str, str]) -> np.ndarray:
        """labels.SelectorFromSet(nodeSelector): every pair present with an equal value."""
        m = np.ones(self.n, dtype=bool)
        for k, v in selector.items():
            m &= self._eq(k, (v,))
        return m

    def expression_mask(self, r: NodeSelectorRequirement) -> np.ndarray:
        """One valid matchExpressions requirement against node labels (labels.Requirement.Matches)."""
        if r.operator == "In":
            return self._eq(r.key, r.values)
        if r.operator == "NotIn":
            return ~self._eq(r.key, r.values)
        if r.operator == "Exists":
            return self._key(r.key).has.copy()
        if r.operator == "DoesNotExist":
            return ~self._key(r.key).has
        ints, ok = self._ints(r.key)
        bound = parse_int64(r.values[0])
        assert bound is not None  # expression_valid checked it
        return ok & (ints > bound) if r.operator == "Gt" else ok & (ints < bound)

    def field_mask(self, r: NodeSelectorRequirement) -> np.ndarray:
        """One valid matchFields requirement against the node name."""
        m = np.zeros(self.n, dtype=bool)
        row = self._names.get(r.values[0])
        if row is not None:
            m[row] = True
        return m if r.operator == "In" else ~m

    def term_mask(self, term: NodeSelectorTerm) -> np.ndarray:
        """A node selector term: all its requirements (ANDed); empty or invalid terms match nothing."""
        if not term.match_expressions and not term.match_fields:
            return np.zeros(self.n, dtype=bool)
        if not all(expression_valid(r) for r in term.match_expressions) or not all(
            field_valid(r) for r in term.match_fields
        ):
            return np.zeros(self.n, dtype=bool)
        m = np.ones(self.n, dtype=bool)
        for r in term.match_expressions:
            m &= self.expression_mask(r)
        for r in term.match_fields:
            m &= self.field_mask(r)
        return m

    def required_mask(self, selector: dict[str, str], terms: tuple[NodeSelectorTerm, ...] | None) -> np.ndarray:
        """RequiredNodeAffinity.Match: nodeSelector AND (any required term; no terms at all = no node)."""
        m = self.selector_mask(selector)
        if terms is not None:
            any_term = np.zeros(self.n, dtype=bool)
            for t in terms:
                any_term |= self.term_mask(t)
            m &= any_term
        return m

    def preferred_scores(self, terms: tuple[PreferredTerm, ...]) -> np.ndarray:
        """PreferredSchedulingTerms.Score: Σ weights of the matching preferred terms (weight 0 skipped)."""
        s = np.zeros(self.n)  # float64 of integers: a snapshot may carry any integer weight
        for p in terms:
            if p.weight != 0:
                s += np.where(self.term_mask(p.term), float(p.weight), 0.0)
        return s

    # ------------------------------------------------------------------ taints
    def untolerated_taints(self, tolerations: tuple[Toleration, ...]) -> list[tuple[Taint, np.ndarray]]:
        """TaintToleration's filter: per node, the first NoSchedule/NoExecute taint not tolerated.

        Returns (taint, node mask) pairs: each failing node appears under its first untolerated taint,
        as FindMatchingUntoleratedTaint reports it.
        """
        out: dict[tuple[str, str, str], tuple[Taint, np.ndarray]] = {}
        for g in self._taint_groups:
            for t in g.taints:
                if t.effect in ("NoSchedule", "NoExecute") and not tolerated(t, tolerations):
                    k = (t.key, t.value, t.effect)
                    if k not in out:
                        out[k] = (t, np.zeros(self.n, dtype=bool))
                    out[k][1][g.rows] = True
                    break
        return [out[k] for k in sorted(out)]

    def prefer_no_schedule_counts(self, tolerations: tuple[Toleration, ...]) -> np.ndarray:
        """countIntolerableTaintsPreferNoSchedule for every node."""
        prefer = tuple(t for t in tolerations if t.effect in ("", "PreferNoSchedule"))
        counts = np.zeros(self.n, dtype=np.int64)
        for g in self._taint_groups:
            c = sum(1 for t in g.taints if t.effect == "PreferNoSchedule" and not tolerated(t, prefer))
            if c:
                counts[g.rows] = c
        return counts

    def name_conflict(self, terms: tuple[NodeSelectorTerm, ...] | None) -> bool:
        """NodeAffinity PreFilter: every required term pins metadata.name (In) and no name satisfies one.

        A term's `metadata.name In` sets are intersected, the terms' sets are united; a term without such
        a requirement leaves every node eligible.
        """
        if not terms:
            return False
        names: set[str] = set()
        for t in terms:
            term_names: set[str] | None = None
            for r in t.match_fields:
                if r.key == NODE_NAME_FIELD and r.operator == "In":
                    s = set(r.values)
                    term_names = s if term_names is None else term_names & s
            if term_names is None:
                return False
            names |= term_names
        return not names


def take_rows(arr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """arr[rows] for sorted, distinct candidate rows; a view without copying when they are every node."""
    n = len(rows)
    if n == len(arr) and (n == 0 or (rows[0] == 0 and rows[-1] == n - 1)):
        return arr
    return arr[rows]


def floor_div(a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    """a // b for non-negative integer-valued floats (b > 0), cheaper than numpy's float `//`
    (benchmarks/README.md).

    The correctly rounded quotient can only err upward onto an integer when the true quotient is just
    below it; the correction step makes the result exact while a and q x b stay below 2**53.
    """
    q = np.floor(a / b)
    q -= q * b > a
    return q


def go_div(a: np.ndarray, b: np.ndarray | float) -> np.ndarray:
    """Go's integer division (truncation toward zero) on integer-valued arrays; numpy's // floors instead."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (np.asarray(b) < 0), -q, q)


def default_normalize(scores: np.ndarray, reverse: bool) -> np.ndarray:
    """helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores) over the candidate nodes."""
    scores = scores.astype(np.float64)
    max_count = float(scores.max()) if len(scores) else 0.0
    if max_count <= 0:
        # Go starts maxCount at 0: an all-zero (or all-negative) list is left as is, or all 100 reversed.
        return np.full(len(scores), 100.0) if reverse else scores
    out = go_div(100.0 * scores, max_count)
    return 100.0 - out if reverse else out


__all__ = [
    "UNSCHEDULABLE_TAINT",
    "NodeIndex",
    "default_normalize",
    "floor_div",
    "go_div",
    "required_key",
    "selector_key",
    "take_rows",
    "tolerated",
    "tolerations_key",
]
