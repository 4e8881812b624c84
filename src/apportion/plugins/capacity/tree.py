"""capacity's session-open build: the queue attributes flat and as a tree, and the memoised tree limits.

Follows `buildQueueAttrs` (flat mode, §6.10), `buildHierarchicalQueueAttrs`, `updateAncestors` and
`checkHierarchicalQueue` (tree mode, §6.11) of `plugins/capacity/capacity.go`, with the seeds' root
(`seeds/000_*`) by default and the design doc's switches (`seeds/004_*`).
"""

from __future__ import annotations

import functools
import operator
from dataclasses import field
from typing import Any

from apportion.cluster.model import JobInfo, QueueInfo
from apportion.cluster.snapshot import ROOT_QUEUE
from apportion.errors import InternalError
from apportion.framework.session import Session
from apportion.lean_dataclass import dataclass
from apportion.plugins import queue_common as qc
from apportion.plugins.capacity.attrs import (
    ROOT_CAPABILITY,
    QueueAttr,
    RealCapabilityTerms,
    _adds_anything,
    _dims,
    _fmt,
    _less_partly,
    _same_cpu_memory,
)
from apportion.plugins.capacity.base import CapacityBase
from apportion.plugins.capacity.ledger import (
    FIELDS,
    LEDGER_MEMO,
    Amount,
    Ledger,
    job_amounts,
    order_scalars,
)
from apportion.plugins.capacity.ledger_sums import Listers, note_listers
from apportion.resources import CPU, MEMORY, PODS, UNLIMITED, Resource
from apportion.state import check

TREE_MEMO = "capacity.tree"
#: tests switch this off: the session that builds the tree then charges every job to the attributes it
#: built, and the ledger is started by the next session (the reference of the ledger started at once, K41)
LEDGER_AT_BUILD = True
QUEUE_KEYS_MEMO = "capacity.queue-keys"
#: the memo's entry: the queue names and objects of the last `_tree_inputs`, and their keys
QUEUE_TUPLE_MEMO = "capacity.queue-tuple"


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

        What QueueAttr(...) builds, filled from one prepared dict, because a session makes one per
        queue and the dataclass constructor is slow at that rate (benchmarks/README.md); property-tested
        against the constructor in tests/plugins/capacity/test_capacity_fast_paths.py."""
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
    #: per leaf, its path for the ledger (leaf, parent, ..., root), made once: a job's entry then holds
    #: the same tuple as its last one, compared by identity first
    paths: dict[str, tuple[str, ...]] = field(default_factory=dict)


class TreeSetup(CapacityBase):
    """The session-open build of the queue attributes (flat or tree) and the accounting of the jobs."""

    def _charge_jobs(self, attr: QueueAttr, jobs: list[JobInfo]) -> None:
        """Charge jobs to their queue and (tree mode) every ancestor: allocated, request, inqueue (per
        PodGroup phase, as upstream) and elastic."""
        path = self._own_path(attr)
        for job in jobs:
            c = qc.job_contribution(job)
            # Adding a resource that is 0 everywhere and lists no scalar changes no bit of a sum that
            # started at +0.0 (no such sum is ever -0.0), and most running jobs have no inqueue and no
            # elastic part: those adds are skipped (tests/plugins/capacity/test_capacity_fast_paths.py).
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

    def charge_from_ledger(self, ssn: Session, tree: _TreeMemo) -> bool:
        """Build the attributes from the ledger kept in the memo (ledger.py): the queues start as the
        ledger's attributes, shared (copied before any change, `_own_path`), and only the jobs that are
        new or changed are charged here. False (nothing built) when some job's amounts are not exact:
        then the caller recounts."""
        assert ssn.memo is not None
        ledger = ssn.memo.get(LEDGER_MEMO)
        if not isinstance(ledger, Ledger) or ledger.tree is not tree or ledger.elastic_enabled != self.elastic_enabled:
            ledger = ssn.memo[LEDGER_MEMO] = Ledger(tree, self.elastic_enabled)
        plan: list[tuple[JobInfo, str, tuple[Amount | None, ...]]] = []
        for job in ledger.split(ssn.jobs, ssn.snapshot.jobs_delta):
            lim = tree.limits.get(job.queue)
            if lim is None:
                continue
            amounts = job_amounts(job, self.elastic_enabled)
            if amounts is None:
                return False
            plan.append((job, job.queue, amounts))
        rest: list[tuple[JobInfo, str, tuple[Amount | None, ...]]] = []
        kept: list[tuple[JobInfo, tuple[str, ...], tuple[Amount | None, ...]]] = []
        limits, paths = tree.limits, tree.paths
        for job, q, amounts in plan:
            lim = limits[q]
            if not lim.children and job.tasks:  # Ledger.keeps
                path = paths.get(q)
                if path is None:
                    path = paths[q] = (q, *reversed(lim.ancestors))
                kept.append((job, path, amounts))
            else:
                rest.append((job, q, amounts))
        ledger.admit_many(kept)
        ledger.refresh(lambda name: tree.limits[name].session_attr(name))
        self.attrs = dict(ledger.base)
        self._shared = set(self.attrs)
        self._ledger = ledger
        rest.sort(key=lambda x: x[0].uid)
        moved: set[str] = set()
        listers: Listers = {}
        non_leaf: list[JobInfo] = []
        for job, q, amounts in rest:
            attr = self.attrs[q]
            if not attr.is_leaf():
                non_leaf.append(job)
            self._charge_jobs(attr, [job])
            for name in (q, *attr.ancestors):
                moved.add(name)
                note_listers(listers, name, job.uid, amounts)
        order_scalars(self.attrs, ledger, listers)
        self._refuse_non_leaf(ssn, non_leaf)
        for name in moved:
            self.attrs[name].update_share()
        if check.enabled():
            self._check_ledger(ssn, tree)
        return True

    def _check_ledger(self, ssn: Session, tree: _TreeMemo) -> None:
        """The self-check (APPORTION_CHECK_STATE): the ledger's sums against a recount in uid order."""
        ref = {name: lim.session_attr(name) for name, lim in tree.limits.items()}
        for uid in sorted(ssn.jobs):
            job = ssn.jobs[uid]
            leaf = ref.get(job.queue)
            if leaf is None:
                continue
            c = qc.job_contribution(job)
            for a in [leaf] + [ref[n] for n in reversed(leaf.ancestors)]:
                a.allocated.add(c.allocated)
                a.request.add(c.request)
                if _adds_anything(c.inqueue):
                    a.inqueue.add(c.inqueue)
                if self.elastic_enabled and _adds_anything(c.elastic):
                    a.elastic.add(c.elastic)
        for name, want in ref.items():
            got = self.attrs[name]
            want.update_share()
            if got.share != want.share:
                raise InternalError(f"capacity ledger: queue {name} share is {got.share}, a recount gives {want.share}")
            for f in FIELDS:
                g, w = getattr(got, f), getattr(want, f)
                if not (g == w and list(g.scalars) == list(w.scalars)):
                    raise InternalError(f"capacity ledger: queue {name} {f} is {g} (scalars {list(g.scalars)}), "
                                        f"a recount gives {w} (scalars {list(w.scalars)})")

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
            if self.charge_from_ledger(ssn, cached):
                return
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
                built = ssn.memo[TREE_MEMO] = _TreeMemo(fingerprint, {n: _Limits.of(a) for n, a in self.attrs.items()},
                                                        warnings)
                # the session that builds the tree starts the ledger too: the next one (the tree taken
                # from the memo) then charges only what changed, instead of every job being charged
                # twice, here and again into the ledger (docs/semantics.md K41)
                if LEDGER_AT_BUILD and self.charge_from_ledger(ssn, built):
                    return
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
        self._refuse_non_leaf(ssn, non_leaf_jobs)
        if from_memo:
            # session_attr gave every queue the share of an empty account: only charged paths moved
            for name in charged | {a for leaf in charged for a in self.attrs[leaf].ancestors}:
                self.attrs[name].update_share()
        else:
            for attr in self.attrs.values():
                attr.update_share()

    def _refuse_non_leaf(self, ssn: Session, non_leaf_jobs: list[JobInfo]) -> None:
        if non_leaf_jobs:
            names = ", ".join(f"{j.uid} (queue {j.queue})" for j in non_leaf_jobs[:3])
            more = f" and {len(non_leaf_jobs) - 3} more" if len(non_leaf_jobs) > 3 else ""
            self.blocked = (f"capacity: job {names}{more} sits in a queue that has child queues; jobs may only "
                            f"be submitted to leaf queues, so every queue decision is refused this session")
            for j in non_leaf_jobs:
                ssn.explain(j.uid, f"queue {j.queue} is not a leaf queue (children: "
                                   f"{', '.join(self.attrs[j.queue].children)}); submit the job to a leaf queue")

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
        # the same QueueInfo objects under the same names as last time (compared in C, by identity
        # first): the queues' part is the last one
        names, queues = tuple(ssn.queues), tuple(ssn.queues.values())
        last = ssn.memo.get(QUEUE_TUPLE_MEMO)
        if last is not None and last[0] == names and len(last[1]) == len(queues) and all(
                map(operator.is_, last[1], queues)):
            keys_part: tuple[Any, ...] = last[2]
        else:
            keys_part = self._queue_keys(ssn)
            ssn.memo[QUEUE_TUPLE_MEMO] = (names, queues, keys_part)
        return self.guarantee_enabled, self.root_mode, _res_key(self.total), keys_part

    def _queue_keys(self, ssn: Session) -> tuple[Any, ...]:
        """Each queue's part of `_tree_inputs`, in name order."""
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
        return tuple(keys)

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
