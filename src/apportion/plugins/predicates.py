"""predicates: kube-scheduler's resource-independent filters, as Volcano runs them (semantics guide §6.5).

Extension points: pre-predicate, predicate, simulate predicate, and an allocate/deallocate event
handler that keeps the node view (pods per node) current.

Filters, in Volcano's order (`plugins/predicates/predicates.go`, `Predicate`):

1. pod count: `pods` allocatable <= pods in the node view -> Unschedulable (eviction could fix it);
2. NodeUnschedulable: `spec.unschedulable` without a toleration of
   `node.kubernetes.io/unschedulable:NoSchedule` -> UnschedulableAndUnresolvable;
3. NodeAffinity (`predicate.NodeAffinityEnable`): `spec.nodeSelector` and the required node affinity
   -> UnschedulableAndUnresolvable;
4. TaintToleration (`predicate.TaintTolerationEnable`): an untolerated NoSchedule/NoExecute taint
   -> UnschedulableAndUnresolvable.

Filters 2-4 are Volcano's "stable" filters: the first UnschedulableAndUnresolvable one stops the
evaluation, so a node reports only that reason (plus the pod count, which comes first and does not stop
it). NodePorts, InterPodAffinity, volume limits, VolumeZone, PodTopologySpread and VolumeBinding read
inputs the snapshot contract does not carry; their switches are read (so a wrong type is reported) and
they always pass.

Hot path: node labels, taints and `unschedulable` are static for the session, so filters 2-4 are
evaluated once per *signature* of a pod's (nodeSelector, required terms, tolerations) into a boolean mask
over every node; each call combines that mask with the live pod-count array for the candidate rows.
A signature reads only the node index and the two switches, so a caller that carries a memo (and with
it the node index, `session_node_index`) keeps the built signatures for the next session over the same
index and switches (`CARRY_SIGNATURES`).
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

import numpy as np

from apportion.cluster.model import TaskInfo
from apportion.framework import extension as ep
from apportion.framework.interface import NodeFilter, Plugin
from apportion.framework.placement_carry import row_state
from apportion.framework.session import Session
from apportion.lean_dataclass import dataclass
from apportion.plugins.k8s_matching import (
    UNSCHEDULABLE_TAINT,
    required_key,
    selector_key,
    tolerated,
    tolerations_key,
)
from apportion.plugins.k8s_view import session_node_index, session_node_view
from apportion.state import check

REASON_POD_COUNT = "had too many pods (pods allocatable reached)"
REASON_UNSCHEDULABLE = "were unschedulable"
REASON_AFFINITY = "didn't match Pod's node affinity/selector"
REASON_NAME_CONFLICT = "didn't match Pod's node affinity: its required metadata.name terms conflict"

#: `predicate.*Enable` switches without an input in the snapshot contract: read, then inert.
INERT_SWITCHES = (
    "predicate.NodePortsEnable",
    "predicate.PodAffinityEnable",
    "predicate.NodeVolumeLimitsEnable",
    "predicate.VolumeZoneEnable",
    "predicate.PodTopologySpreadEnable",
    "predicate.VolumeBindingEnable",
)


#: the memo's entry: the last session's _Built with the node index and switches it was built over
SIGNATURES_MEMO = "predicates.signatures"
#: keep built signatures for the next session over the same node index and switches (False: the plain
#: path, every session builds its own; the reference the carried path is tested against)
CARRY_SIGNATURES = True


def taint_reason(key: str, value: str) -> str:
    """kube-scheduler's TaintToleration message (the session prefixes "N node(s) ")."""
    return f"had untolerated taint {{{key}: {value}}}"


@dataclass(eq=False)
class _Signature:
    """Filters 2-4 for one constraint signature, over every node of the session. Compared and hashed
    by identity: the object is the placement key's summary of a task's constraints (see `same`)."""

    #: the node passes every stable filter.
    ok: np.ndarray
    #: (reason, node mask) for the failing nodes, each node under the filter that stopped it.
    reasons: list[tuple[str, np.ndarray]] = field(default_factory=list)

    def same(self, other: _Signature) -> bool:
        """Whether two signatures say the same of every node (the self-check of a carried one)."""
        return (np.array_equal(self.ok, other.ok) and len(self.reasons) == len(other.reasons)
                and all(a == c and np.array_equal(b, d) for (a, b), (c, d) in zip(self.reasons, other.reasons)))


@dataclass
class _Built:
    """The signatures and masks built over one node index with one pair of switches (never written to
    once built, only added to)."""

    by_key: dict[Any, _Signature] = field(default_factory=dict)
    unconstrained: _Signature | None = None
    affinity: dict[Any, np.ndarray] = field(default_factory=dict)
    taints: dict[Any, list[tuple[str, np.ndarray]]] = field(default_factory=dict)


class PredicatesPlugin(Plugin):
    """Volcano's predicates (`plugins/predicates/predicates.go`): the kube-scheduler filters a node must pass."""

    name = "predicates"

    def on_session_open(self, ssn: Session) -> None:
        """Read which filters are on and register the predicate, pre-predicate and simulate predicate."""
        self.ssn = ssn
        args = self.arguments
        self.node_affinity_enable = args.get_bool("predicate.NodeAffinityEnable", True)
        self.taint_toleration_enable = args.get_bool("predicate.TaintTolerationEnable", True)
        for key in INERT_SWITCHES:
            args.get_bool(key, True)
        # An equivalence cache changes speed, not results; the signature cache below plays its role.
        args.get_bool("predicate.CacheEnable", False)

        self.index = session_node_index(ssn)
        self.view = session_node_view(ssn)
        self.max_pods = np.asarray(ssn.table.max_pods, dtype=np.float64)
        self._by_uid: dict[str, _Signature] = {}
        self._built, self._carried = self._built_for(ssn)
        #: whether a carried signature is compared with one built afresh (the self-check), read once per
        #: session: `_signature` is asked for every task a session looks at
        self._check_carried_now = self._carried and check.enabled()

        ssn.add_fn(ep.PRE_PREDICATE, self.name, self.pre_predicate)
        ssn.add_fn(ep.PREDICATE, self.name, self.predicate)
        ssn.add_fn(ep.SIMULATE_PREDICATE, self.name, self.simulate_predicate)
        # A node's answer is its pod count plus the signature's mask: node-local. Tasks sharing a
        # signature share the _Signature object, so the object (equal to itself alone) is the key; a
        # key carried to a later session (framework/placement_carry.py) keeps it alive
        ssn.add_node_local_key(self.name, self._signature, self.predicate_row)
        row_state(ssn.placement, self.name, (self.view.count,))  # (and max_pods, fixed for the nodes)

    # ------------------------------------------------------------------ signatures
    def _built_for(self, ssn: Session) -> tuple[_Built, bool]:
        """The signatures built so far over this session's node index and switches: the memo's when
        the last session had the same index object and switches, else new ones; and whether carried."""
        memo = ssn.memo if CARRY_SIGNATURES else None
        if memo is None:
            return _Built(), False
        switches = (self.node_affinity_enable, self.taint_toleration_enable)
        held = memo.get(SIGNATURES_MEMO)
        if held is not None and held[0] is self.index and held[1] == switches:
            return held[2], True
        built = _Built()
        memo[SIGNATURES_MEMO] = (self.index, switches, built)
        return built, False

    def _signature(self, task: TaskInfo) -> _Signature:
        sig = self._by_uid.get(task.uid)
        if sig is not None:
            return sig
        if not task.node_selector and task.required_terms is None and not task.tolerations:
            # most pods: no constraint. Their key below is ((), None), (), False: looked up once
            built = self._built
            sig = built.unconstrained
            if sig is None:
                sig = built.unconstrained = self._signature_of(task)
            elif self._check_carried_now:
                self._check_carried(task, sig)
            self._by_uid[task.uid] = sig
            return sig
        sig = self._by_uid[task.uid] = self._signature_of(task)
        return sig

    def _signature_of(self, task: TaskInfo) -> _Signature:
        aff_key = (selector_key(task.node_selector), required_key(task.required_terms))
        tol_key = tolerations_key(task.tolerations)
        unsched_ok = tolerated(UNSCHEDULABLE_TAINT, task.tolerations)
        key = (aff_key, tol_key, unsched_ok)
        by_key = self._built.by_key
        sig = by_key.get(key)
        if sig is None:
            sig = self._build(task, aff_key, tol_key, unsched_ok)
            by_key[key] = sig
        elif self._check_carried_now:
            self._check_carried(task, sig)
        return sig

    def _check_carried(self, task: TaskInfo, sig: _Signature) -> None:
        """Under the self-check, a signature carried from an earlier session against one built afresh."""
        aff_key = (selector_key(task.node_selector), required_key(task.required_terms))
        fresh = _Built()
        held, self._built = self._built, fresh
        try:
            rebuilt = self._build(task, aff_key, tolerations_key(task.tolerations),
                                  tolerated(UNSCHEDULABLE_TAINT, task.tolerations))
        finally:
            self._built = held
        if not rebuilt.same(sig):
            raise check.StateCheckError(f"{check.ENV}: predicates' signature of task {task.key} carried from "
                                        "an earlier session differs from one built for this session")

    def _build(self, task: TaskInfo, aff_key: Any, tol_key: Any, unsched_ok: bool) -> _Signature:
        n = self.index.n
        live = np.ones(n, dtype=bool)  # nodes not yet stopped by an unresolvable filter
        reasons: list[tuple[str, np.ndarray]] = []

        if not unsched_ok:
            fail = self.index.unschedulable & live
            if fail.any():
                reasons.append((REASON_UNSCHEDULABLE, fail))
                live &= ~fail

        if self.node_affinity_enable:
            match = self._built.affinity.get(aff_key)
            if match is None:
                match = self.index.required_mask(task.node_selector, task.required_terms)
                self._built.affinity[aff_key] = match
            fail = ~match & live
            if fail.any():
                reasons.append((REASON_AFFINITY, fail))
                live &= ~fail

        if self.taint_toleration_enable:
            by_taint = self._built.taints.get(tol_key)
            if by_taint is None:
                by_taint = [
                    (taint_reason(t.key, t.value), m) for t, m in self.index.untolerated_taints(task.tolerations)
                ]
                self._built.taints[tol_key] = by_taint
            for text, mask in by_taint:
                fail = mask & live
                if fail.any():
                    reasons.append((text, fail))
            for _, mask in by_taint:
                live &= ~mask
        return _Signature(ok=live, reasons=reasons)

    # ------------------------------------------------------------------ extension points
    def pre_predicate(self, task: TaskInfo) -> str | None:
        """PrePredicateFn: the filters' pre-filter steps.

        Only NodeAffinity's has an effect here: required terms that all pin `metadata.name` with no name
        in common reject the pod outright. The restartable-init-container check applies only with the
        SidecarContainers feature off; apportion treats the feature as on (its default since Kubernetes
        1.29), so it always passes.
        """
        if self.node_affinity_enable and self.index.name_conflict(task.required_terms):
            return REASON_NAME_CONFLICT
        return None

    def predicate(self, task: TaskInfo, rows: np.ndarray) -> NodeFilter:
        """PredicateFn over candidate rows: pod count (Unschedulable), then the stable filters (unresolvable)."""
        sig = self._signature(task)
        static_ok = sig.ok[rows]
        # Pod count is checked first and is plain Unschedulable: evicting a pod can fix it.
        full = self.max_pods[rows] <= self.view.count[rows]
        ok = static_ok & ~full
        reasons: list[tuple[str, np.ndarray]] = []
        if full.any():
            reasons.append((REASON_POD_COUNT, full))
        for text, mask in sig.reasons:
            m = mask[rows]
            if m.any():
                reasons.append((text, m))
        return NodeFilter(ok=ok, unresolvable=~static_ok, reasons=reasons)

    def predicate_row(self, task: TaskInfo, row: int) -> tuple[bool, bool]:
        """predicate(task, [row]) as (passes, unresolvable), without arrays (the placement cache's refresh)."""
        static_ok = bool(self._signature(task).ok[row])
        return static_ok and not self.max_pods[row] <= self.view.count[row], not static_ok

    def simulate_predicate(self, task: TaskInfo, row: int, state: dict[str, Any]) -> str | None:
        """SimulatePredicateFn for topology-aware preemption: the stable filters on one node.

        Volcano's version checks inter-pod affinity and topology spread, which have no inputs here; the
        stable filters are re-run instead so a caller that skipped the preempt predicate is still safe.
        The pod count is not re-checked: the simulated evictions are not in the node view.
        """
        sig = self._signature(task)
        if sig.ok[row]:
            return None
        for text, mask in sig.reasons:
            if mask[row]:
                return f"node {self.ssn.nodes[row].name} {text}"
        return f"node {self.ssn.nodes[row].name} failed the predicates"
