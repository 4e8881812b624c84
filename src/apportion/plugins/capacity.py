"""capacity: queues with a written deserved, a guarantee and a capability, flat or as a tree (§6.10, §6.11).

Follows `plugins/capacity/capacity.go` and the seeds (`seeds/000_*`, design doc `seeds/004_*`). Where the
seeds and current Volcano disagree, the seeds win by default (semantics guide, top section):

- the root of the tree is the cluster total (capability = deserved = realCapability = total); the
  argument `capacity.rootCapability: unlimited` gives current Volcano's root instead;
- an allocate/deallocate event refreshes the share of the leaf *and of every ancestor* (the seed's
  worked example: team-a 0.75 -> 0.917), so the hierarchical queue order stays true within a session;
- the design doc's `capacity.GuaranteeEnable` / `capacity.ElasticEnable` switches (default true) are
  honoured: off, every guarantee counts as empty / no job is elastic.

Reading order: the per-queue attributes, realCapability, the session-open build (flat, then the tree),
then each extension point in the order `OnSessionOpen` registers it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any

from apportion.cluster.model import JobInfo, QueueInfo, TaskInfo
from apportion.cluster.snapshot import ROOT_QUEUE
from apportion.framework import extension as ep
from apportion.framework.interface import Plugin
from apportion.framework.session import EventHandler, Session
from apportion.plugins import queue_common as qc
from apportion.plugins.capacity_picker import TreePicker
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
        return not self.children

    def update_share(self) -> None:
        """updateQueueAttrShare: a best-effort queue (deserved empty, pods ignored) has share 1."""
        self.share = 1.0 if self.deserved.is_empty() else qc.queue_share(self.allocated, self.deserved)

    def clone(self) -> QueueAttr:
        """A copy for simulation: the accounting is copied; the limits are fixed for the session and shared."""
        return replace(self, allocated=self.allocated.clone(), inqueue=self.inqueue.clone(),
                       ancestors=list(self.ancestors), children=list(self.children))


@dataclass
class CapacityState:
    """capacityState: the per-task snapshot of every queue's attributes that the simulate points edit."""

    attrs: dict[str, QueueAttr]

    def clone(self) -> CapacityState:
        return CapacityState({n: a.clone() for n, a in self.attrs.items()})


TREE_MEMO = "capacity.tree"
QUEUE_KEYS_MEMO = "capacity.queue-keys"


def _res_key(r: Resource) -> tuple[float, float, tuple[tuple[str, float], ...]]:
    # unsorted: equal resources listed in another order only cost a rebuild, never a wrong match
    return r.cpu, r.memory, tuple(r.scalars.items())


@dataclass(frozen=True)
class _Limits:
    """A queue's limits and links in the tree: fixed by the queue specs and the cluster total. Shared by
    every session that takes the tree from the memo, so never modified after the build."""

    deserved: Resource
    guarantee: Resource
    capability: Resource | None
    real_capability: Resource | None
    terms: RealCapabilityTerms | None
    parent: str
    #: the lists and set are shared too: a session never edits a queue's links (QueueAttr.clone copies)
    ancestors: list[str]
    children: list[str]
    inherited: set[str]

    @classmethod
    def of(cls, a: QueueAttr) -> _Limits:
        return cls(a.deserved, a.guarantee, a.capability, a.real_capability, a.terms, a.parent,
                   a.ancestors, a.children, a.inherited)

    @functools.cached_property
    def _fields(self) -> dict[str, Any]:
        # the share of an empty account, as update_share gives it (Share(0, d) is 0; best-effort: 1)
        share = 1.0 if self.deserved.is_empty() else 0.0
        return {"deserved": self.deserved, "guarantee": self.guarantee, "capability": self.capability,
                "real_capability": self.real_capability, "share": share, "parent": self.parent,
                "ancestors": self.ancestors, "children": self.children, "terms": self.terms,
                "inherited": self.inherited}

    def session_attr(self, name: str) -> QueueAttr:
        """The queue's attributes for a new session: these limits, and no accounting yet.

        What QueueAttr(...) builds, filled from one prepared dict: a session makes one per queue, and
        the dataclass constructor was most of that cost with a thousand queues."""
        a = QueueAttr.__new__(QueueAttr)
        d = a.__dict__
        d.update(self._fields)
        z = Resource.zero
        d["name"] = name
        d["allocated"], d["request"], d["inqueue"], d["elastic"] = z(), z(), z(), z()
        return a


@dataclass(frozen=True)
class _TreeMemo:
    inputs: tuple[Any, ...] | None
    limits: dict[str, _Limits]
    warnings: list[str]


def compare_share_with_deserved(l: QueueAttr, r: QueueAttr) -> int:
    """compareShareWithDeserved: lower share first; at equal share a queue with a deserved first."""
    if l.share == r.share:
        lh, rh = not l.deserved.is_empty(), not r.deserved.is_empty()
        if lh == rh:
            return 0
        return -1 if lh else 1
    return -1 if l.share < r.share else 1


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


class CapacityPlugin(Plugin):
    name = "capacity"

    #: set by `apportion quota` to look at a conf that has no capacity entry hierarchically.
    force_hierarchy: bool | None = None

    # ================================================================= session open
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self._pair_plans: dict[tuple[str, str], tuple[int, str, str, bool, bool]] = {}
        #: names of the queues whose real share changed, in order (the tree picker re-keys from it)
        self.share_log: list[str] = []
        args = self.arguments
        self.guarantee_enabled = args.get_bool(GUARANTEE_ENABLE, True)
        self.elastic_enabled = args.get_bool(ELASTIC_ENABLE, True)
        self.ancestor_reclaim_level = args.get_int(ANCESTOR_RECLAIM_LEVEL, 0)
        if self.ancestor_reclaim_level < 0:
            ssn.warnings.append(f"capacity: {ANCESTOR_RECLAIM_LEVEL} should be non-negative, got "
                                f"{self.ancestor_reclaim_level}; 0 used")
            self.ancestor_reclaim_level = 0
        self.root_mode = args.get_str(ROOT_CAPABILITY, "cluster")
        if self.root_mode not in ("cluster", "unlimited"):
            ssn.warnings.append(f"capacity: {ROOT_CAPABILITY}={self.root_mode!r} is neither 'cluster' nor "
                                "'unlimited'; 'cluster' used")
            self.root_mode = "cluster"
        self.hierarchical = (self.force_hierarchy if self.force_hierarchy is not None
                             else ssn.conf.hierarchy_enabled(self.name))
        self.total = ssn.total_resource.clone()
        self.total_guarantee = Resource()
        self.attrs: dict[str, QueueAttr] = {}
        #: why the plugin refuses every queue decision this session (tree mode), or None.
        self.blocked: str | None = None
        #: False when the tree could not be built (cycle, unknown parent, no root).
        self.tree_ok = True
        #: configuration warnings of this plugin (also in ssn.warnings), for `apportion quota`.
        self.config_warnings: list[str] = []

        if self.hierarchical:
            self.build_hierarchical_queue_attrs(ssn)
        else:
            self.build_queue_attrs(ssn)
        if self.blocked:
            ssn.queue_decisions_blocked = (
                f"{ssn.queue_decisions_blocked}; {self.blocked}" if ssn.queue_decisions_blocked else self.blocked
            )

        ssn.add_fn(ep.RECLAIMABLE, self.name, self.reclaimable)
        ssn.add_fn(ep.PREEMPTIVE, self.name, self.preemptive)
        ssn.add_fn(ep.ALLOCATABLE, self.name, self.allocatable)
        ssn.add_fn(ep.JOB_ENQUEUEABLE, self.name, self.job_enqueueable)
        ssn.add_fn(ep.JOB_ENQUEUED, self.name, self.job_enqueued)
        ssn.add_fn(ep.PRE_PREDICATE, self.name, self.pre_predicate)
        ssn.add_fn(ep.SIMULATE_ADD_TASK, self.name, self.simulate_add_task)
        ssn.add_fn(ep.SIMULATE_REMOVE_TASK, self.name, self.simulate_remove_task)
        ssn.add_fn(ep.SIMULATE_ALLOCATABLE, self.name, self.simulate_allocatable)
        # Volcano registers no queue order when the tree is broken (buildHierarchicalQueueAttrs returns early).
        if not self.blocked:
            if self.hierarchical:
                ssn.add_fn(ep.QUEUE_ORDER, self.name, self.hierarchical_queue_order)
                ssn.add_fn(ep.VICTIM_QUEUE_ORDER, self.name, self.victim_queue_order)
                ssn.add_queue_picker(self.name, lambda queues, compare: TreePicker(self, queues, compare))
            else:
                ssn.add_fn(ep.QUEUE_ORDER, self.name, self.queue_order)
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate, deallocate=self.on_deallocate))

    def _warn(self, message: str) -> None:
        text = f"capacity: {message}"
        self.config_warnings.append(text)
        self.ssn.warnings.append(text)

    def _guarantee_of(self, queue: QueueInfo) -> Resource:
        """spec.guarantee.resource, or nothing when the design doc's GuaranteeEnable is off."""
        return queue.guarantee.clone() if self.guarantee_enabled else Resource()

    def _charge_jobs(self, attr: QueueAttr, jobs: list[JobInfo]) -> None:
        """Charge jobs to their queue and (tree mode) every ancestor: allocated, request, inqueue (per
        PodGroup phase, as upstream) and elastic."""
        path = self._path(attr)
        for job in jobs:
            c = qc.job_contribution(job)
            # Adding a resource that is 0 everywhere and lists no scalar changes no bit of a sum that
            # started at +0.0 (no such sum is ever -0.0), and most running jobs have no inqueue and no
            # elastic part: those adds are skipped.
            inqueue = c.inqueue if _adds_anything(c.inqueue) else None
            # design doc: ElasticEnable off -> nothing is elastic
            elastic = c.elastic if self.elastic_enabled and _adds_anything(c.elastic) else None
            for a in path:
                a.allocated.add(c.allocated)
                a.request.add(c.request)
                if inqueue is not None:
                    a.inqueue.add(inqueue)
                if elastic is not None:
                    a.elastic.add(elastic)

    # ----------------------------------------------------------------- flat (buildQueueAttrs)
    def build_queue_attrs(self, ssn: Session) -> None:
        """Flat mode: attributes only for queues that have jobs; totalGuarantee over every queue."""
        for q in sorted(ssn.queues.values(), key=lambda q: q.name):
            self.total_guarantee.add(self._guarantee_of(q))
        jobs_by_queue: dict[str, list[JobInfo]] = {}
        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            if job.queue in ssn.queues:
                jobs_by_queue.setdefault(job.queue, []).append(job)
        for name in sorted(jobs_by_queue):
            attr = self.new_flat_queue_attr(ssn.queues[name])
            self.attrs[name] = attr
            self._charge_jobs(attr, jobs_by_queue[name])
        for attr in self.attrs.values():
            self.finish_flat_queue_attr(attr)

    def new_flat_queue_attr(self, q: QueueInfo) -> QueueAttr:
        """A queue's limits in flat mode: capability (unset cpu/memory unlimited), guarantee, realCapability."""
        guarantee = self._guarantee_of(q)
        capability = qc.capability_of(q.capability, q.capability_set)
        terms = RealCapabilityTerms("cluster total", self.total, self.total_guarantee, guarantee, capability)
        return QueueAttr(name=q.name, deserved=q.deserved.clone(), guarantee=guarantee, capability=capability,
                         real_capability=terms.value(), terms=terms)

    def finish_flat_queue_attr(self, attr: QueueAttr) -> None:
        """deserved: spec.deserved capped by realCapability (unlisted dimensions unchanged), then raised to
        the guarantee; then the share."""
        assert attr.real_capability is not None
        attr.deserved.min_dimension_resource(attr.real_capability, "infinity")
        if self.guarantee_enabled:
            attr.deserved = Resource.max_of(attr.deserved, attr.guarantee)
        attr.update_share()

    # ----------------------------------------------------------------- tree (buildHierarchicalQueueAttrs)
    def build_hierarchical_queue_attrs(self, ssn: Session) -> None:
        """Tree mode: every queue gets attributes; the tree comes from spec.parent (default root).

        The limits and links of the tree depend on the queue specs, the cluster total and two plugin
        arguments, not on jobs. A caller that sessions the same cluster again and again (the simulator)
        passes a memo with its snapshots; the tree is then taken from it while those inputs are unchanged,
        and only the accounting is redone."""
        fingerprint = self._tree_inputs(ssn) if ssn.memo is not None else None
        cached = ssn.memo.get(TREE_MEMO) if ssn.memo is not None else None
        from_memo = cached is not None and cached.inputs == fingerprint
        if from_memo:
            assert cached is not None
            for text in cached.warnings:
                self._warn(text)
            self.attrs = {name: lim.session_attr(name) for name, lim in cached.limits.items()}
        else:
            warned = len(self.config_warnings)
            for name in sorted(ssn.queues):
                q = ssn.queues[name]
                cap = q.capability.clone() if q.capability_set else Resource()
                self.attrs[name] = QueueAttr(name=name, deserved=q.deserved.clone(),
                                             guarantee=self._guarantee_of(q), capability=cap,
                                             real_capability=Resource())
            error = self.build_tree(ssn)
            if error:
                self._tree_failed(ssn, error)
                return
            self.init_root()
            self.check_hierarchical_queue(self.attrs[ROOT_QUEUE])
            if ssn.memo is not None:
                warnings = [w.removeprefix("capacity: ") for w in self.config_warnings[warned:]]
                ssn.memo[TREE_MEMO] = _TreeMemo(fingerprint, {n: _Limits.of(a) for n, a in self.attrs.items()},
                                                warnings)
        non_leaf_jobs: list[JobInfo] = []
        charged: set[str] = set()
        for uid in sorted(self.ssn.jobs):
            job = ssn.jobs[uid]
            attr = self.attrs.get(job.queue)
            if attr is None:
                continue
            charged.add(attr.name)
            if not attr.is_leaf():
                non_leaf_jobs.append(job)
            # Volcano stops building at the first such job; apportion finishes the accounting (it refuses
            # everything all the same) so `apportion quota` and the queue report still show the tree.
            self._charge_jobs(attr, [job])
        if non_leaf_jobs:
            names = ", ".join(f"{j.uid} (queue {j.queue})" for j in non_leaf_jobs[:3])
            more = f" and {len(non_leaf_jobs) - 3} more" if len(non_leaf_jobs) > 3 else ""
            self.blocked = (f"capacity: job {names}{more} sits in a queue that has child queues; jobs may only "
                            f"be submitted to leaf queues, so every queue decision is refused this session")
            for j in non_leaf_jobs:
                ssn.explain(j.uid, f"queue {j.queue} is not a leaf queue (children: "
                                   f"{', '.join(self.attrs[j.queue].children)}); submit the job to a leaf queue")
        if from_memo:
            # session_attr gave every queue the share of an empty account: only charged paths moved
            for name in charged | {a for leaf in charged for a in self.attrs[leaf].ancestors}:
                self.attrs[name].update_share()
        else:
            for attr in self.attrs.values():
                attr.update_share()

    def _tree_failed(self, ssn: Session, error: str) -> None:
        self.tree_ok = False
        self.blocked = f"capacity: the queue hierarchy is invalid: {error}; every queue decision is refused"
        # No tree: plain per-queue accounting only, so the event handlers (which still fire, e.g. for
        # preempt's evictions) have something consistent to update.
        for a in self.attrs.values():
            a.ancestors, a.children, a.parent = [], [], ""
        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            if job.queue in self.attrs:
                self._charge_jobs(self.attrs[job.queue], [job])

    def _tree_inputs(self, ssn: Session) -> tuple[Any, ...]:
        """Everything the tree's limits and links are computed from, by value.

        A queue's part is kept in the memo with the QueueInfo it was read from and reused while the
        snapshot holds that same object: a memo's snapshots replace a queue that changes, never edit
        it in place (see Snapshot.memo)."""
        assert ssn.memo is not None
        known: dict[str, tuple[QueueInfo, tuple[Any, ...]]] = ssn.memo.setdefault(QUEUE_KEYS_MEMO, {})
        keys = []
        for name, q in sorted(ssn.queues.items()):
            entry = known.get(name)
            if entry is None or entry[0] is not q:
                entry = known[name] = (q, (name, q.parent, _res_key(q.deserved), q.capability_set,
                                           _res_key(q.capability), _res_key(q.guarantee)))
            keys.append(entry[1])
        if len(known) > 2 * len(ssn.queues):  # queues come and go (reservations): forget the gone ones
            for name in [n for n in known if n not in ssn.queues]:
                del known[name]
        return self.guarantee_enabled, self.root_mode, _res_key(self.total), tuple(keys)

    def build_tree(self, ssn: Session) -> str | None:
        """updateAncestors for every queue: parent links, children, ancestors; the error text, or None.

        Volcano's visited-set never fires; apportion reports a cycle by naming it (semantics §6.11).
        """
        if ROOT_QUEUE not in ssn.queues:
            return f"the root queue {ROOT_QUEUE!r} does not exist"
        parent_of: dict[str, str] = {}
        for name in sorted(ssn.queues):
            if name == ROOT_QUEUE:
                continue
            parent = ssn.queues[name].parent or ROOT_QUEUE
            if parent not in ssn.queues:
                return f"queue {name} has invalid parent queue {parent} (no such queue)"
            parent_of[name] = parent
        if ssn.queues[ROOT_QUEUE].parent:
            self._warn(f"queue {ROOT_QUEUE} names parent {ssn.queues[ROOT_QUEUE].parent!r}; the root has no "
                       "parent, ignored")
        for name in sorted(parent_of):
            chain = [name]
            cur = name
            while cur != ROOT_QUEUE:
                cur = parent_of[cur]
                if cur in chain:
                    cycle = chain[chain.index(cur):] + [cur]
                    return "cycle detected: " + " -> ".join(cycle)
                chain.append(cur)
        for name in sorted(parent_of):
            attr = self.attrs[name]
            attr.parent = parent_of[name]
            self.attrs[attr.parent].children.append(name)
            chain = []
            cur = name
            while cur != ROOT_QUEUE:
                cur = parent_of[cur]
                chain.append(cur)
            attr.ancestors = list(reversed(chain))
        return None

    def init_root(self) -> None:
        """The seeds' root (default): capability = deserved = realCapability = the cluster total.
        `capacity.rootCapability: unlimited`: Volcano's root, unlimited unless its Queue sets a capability."""
        root = self.attrs[ROOT_QUEUE]
        spec = self.ssn.queues[ROOT_QUEUE]
        if self.root_mode == "cluster":
            for label, written in (("capability", spec.capability), ("deserved", spec.deserved)):
                if not written.is_empty() and not _same_cpu_memory(written, self.total):
                    self._warn(f"root's spec.{label} ({_fmt(written)}) is ignored: the root is the cluster total "
                               f"({_fmt(self.total)}); set {ROOT_CAPABILITY}: unlimited for Volcano's root")
            root.capability = self.total.clone()
            root.deserved = self.total.clone()
            root.real_capability = self.total.clone()
            return
        assert root.capability is not None
        if root.capability.is_empty():
            unlimited = Resource(UNLIMITED, UNLIMITED, {n: UNLIMITED for n in self.total.scalars})
            root.capability = unlimited
        # Keep (§6.11): a partial root capability is taken literally; unlisted dimensions are 0.
        root.real_capability = root.capability.clone()

    def check_hierarchical_queue(self, attr: QueueAttr) -> None:
        """checkHierarchicalQueue, root down: capability inheritance, realCapability, and warnings (never
        failures) when the children ask for more than the parent has."""
        assert attr.capability is not None and attr.real_capability is not None
        children = [self.attrs[c] for c in attr.children]
        total_guarantee = Resource()
        total_deserved = Resource()
        for child in children:
            assert child.capability is not None
            if self.guarantee_enabled:
                child.deserved = Resource.max_of(child.deserved, child.guarantee)
            total_deserved.add(child.deserved)
            total_guarantee.add(child.guarantee)
            # An unset (or <= 0) cpu/memory capability, and every unlisted scalar, is inherited from the parent.
            if child.capability.cpu <= 0:
                child.capability.cpu = attr.capability.cpu
                child.inherited.add(CPU)
            if child.capability.memory <= 0:
                child.capability.memory = attr.capability.memory
                child.inherited.add(MEMORY)
            for n, v in attr.capability.scalars.items():
                if n not in child.capability.scalars:
                    child.capability.scalars[n] = v
                    child.inherited.add(n)
            over = [n for n in child.capability.names()
                    if n != PODS and attr.capability.has(n) and child.capability.get(n) > attr.capability.get(n)]
            if over:
                self._warn(f"queue {child.name}: capability exceeds parent {attr.name}'s on "
                           f"{_dims(over, child.capability, attr.capability)}; its realCapability is limited "
                           "by the parent")
        if attr.name == ROOT_QUEUE:
            attr.guarantee = total_guarantee.clone()
            if self.root_mode == "unlimited":
                attr.deserved = total_deserved.clone()
        for child in children:
            child.terms = RealCapabilityTerms(f"{attr.name}'s realCapability", attr.real_capability.clone(),
                                              total_guarantee.clone(), child.guarantee, child.capability,
                                              frozenset(child.inherited))
            child.real_capability = child.terms.value()
        if children:
            over_d = _less_partly(attr.deserved, total_deserved)
            if over_d:
                self._warn(f"queue {attr.name}: the children's deserved sum to more than its deserved on "
                           f"{_dims(over_d, total_deserved, attr.deserved)}; shares below it are skewed")
            over_g = _less_partly(attr.guarantee, total_guarantee)
            if over_g:
                self._warn(f"queue {attr.name}: the children's guarantees sum to more than its guarantee on "
                           f"{_dims(over_g, total_guarantee, attr.guarantee)}; not every guarantee can be met")
            over_r = _less_partly(attr.real_capability, total_guarantee)
            if over_r:
                self._warn(f"queue {attr.name}: the children's guarantees sum to more than its realCapability "
                           f"on {_dims(over_r, total_guarantee, attr.real_capability)}; a child's "
                           "realCapability may exceed its parent's")
        for child in children:
            self.check_hierarchical_queue(child)

    # ================================================================= helpers for the callbacks
    def _path(self, attr: QueueAttr) -> list[QueueAttr]:
        """The leaf and then its ancestors up to the root (the order the limit checks walk)."""
        return [attr] + [self.attrs[n] for n in reversed(attr.ancestors)]

    def _where(self, leaf: QueueAttr, attr: QueueAttr) -> str:
        """`team-a (parent of training)`: which level of the tree a check failed at."""
        if attr is leaf:
            return attr.name
        depth = len(leaf.ancestors) - leaf.ancestors.index(attr.name)
        rel = "parent" if depth == 1 else f"ancestor {depth} levels up"
        return f"{attr.name} ({rel} of {leaf.name})"

    def _refused(self, obj: str) -> bool:
        """Tree mode with a broken tree or a job in a parent queue: refuse, and say why."""
        if self.blocked:
            self.ssn.explain(obj, self.blocked)
            return True
        return False

    def _leaf_ok(self, attr: QueueAttr, obj: str) -> bool:
        if self.hierarchical and not attr.is_leaf():
            self.ssn.explain(obj, f"queue {attr.name} is not a leaf queue (children: {', '.join(attr.children)});"
                                  " only leaf queues take jobs")
            return False
        return True

    def _queue_of(self, task: TaskInfo) -> QueueAttr | None:
        job = self.ssn.jobs.get(task.job)
        return None if job is None else self.attrs.get(job.queue)

    def _allocatable_on_path(self, attrs: dict[str, QueueAttr], leaf: QueueAttr, task: TaskInfo,
                             explain: bool) -> bool:
        """checkQueueAllocatableHierarchically: allocated + task <= realCapability (rule b), leaf to root.
        `attrs` is the live map or a simulation snapshot."""
        for a in [leaf] + [attrs[n] for n in reversed(leaf.ancestors)]:
            used = a.allocated.plus(task.resreq)
            ok, failed = used.less_equal_with_dimension(a.real_capability, task.resreq)
            if not ok:
                if explain:
                    self.ssn.explain(task.key, qc.shortfall(self._where(leaf, a), used, a.real_capability, failed,
                                                            "realCapability"))
                return False
        return True

    # ================================================================= extension points
    def queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        """QueueOrderFn (flat): higher priority first, then the lower share, a queue with deserved first."""
        if l.priority != r.priority:
            return r.priority - l.priority
        la, ra = self.attrs.get(l.name), self.attrs.get(r.name)
        if la is None or ra is None:
            return 0
        return compare_share_with_deserved(la, ra)

    def hierarchical_queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        """QueueOrderFn (tree): priority; a leaf first; two leaves compare the queues just below their
        deepest common ancestor (or themselves)."""
        if l.priority != r.priority:
            return r.priority - l.priority
        plan = self._pair_plans.get((l.name, r.name))
        if plan is None:
            plan = self._pair_plans[(l.name, r.name)] = self._pair_plan(l.name, r.name)
        fixed, lp, rp, l_has, r_has = plan
        if fixed:
            return fixed
        # compareShareWithDeserved on the two queues the plan names; only their shares move in a session
        ls, rs = self.attrs[lp].share, self.attrs[rp].share
        if ls == rs:
            return 0 if l_has == r_has else (-1 if l_has else 1)
        return -1 if ls < rs else 1

    def _pair_plan(self, l: str, r: str) -> tuple[int, str, str, bool, bool]:
        """What hierarchical_queue_order needs of a pair, all fixed for the session (the tree, leafness,
        whether a deserved is set): (leaf-rule result or 0, the two queues whose shares decide, and
        whether each of those has a deserved)."""
        la, ra = self.attrs[l], self.attrs[r]
        if la.is_leaf() != ra.is_leaf():
            return (-1 if la.is_leaf() else 1), l, r, False, False
        lp, rp = l, r
        if la.is_leaf():
            level = queue_level(la, ra)
            lp = la.ancestors[level + 1] if level + 1 < len(la.ancestors) else l
            rp = ra.ancestors[level + 1] if level + 1 < len(ra.ancestors) else r
        return 0, lp, rp, not self.attrs[lp].deserved.is_empty(), not self.attrs[rp].deserved.is_empty()

    def victim_queue_order(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> int:
        """VictimQueueOrderFn (tree): the victim queue whose common ancestor with the preemptor's queue is
        deeper goes first."""
        p = self.attrs[preemptor.name]
        ll, rl = queue_level(self.attrs[l.name], p), queue_level(self.attrs[r.name], p)
        if ll == rl:
            return 0
        return -1 if ll > rl else 1

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """ReclaimableFn: the triple check over a running simulated allocated per queue (§6.10)."""
        if self._refused(reclaimer.key):
            return [], ep.REJECT
        reclaimer_attr = self._queue_of(reclaimer)
        if reclaimer_attr is None:
            return [], ep.REJECT
        level = self.ancestor_reclaim_level if self.hierarchical else 0
        allocations: dict[str, Resource] = {}
        victims: list[TaskInfo] = []
        spared: list[str] = []
        for reclaimee in self.ssn.sort_victims(candidates, reclaimer):
            attr = self._queue_of(reclaimee)
            if attr is None:
                continue
            # 1. no resource dimension in common with the reclaimer (pods ignored): evicting it cannot help
            if not reclaimee.resreq.intersection_names(reclaimer.resreq, ignore_pods=True):
                continue
            allocated = allocations.setdefault(attr.name, attr.allocated.clone())
            # 2. the guarantee is never breached
            if not attr.guarantee.less_equal(allocated.clone().sub_without_assert(reclaimee.resreq)):
                spared.append(f"queue {attr.name}: evicting {reclaimee.key} would take it below its guarantee "
                              f"({_fmt(attr.guarantee)})")
                continue
            # 3. an immediate victim (no dimension in common with deserved, pods counted), or a queue above its
            #    deserved on a dimension the victim requests and deserved lists
            if not reclaimee.resreq.intersection_names(attr.deserved):
                if (level > 0 and self._shares_ancestor_within(reclaimer_attr, attr, level)
                        and not reclaimer.resreq.intersection_names(reclaimer_attr.deserved)):
                    continue
            elif not allocated.greater_partly_relevant(attr.deserved, reclaimee.resreq):
                spared.append(f"queue {attr.name}: not above its deserved ({_fmt(attr.deserved)}) on what "
                              f"{reclaimee.key} requests")
                continue
            checked = self._ancestors_allow(reclaimer_attr, attr, reclaimee, allocations, level, spared)
            if checked is None:
                continue
            allocated.sub_without_assert(reclaimee.resreq)
            for a in checked:
                a.sub_without_assert(reclaimee.resreq)
            victims.append(reclaimee)
        if not victims and spared:
            self.ssn.explain(reclaimer.key, "capacity found no task to reclaim: " + "; ".join(dict.fromkeys(spared)))
        return victims, ep.PERMIT

    def _shares_ancestor_within(self, a: QueueAttr, b: QueueAttr, level: int) -> bool:
        """sharesAnyNonRootAncestorWithinLevel."""
        aa = {ancestor_at_depth(a, d) for d in range(1, level + 1)} - {None, ROOT_QUEUE}
        bb = {ancestor_at_depth(b, d) for d in range(1, level + 1)} - {None, ROOT_QUEUE}
        return bool(aa & bb)

    def _ancestors_allow(self, reclaimer_attr: QueueAttr, attr: QueueAttr, reclaimee: TaskInfo,
                         allocations: dict[str, Resource], level: int, spared: list[str]) -> list[Resource] | None:
        """ancestorReclaimLevel, victim side: each ancestor of the victim's queue within `level` that the
        reclaimer does not share (and is not root) must be over its deserved too. Returns the working
        allocations to charge, or None if an ancestor spares the victim."""
        checked: list[Resource] = []
        for d in range(1, level + 1):
            name = ancestor_at_depth(attr, d)
            if name is None or name == ROOT_QUEUE or ancestor_at_depth(reclaimer_attr, d) == name:
                continue
            anc = self.attrs[name]
            alloc = allocations.setdefault(name, anc.allocated.clone())
            checked.append(alloc)
            if not reclaimee.resreq.intersection_names(anc.deserved):
                continue
            if not alloc.greater_partly_relevant(anc.deserved, reclaimee.resreq):
                spared.append(f"queue {name} (ancestor of {attr.name}): not above its deserved on what "
                              f"{reclaimee.key} requests")
                return None
        return checked

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """PreemptiveFn: may this queue reclaim for the task? realCapability on the leaf (rule b), then any
        one requested dimension still within deserved (rule c), or an ancestor's within ancestorReclaimLevel."""
        if self._refused(task.key):
            return False
        if not queue.is_open():
            self.ssn.explain(task.key, f"queue {queue.name} is {queue.state}, not Open: it cannot reclaim")
            return False
        attr = self.attrs.get(queue.name)
        if attr is None:
            return False
        req = task.resreq
        future = attr.allocated.plus(req)
        ok, failed = future.less_equal_with_dimension(attr.real_capability, req)
        if not ok:
            self.ssn.explain(task.key, qc.shortfall(queue.name, future, attr.real_capability, failed,
                                                    "realCapability", "cannot reclaim"))
            return False
        if future.less_equal_partly_zero_filtered(attr.deserved, req):
            return True
        if self.hierarchical:
            for d in range(1, self.ancestor_reclaim_level + 1):
                name = ancestor_at_depth(attr, d)
                if name is None or name == ROOT_QUEUE:
                    continue
                anc = self.attrs[name]
                if anc.allocated.plus(req).less_equal_partly_zero_filtered(anc.deserved, req):
                    return True
        self.ssn.explain(task.key, f"queue {queue.name}: cannot reclaim: allocated + request "
                                   f"({_fmt(future)}) would exceed deserved ({_fmt(attr.deserved)}) on every "
                                   "requested dimension")
        return False

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """AllocatableFn: an Open (leaf) queue, and allocated + task <= realCapability on every level."""
        if not queue.is_open():
            self.ssn.explain(task.key, f"queue {queue.name} is {queue.state}, not Open")
            return False
        if self._refused(task.key):
            return False
        attr = self.attrs.get(queue.name)
        if attr is None:
            return True
        if not self._leaf_ok(attr, task.key):
            return False
        return self._allocatable_on_path(self.attrs, attr, task, explain=True)

    def job_enqueueable(self, job: JobInfo) -> int:
        """JobEnqueueableFn: minResources + allocated + inqueue - elastic <= realCapability on minResources'
        dimensions (rule b), on the leaf and every ancestor."""
        if self._refused(job.uid):
            return ep.REJECT
        attr = self.attrs.get(job.queue)
        queue = self.ssn.queues.get(job.queue)
        if attr is None or queue is None:
            return ep.PERMIT
        if not self._leaf_ok(attr, job.uid):
            return ep.REJECT
        if not queue.is_open():
            self.ssn.explain(job.uid, f"queue {queue.name} is {queue.state}, not Open")
            return ep.REJECT
        if attr.real_capability is None or job.min_resources is None:
            return ep.PERMIT
        min_req = job.min_resources
        for a in self._path(attr):
            need = min_req.plus(a.allocated).add(a.inqueue).sub_without_assert(a.elastic)
            ok, failed = need.less_equal_with_dimension(a.real_capability, min_req)
            if not ok:
                self.ssn.explain(job.uid, qc.shortfall(
                    self._where(attr, a), need, a.real_capability, failed, "realCapability",
                    "queue resource quota insufficient (minResources + allocated + inqueue - elastic)"))
                return ep.REJECT
        return ep.PERMIT

    def job_enqueued(self, job: JobInfo) -> None:
        """JobEnqueuedFn: minResources (less gated pods) join inqueue on the leaf and every ancestor."""
        attr = self.attrs.get(job.queue)
        if attr is None or job.min_resources is None:
            return
        r = qc.enqueued_resource(job)
        for a in self._path(attr):
            a.inqueue.add(r)

    def pre_predicate(self, task: TaskInfo) -> str | None:
        """PrePredicateFn: snapshot every queue's attributes into the task's cycle state."""
        if not self.ssn.simulation_state_needed:
            return None  # nothing will read the copy this session
        state = CapacityState({n: a.clone() for n, a in self.attrs.items()})
        self.ssn.cycle_states.setdefault(task.uid, {})[STATE_KEY] = state
        return None

    def _simulate(self, state: dict[str, Any], task: TaskInfo, sign: int) -> None:
        cs = state.get(STATE_KEY)
        job = self.ssn.jobs.get(task.job)
        if not isinstance(cs, CapacityState) or job is None or job.queue not in cs.attrs:
            return
        leaf = cs.attrs[job.queue]
        for a in [leaf] + [cs.attrs[n] for n in leaf.ancestors]:
            if sign > 0:
                a.allocated.add(task.resreq)
            else:
                a.allocated.sub(task.resreq)
            a.update_share()

    def simulate_add_task(self, state: dict[str, Any], task: TaskInfo, row: int) -> None:
        """SimulateAddTaskFn: add the task to its queue and every ancestor in the snapshot."""
        self._simulate(state, task, +1)

    def simulate_remove_task(self, state: dict[str, Any], task: TaskInfo, row: int) -> None:
        """SimulateRemoveTaskFn: take the task off its queue and every ancestor in the snapshot."""
        self._simulate(state, task, -1)

    def simulate_allocatable(self, queue: QueueInfo, task: TaskInfo, state: dict[str, Any]) -> bool:
        """SimulateAllocatableFn: the allocatable test on the snapshot, leaf to root."""
        cs = state.get(STATE_KEY)
        if not isinstance(cs, CapacityState):
            return False  # Volcano: no state (PrePredicate not run) -> not allocatable
        if self._refused(task.key):
            return False
        attr = cs.attrs.get(queue.name)
        if attr is None:
            return True
        if not self._leaf_ok(attr, task.key):
            return False
        return self._allocatable_on_path(cs.attrs, attr, task, explain=False)

    def on_allocate(self, task: TaskInfo) -> None:
        """AllocateFunc: charge the task to its queue and every ancestor; refresh every share on the path."""
        attr = self._queue_of(task)
        if attr is None:
            return
        for a in self._path(attr):
            a.allocated.add(task.resreq)
            a.update_share()  # Deviation (seed's worked example): ancestors' shares too
            self.share_log.append(a.name)

    def on_deallocate(self, task: TaskInfo) -> None:
        """DeallocateFunc: the reverse of on_allocate."""
        attr = self._queue_of(task)
        if attr is None:
            return
        for a in self._path(attr):
            a.allocated.sub(task.resreq)
            a.update_share()
            self.share_log.append(a.name)

    # ================================================================= output
    def queue_report(self, ssn: Session) -> dict[str, dict[str, Any]] | None:
        """The `queues` map of the cycle output: every queue capacity keeps attributes for."""
        if not self.tree_ok:
            return None  # no tree, no limits: nothing meaningful to report (the blocking event says why)
        out: dict[str, dict[str, Any]] = {}
        for name in sorted(self.attrs):
            a = self.attrs[name]
            out[name] = {
                "deserved": qc.natural(a.deserved),
                "allocated": qc.natural(a.allocated),
                "request": qc.natural(a.request),
                "inqueue": qc.natural(a.inqueue),
                "elastic": qc.natural(a.elastic),
                "capability": qc.natural(a.capability),
                "realCapability": qc.natural(a.real_capability),
                "guarantee": qc.natural(a.guarantee),
                "share": a.share,
                "parent": a.parent,
                "state": ssn.queues[name].state if name in ssn.queues else "Open",
            }
        return out


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

