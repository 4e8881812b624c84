"""nodeorder: kube-scheduler's score plugins with Volcano's weights (semantics guide §6.6, §1.4).

Extension point: node order (one vectorised function over the candidate rows; Volcano splits the same
sum between a node-order and a batch-node-order function), plus an allocate/deallocate event handler
that keeps the node view's requested sums current.

Each score plugin yields an integer 0..100 per node, computed with kube-scheduler's integer arithmetic
(on float64 arrays holding integers: `//` on them is exact below 2**53 and cannot overflow on absurd
snapshot quantities), and is multiplied by its weight; the node's score is the sum. A weight of 0 means the plugin is not
created (it contributes nothing and costs nothing).

| plugin | weight key (default) | score |
|---|---|---|
| NodeResourcesFit LeastAllocated, cpu:memory 50:50 | leastrequested.weight (1) | emptier node |
| NodeResourcesFit MostAllocated, cpu:memory 1:1 | mostrequested.weight (0) | fuller node |
| NodeResourcesBalancedAllocation, cpu/memory/nvidia.com/gpu | balancedresource.weight (1) | 100 x (1 - std of usage fractions) |
| NodeAffinity, preferred terms | nodeaffinity.weight (2) | Σ matching term weights, normalised to 0..100 over the candidates |
| TaintToleration | tainttoleration.weight (3) | fewer untolerated PreferNoSchedule taints, normalised and reversed |
| ImageLocality | imagelocality.weight (1) | constant 0: snapshots carry no image lists |
| InterPodAffinity | podaffinity.weight (2) | constant 0: no pod affinity in the contract |
| PodTopologySpread | podtopologyspread.weight (2) | constant 0: no spread constraints or services in the contract |

"requested" for LeastAllocated/MostAllocated is the non-zero request (100m cpu / 200Mi memory for a
container without one) of every pod in the node view plus the pod's own; BalancedAllocation uses actual
requests and skips best-effort pods (kubernetes#129138). The node view includes pods placed earlier in
the session and drops pods evicted in it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from apportion.cluster.model import TaskInfo
from apportion.framework import extension as ep
from apportion.framework.interface import Plugin
from apportion.framework.placement_carry import row_state
from apportion.framework.session import Session
from apportion.lean_dataclass import dataclass
from apportion.plugins.k8s_matching import default_normalize, floor_div, take_rows
from apportion.plugins.k8s_view import (
    NZ_CPU,
    NZ_MEM,
    REQ_CPU,
    REQ_GPU,
    REQ_MEM,
    session_node_index,
    session_node_view,
)
from apportion.resources import GPU
from apportion.state import check

MAX_NODE_SCORE = 100
#: False: the placement cache's one-node score is `node_order_row_reference` (the definition); True: the
#: same steps written out with the session's weights read once (`_row_lean`, docs/semantics.md K58)
LEAN_ROW_SCORE = True
#: the memo's entry: the last session's _NodeFacts with the nodes key they were read for
FACTS_MEMO = "nodeorder.node-facts"
#: the memo's entry: the weights with the arguments they were read from (`NodeOrderPlugin._weights`)
WEIGHTS_MEMO = "nodeorder.weights"
#: False: every session reads the weights from its arguments (the reference); True: a session whose
#: arguments are the last one's takes its weights (docs/semantics.md K58)
KEEP_WEIGHTS = True


@dataclass(frozen=True)
class _NodeFacts:
    """What the score reads of the nodes alone: allocatable in kube-scheduler's integer units
    (MilliValue / Value round up) as exact floats, columns cpu, memory, gpu so a score call gathers its
    rows in one step (and as lists, for one-node answers); whether every node has cpu and memory; whether
    no node has a PreferNoSchedule taint. Never written to once read."""

    alloc: np.ndarray
    alloc_rows: list[list[float]]
    cpu_mem_everywhere: bool
    no_soft_taints: bool
    #: every node has cpu, memory and GPUs allocatable: a GPU request is scored on three fractions everywhere
    three_everywhere: bool

    @classmethod
    def read(cls, ssn: Session) -> _NodeFacts:
        """The facts of the session's nodes."""
        table = ssn.table
        gpu_col = table.col.get(GPU)
        # a node without GPUs has 0 in the GPU column, as it has when there is no such column
        alloc = np.stack([
            np.ceil(table.allocatable[:, table.col["cpu"]]),
            np.ceil(table.allocatable[:, table.col["memory"]]),
            table.allocatable[:, gpu_col] if gpu_col is not None else np.zeros(len(ssn.nodes)),
        ], axis=1)
        no_soft = not any(t.effect == "PreferNoSchedule" for nd in ssn.nodes for t in nd.taints)
        return cls(alloc, alloc.tolist(), bool(np.all(alloc[:, :2] > 0)), no_soft, bool(np.all(alloc > 0)))


def _node_facts(ssn: Session) -> _NodeFacts:
    """The nodes' facts, kept in the memo while the nodes are those of the last snapshot."""
    key = ssn.snapshot.nodes_key if ssn.memo is not None else None
    held = ssn.memo.get(FACTS_MEMO) if ssn.memo is not None and key is not None else None
    if held is not None and held[0] == key:
        facts: _NodeFacts = held[1]
        if check.enabled():
            fresh = _NodeFacts.read(ssn)
            if not (np.array_equal(fresh.alloc, facts.alloc) and fresh.alloc_rows == facts.alloc_rows
                    and (fresh.cpu_mem_everywhere, fresh.no_soft_taints, fresh.three_everywhere)
                    == (facts.cpu_mem_everywhere, facts.no_soft_taints, facts.three_everywhere)):
                raise check.StateCheckError(f"{check.ENV}: nodeorder's node facts carried from the last "
                                            "session differ from this session's nodes")
        return facts
    facts = _NodeFacts.read(ssn)
    if key is not None and ssn.memo is not None:
        ssn.memo[FACTS_MEMO] = (key, facts)
    return facts


@dataclass(frozen=True)
class Weights:
    """calculateWeight (`plugins/nodeorder/nodeorder.go`): integer weights, Volcano's defaults."""

    least_requested: int = 1
    most_requested: int = 0
    balanced_resource: int = 1
    node_affinity: int = 2
    pod_affinity: int = 2
    taint_toleration: int = 3
    image_locality: int = 1
    pod_topology_spread: int = 2


def least_requested(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """leastRequestedScore: ((capacity - requested) x 100) / capacity, 0 when over capacity."""
    safe = np.where(capacity == 0, 1, capacity)
    score = ((capacity - requested) * MAX_NODE_SCORE) // safe
    return np.where((capacity == 0) | (requested > capacity), 0, score)


def most_requested(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """mostRequestedScore: (min(requested, capacity) x 100) / capacity."""
    safe = np.where(capacity == 0, 1, capacity)
    score = (np.minimum(requested, capacity) * MAX_NODE_SCORE) // safe
    return np.where(capacity == 0, 0, score)


def weighted_resource_score(scores: list[tuple[np.ndarray, np.ndarray, int]]) -> np.ndarray:
    """The Fit scorers' combination: Σ score x weight / Σ weight over resources the node has (alloc > 0)."""
    total = np.zeros_like(scores[0][0])
    weight_sum = np.zeros_like(scores[0][0])
    for score, capacity, weight in scores:
        present = capacity > 0
        total = total + np.where(present, score * weight, 0)
        weight_sum = weight_sum + np.where(present, weight, 0)
    return np.where(weight_sum == 0, 0, total // np.where(weight_sum == 0, 1, weight_sum))


def balanced_score(fractions: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """balancedResourceScorer over [rows, k] usage fractions, `valid` marking the resources scored.

    Fractions are capped at 1. Two resources: std = |f0 - f1| / 2; more: the population standard
    deviation, summed in resource order as Go does; fewer: 0. Score = int64((1 - std) x 100).
    """
    f = np.minimum(fractions, 1.0)
    k = valid.sum(axis=1)
    std = np.zeros(len(f))
    # Exactly two valid: |a - b| / 2 equals (max - min) / 2 bit for bit.
    hi = np.where(valid, f, -np.inf).max(axis=1) if f.shape[1] else np.zeros(len(f))
    lo = np.where(valid, f, np.inf).min(axis=1) if f.shape[1] else np.zeros(len(f))
    two = k == 2
    std[two] = (hi[two] - lo[two]) / 2
    more = k > 2
    if more.any():
        fm, vm = f[more], valid[more]
        total = np.zeros(len(fm))
        for j in range(f.shape[1]):
            total = total + np.where(vm[:, j], fm[:, j], 0.0)
        mean = total / k[more]
        acc = np.zeros(len(fm))
        for j in range(f.shape[1]):
            d = fm[:, j] - mean
            acc = acc + np.where(vm[:, j], d * d, 0.0)
        std[more] = np.sqrt(acc / k[more])
    return np.trunc((1 - std) * float(MAX_NODE_SCORE))


def _std3(f0: float, f1: float, f2: float) -> float:
    """balanced_score's population standard deviation of three capped fractions, in plain floats: the
    array code's sum from 0.0 in resource order, its mean, its sum of squares from 0.0 in the same
    order, and a correctly rounded square root (as np.sqrt), so the same value bit for bit."""
    mean = (0.0 + f0 + f1 + f2) / 3
    d0, d1, d2 = f0 - mean, f1 - mean, f2 - mean
    return math.sqrt((0.0 + d0 * d0 + d1 * d1 + d2 * d2) / 3)


def _floor_div(a: float, b: float) -> float:
    """floor_div on one pair of floats (the same two steps, so the same result)."""
    q = float(math.floor(a / b))
    if q * b > a:
        q -= 1.0
    return q


class NodeOrderPlugin(Plugin):
    """Volcano's nodeorder (`plugins/nodeorder/nodeorder.go`): the weighted kube-scheduler node scores."""

    name = "nodeorder"

    def on_session_open(self, ssn: Session) -> None:
        """Read the score weights and register the node-order function."""
        self.ssn = ssn
        self.w = self._weights()
        facts = _node_facts(ssn)
        #: allocatable in kube-scheduler's integer units, columns cpu, memory, gpu (see _NodeFacts)
        self.alloc = facts.alloc
        #: every node has cpu and memory allocatable: the common case, scored without per-node branches.
        self.cpu_mem_everywhere = facts.cpu_mem_everywhere
        self.three_everywhere = facts.three_everywhere
        self.index = session_node_index(ssn)
        self.view = session_node_view(ssn)
        self._affinity: dict[Any, np.ndarray] = {}
        self._prefer_taints: dict[Any, np.ndarray] = {}
        #: no node has a PreferNoSchedule taint: TaintToleration is 100 everywhere (reversed, max 0).
        self.no_soft_taints = facts.no_soft_taints
        self._alloc_rows: list[list[float]] = facts.alloc_rows
        w = self.w
        #: what `_row_lean` reads of the weights, when the session's terms are the plain-float ones (every
        #: node with cpu and memory, no MostAllocated, TaintToleration constant): (LeastAllocated's weight,
        #: BalancedAllocation's, TaintToleration's, whether preferred affinity terms are weighted); None else
        self._row_plain: tuple[int, int, int, bool] | None = (
            (w.least_requested, w.balanced_resource, w.taint_toleration, bool(w.node_affinity))
            if (self.cpu_mem_everywhere and not w.most_requested and not (w.taint_toleration and not self.no_soft_taints))
            else None)
        ssn.add_fn(ep.NODE_ORDER, self.name, self.node_order)
        ssn.add_node_local_key(self.name, self.placement_key, self.node_order_row)
        # a keyed score reads of a node, besides what is fixed for the nodes, the node view's sums alone
        row_state(ssn.placement, self.name, (self.view.sums,))

    def _weights(self) -> Weights:
        """The score weights from the arguments; with `KEEP_WEIGHTS`, kept in the memo while the arguments
        are the same mapping holding the same keys, value types and values (a forecast's sessions: one
        conf object), when reading them warned of nothing (a warning is the session's, made again)."""
        a = self.arguments
        raw = a.raw
        memo = self.ssn.memo if KEEP_WEIGHTS else None
        held = memo.get(WEIGHTS_MEMO) if memo is not None else None
        items = tuple((k, type(v), v) for k, v in raw.items()) if memo is not None else ()
        if held is not None and held[0] is raw and held[1] == items:
            w: Weights = held[2]
            if check.enabled() and w != self._read_weights():
                raise check.StateCheckError(f"{check.ENV}: nodeorder's weights kept in the memo differ from "
                                            "the arguments'")
            return w
        warned = len(a.warnings)
        w = self._read_weights()
        if memo is not None and len(a.warnings) == warned:
            memo[WEIGHTS_MEMO] = (raw, items, w)
        return w

    def _read_weights(self) -> Weights:
        """calculateWeight: each weight from the arguments, Volcano's default where absent or not an integer."""
        a = self.arguments
        d = Weights()
        return Weights(
            least_requested=a.get_int("leastrequested.weight", d.least_requested),
            most_requested=a.get_int("mostrequested.weight", d.most_requested),
            balanced_resource=a.get_int("balancedresource.weight", d.balanced_resource),
            node_affinity=a.get_int("nodeaffinity.weight", d.node_affinity),
            pod_affinity=a.get_int("podaffinity.weight", d.pod_affinity),
            taint_toleration=a.get_int("tainttoleration.weight", d.taint_toleration),
            image_locality=a.get_int("imagelocality.weight", d.image_locality),
            pod_topology_spread=a.get_int("podtopologyspread.weight", d.pod_topology_spread),
        )

    def placement_key(self, task: TaskInfo) -> tuple[float, ...] | None:
        """What the score reads from the task, when every term is node-local; None when a normalised
        term (preferred affinity, soft taints) makes one node's score depend on the others."""
        if self.w.node_affinity and task.preferred_terms:
            return None
        if self.w.taint_toleration and not self.no_soft_taints:
            return None
        return self.view.requests(task)

    # ------------------------------------------------------------------ the score
    def node_order(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """NodeOrderFn + BatchNodeOrderFn: the weighted sum of every created score plugin over `rows`."""
        w = self.w
        total = np.zeros(len(rows))
        if len(rows) == 0:
            return total
        nz_cpu, nz_mem, cpu, mem, gpu = self.view.requests(task)
        # BalancedAllocation skips best-effort pods (no cpu, memory or gpu request at all).
        balanced = bool(w.balanced_resource) and bool(cpu or mem or gpu)
        if w.least_requested or w.most_requested or balanced:
            alloc = take_rows(self.alloc, rows)
            sums = take_rows(self.view.sums, rows)
            cap_cpu, cap_mem = alloc[:, 0], alloc[:, 1]
            if w.least_requested or w.most_requested:
                req_cpu = sums[:, NZ_CPU] + nz_cpu
                req_mem = sums[:, NZ_MEM] + nz_mem
                if w.least_requested:
                    total += w.least_requested * self._least(req_cpu, cap_cpu, req_mem, cap_mem)
                if w.most_requested:
                    total += w.most_requested * self._most(req_cpu, cap_cpu, req_mem, cap_mem)
            if balanced:
                total += w.balanced_resource * self._balanced(alloc, sums, cpu, mem, gpu)
        if w.node_affinity and task.preferred_terms:
            raw = self._preferred(task)[rows]
            total += w.node_affinity * default_normalize(raw, reverse=False)
        if w.taint_toleration:
            if self.no_soft_taints:
                total += w.taint_toleration * float(MAX_NODE_SCORE)
            else:
                counts = self._prefer_no_schedule(task)[rows]
                total += w.taint_toleration * default_normalize(counts, reverse=True)
        # ImageLocality, InterPodAffinity and PodTopologySpread score 0 on every node: no inputs.
        return total

    def node_order_row(self, task: TaskInfo, row: int) -> float:
        """node_order(task, [row])[0] in plain floats, for the placement cache's one-node refresh.

        The common terms (LeastAllocated, BalancedAllocation over two or three resources, constant
        TaintToleration) are the same IEEE operations in the same order as the array code, so the result
        is identical; any other configuration takes the array code on one row. With `LEAN_ROW_SCORE`
        the steps are written out (`_row_lean`); `node_order_row_reference` is the definition.
        """
        if LEAN_ROW_SCORE:
            return self._row_lean(task, row)
        return self.node_order_row_reference(task, row)

    def _row_lean(self, task: TaskInfo, row: int) -> float:
        """`node_order_row_reference` with what the session fixes read once at open (the weights and the
        nodes' facts: `_row_plain`) and the one-pair helpers written in line: `max(x, 0.0)` is x unless
        x < 0.0, `min(x, 1.0)` is x unless x > 1.0 (so -0.0 and NaN come out as they do), and `_floor_div`
        is the same two steps. The same float operations in the same order, hence the same value."""
        nz_cpu, nz_mem, cpu, mem, gpu = self.view.requests(task)
        plain = self._row_plain
        if plain is None or (plain[3] and task.preferred_terms):
            return float(self.node_order(task, np.array([row]))[0])
        least, balanced_w, taint = plain[0], plain[1], plain[2]
        balanced = bool(balanced_w) and bool(cpu or mem or gpu)
        total = 0.0
        cap_cpu, cap_mem, cap_gpu = self._alloc_rows[row]
        if least or balanced:
            sums = self.view.sums[row].tolist()
            if least:
                a = (cap_cpu - (sums[NZ_CPU] + nz_cpu)) * MAX_NODE_SCORE
                if a < 0.0:
                    a = 0.0
                lc = float(math.floor(a / cap_cpu))
                if lc * cap_cpu > a:
                    lc -= 1.0
                a = (cap_mem - (sums[NZ_MEM] + nz_mem)) * MAX_NODE_SCORE
                if a < 0.0:
                    a = 0.0
                lm = float(math.floor(a / cap_mem))
                if lm * cap_mem > a:
                    lm -= 1.0
                a = lc * 50 + lm * 50
                q = float(math.floor(a / 100.0))
                if q * 100.0 > a:
                    q -= 1.0
                total += least * q
            if balanced:
                fc = (sums[REQ_CPU] + cpu) / cap_cpu
                if fc > 1.0:
                    fc = 1.0
                fm = (sums[REQ_MEM] + mem) / cap_mem
                if fm > 1.0:
                    fm = 1.0
                if gpu == 0 or not cap_gpu > 0:
                    std = abs(fc - fm) / 2
                else:
                    std = _std3(fc, fm, min((sums[REQ_GPU] + gpu) / cap_gpu, 1.0))
                total += balanced_w * float(math.trunc((1 - std) * float(MAX_NODE_SCORE)))
        if taint:
            total += taint * float(MAX_NODE_SCORE)
        return total

    def node_order_row_reference(self, task: TaskInfo, row: int) -> float:
        """`node_order_row` step by step (the definition `_row_lean` is tested against)."""
        w = self.w
        nz_cpu, nz_mem, cpu, mem, gpu = self.view.requests(task)
        balanced = bool(w.balanced_resource) and bool(cpu or mem or gpu)
        if (not self.cpu_mem_everywhere or w.most_requested
                or (w.node_affinity and task.preferred_terms) or (w.taint_toleration and not self.no_soft_taints)):
            return float(self.node_order(task, np.array([row]))[0])
        total = 0.0
        cap_cpu, cap_mem, cap_gpu = self._alloc_rows[row]
        if w.least_requested or balanced:
            sums = self.view.sums[row].tolist()
            if w.least_requested:
                lc = _floor_div(max((cap_cpu - (sums[NZ_CPU] + nz_cpu)) * MAX_NODE_SCORE, 0.0), cap_cpu)
                lm = _floor_div(max((cap_mem - (sums[NZ_MEM] + nz_mem)) * MAX_NODE_SCORE, 0.0), cap_mem)
                total += w.least_requested * _floor_div(lc * 50 + lm * 50, 100.0)
            if balanced:
                fc = min((sums[REQ_CPU] + cpu) / cap_cpu, 1.0)
                fm = min((sums[REQ_MEM] + mem) / cap_mem, 1.0)
                if gpu == 0 or not cap_gpu > 0:
                    # two fractions (an extended resource the pod does not request, or the node lacks, is
                    # not scored): std = |f_cpu - f_mem| / 2
                    std = abs(fc - fm) / 2
                else:
                    std = _std3(fc, fm, min((sums[REQ_GPU] + gpu) / cap_gpu, 1.0))
                total += w.balanced_resource * float(math.trunc((1 - std) * float(MAX_NODE_SCORE)))
        if w.taint_toleration:
            total += w.taint_toleration * float(MAX_NODE_SCORE)
        return total

    def _least(self, req_cpu: np.ndarray, cap_cpu: np.ndarray, req_mem: np.ndarray, cap_mem: np.ndarray) -> np.ndarray:
        """LeastAllocated, cpu:memory 50:50."""
        if self.cpu_mem_everywhere:
            # capacity > 0: clamping the numerator at 0 is leastRequestedScore's "0 when over capacity".
            lc = floor_div(np.maximum((cap_cpu - req_cpu) * MAX_NODE_SCORE, 0.0), cap_cpu)
            lm = floor_div(np.maximum((cap_mem - req_mem) * MAX_NODE_SCORE, 0.0), cap_mem)
            return floor_div(lc * 50 + lm * 50, 100.0)
        return weighted_resource_score([
            (least_requested(req_cpu, cap_cpu), cap_cpu, 50),
            (least_requested(req_mem, cap_mem), cap_mem, 50),
        ])

    def _most(self, req_cpu: np.ndarray, cap_cpu: np.ndarray, req_mem: np.ndarray, cap_mem: np.ndarray) -> np.ndarray:
        """MostAllocated, cpu:memory 1:1."""
        return weighted_resource_score([
            (most_requested(req_cpu, cap_cpu), cap_cpu, 1),
            (most_requested(req_mem, cap_mem), cap_mem, 1),
        ])

    def _balanced(self, alloc: np.ndarray, sums: np.ndarray, cpu: float, mem: float, gpu: float) -> np.ndarray:
        """BalancedAllocation over cpu, memory and nvidia.com/gpu, with actual (not non-zero) requests."""
        if gpu == 0 and self.cpu_mem_everywhere:
            # Two fractions on every node: std = |f_cpu - f_mem| / 2.
            fc = np.minimum((sums[:, REQ_CPU] + cpu) / alloc[:, 0], 1.0)
            fm = np.minimum((sums[:, REQ_MEM] + mem) / alloc[:, 1], 1.0)
            return np.trunc((1 - np.abs(fc - fm) / 2) * float(MAX_NODE_SCORE))
        if gpu != 0 and self.three_everywhere:
            # Three fractions on every node: balanced_score's k == 3 arithmetic on columns, the same
            # operations in the same order (sums from 0.0 in resource order), hence the same values.
            fc = np.minimum((sums[:, REQ_CPU] + cpu) / alloc[:, 0], 1.0)
            fm = np.minimum((sums[:, REQ_MEM] + mem) / alloc[:, 1], 1.0)
            fg = np.minimum((sums[:, REQ_GPU] + gpu) / alloc[:, 2], 1.0)
            mean = (0.0 + fc + fm + fg) / 3
            dc, dm, dg = fc - mean, fm - mean, fg - mean
            return np.trunc((1 - np.sqrt((0.0 + dc * dc + dm * dm + dg * dg) / 3)) * float(MAX_NODE_SCORE))
        req = np.stack([sums[:, REQ_CPU] + cpu, sums[:, REQ_MEM] + mem, sums[:, REQ_GPU] + gpu], axis=1)
        valid = alloc > 0
        # An extended resource the pod does not request is not scored (calculateResourceAllocatableRequest).
        if gpu == 0:
            valid[:, 2] = False
        fractions = req / np.where(valid, alloc, 1.0)
        return balanced_score(fractions, valid)

    def _preferred(self, task: TaskInfo) -> np.ndarray:
        key = tuple(
            (p.weight, (tuple((r.key, r.operator, r.values) for r in p.term.match_expressions),
                        tuple((r.key, r.operator, r.values) for r in p.term.match_fields)))
            for p in task.preferred_terms
        )
        s = self._affinity.get(key)
        if s is None:
            s = self.index.preferred_scores(task.preferred_terms)
            self._affinity[key] = s
        return s

    def _prefer_no_schedule(self, task: TaskInfo) -> np.ndarray:
        key = tuple((t.key, t.operator, t.value, t.effect) for t in task.tolerations)
        c = self._prefer_taints.get(key)
        if c is None:
            c = self.index.prefer_no_schedule_counts(task.tolerations)
            self._prefer_taints[key] = c
        return c
