"""What every part of the capacity plugin shares: its session state and the helpers of the callbacks.

The plugin is one class (`CapacityPlugin`, plugin.py) put together from one mixin per concern; this base
declares the attributes `on_session_open` sets and the helpers more than one concern uses
(`plugins/capacity/capacity.go`: `checkQueueAllocatableHierarchically`, the readiness and leaf checks).
"""

from __future__ import annotations

from apportion.cluster.model import QueueInfo, TaskInfo
from apportion.framework.interface import Plugin
from apportion.framework.session import Session
from apportion.plugins import queue_common as qc
from apportion.plugins.capacity.attrs import QueueAttr
from apportion.plugins.capacity.buckets import Buckets
from apportion.plugins.capacity.ledger import Ledger
from apportion.resources import PODS, Resource


class CapacityBase(Plugin):
    """The capacity plugin's session state (set by `on_session_open`) and shared helpers."""

    ssn: Session
    attrs: dict[str, QueueAttr]
    total: Resource
    total_guarantee: Resource
    guarantee_enabled: bool
    elastic_enabled: bool
    ancestor_reclaim_level: int
    root_mode: str
    hierarchical: bool
    #: why the plugin refuses every queue decision this session (tree mode), or None.
    blocked: str | None
    #: False when the tree could not be built (cycle, unknown parent, no root).
    tree_ok: bool
    #: configuration warnings of this plugin (also in ssn.warnings), for `apportion quota`.
    config_warnings: list[str]
    #: names of the queues whose real share changed, in order (the tree picker re-keys from it)
    share_log: list[str]
    _pair_plans: dict[tuple[str, str], tuple[int, str, str, bool, bool]]
    #: queues whose attributes are the ledger's, shared with later sessions: copied before any change
    _shared: set[str]
    #: the shared queues copied this session (the queue report recomputes these)
    _owned: list[str]
    #: the ledger the attributes came from this session (None: counted afresh)
    _ledger: Ledger | None
    #: the admission levels' verdicts per queue and minResources, how far into `share_log` they are
    #: current, and the queues JobEnqueued moved since (admission.py, `_vote_levels`)
    _levels: dict[str, tuple[QueueAttr, dict[tuple[float, float, tuple[tuple[str, float], ...]],
                                             tuple[bool, str, dict[str, str]]]]]
    _levels_pos: int
    _moved: list[str]
    #: per leaf, the names of its path, leaf first (the limit checks' order)
    _names: dict[str, tuple[str, ...]]
    #: per (leaf, level of its path), the start of a message about the level as seen from the leaf
    #: (`queue NAME: `, `_where`)
    _wheres: dict[tuple[str, str], str]
    #: the backlog test's buckets (admission.py, `Buckets`), kept in the memo
    _buckets: Buckets

    def _warn(self, message: str) -> None:
        text = f"capacity: {message}"
        self.config_warnings.append(text)
        self.ssn.warnings.append(text)

    def _guarantee_of(self, queue: QueueInfo) -> Resource:
        """spec.guarantee.resource, or nothing when the design doc's GuaranteeEnable is off."""
        return queue.guarantee.clone() if self.guarantee_enabled else Resource()


    # ================================================================= helpers for the callbacks
    def _path(self, attr: QueueAttr) -> list[QueueAttr]:
        """The leaf and then its ancestors up to the root (the order the limit checks walk)."""
        return [attr] + [self.attrs[n] for n in reversed(attr.ancestors)]

    def _own_path(self, attr: QueueAttr) -> list[QueueAttr]:
        """`_path` for a change: a queue whose attributes are shared with the ledger is given a copy of
        its own first (tree.py, `charge_from_ledger`), so what the ledger keeps is never changed."""
        if not self._shared:
            return self._path(attr)
        out = []
        for name in [attr.name, *reversed(attr.ancestors)]:
            a = self.attrs[name]
            if name in self._shared:
                a = self.attrs[name] = a.own_copy()
                self._shared.discard(name)
                self._owned.append(name)
            out.append(a)
        return out

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
            self.ssn.explain(obj, self._not_leaf(attr))
            return False
        return True

    @staticmethod
    def _not_leaf(attr: QueueAttr) -> str:
        return f"queue {attr.name} is not a leaf queue (children: {', '.join(attr.children)}); only leaf queues take jobs"

    def _queue_of(self, task: TaskInfo) -> QueueAttr | None:
        job = self.ssn.jobs.get(task.job)
        return None if job is None else self.attrs.get(job.queue)

    def _allocatable_in(self, attrs: dict[str, QueueAttr], queue: str, task: TaskInfo, explain: bool) -> bool:
        """queueAllocatable over `attrs` (the live map or a simulation snapshot): not refused, a leaf, and
        allocated + task <= realCapability from the queue to the root. A queue without attributes passes."""
        if self._refused(task.key):
            return False
        attr = attrs.get(queue)
        if attr is None:
            return True
        if not self._leaf_ok(attr, task.key):
            return False
        return self._allocatable_on_path(attrs, attr, task, explain=explain)

    def _allocatable_on_path(self, attrs: dict[str, QueueAttr], leaf: QueueAttr, task: TaskInfo,
                             explain: bool) -> bool:
        """checkQueueAllocatableHierarchically: allocated + task <= realCapability (rule b), leaf to root.
        `attrs` is the live map or a simulation snapshot."""
        # allocate asks this for every task: the sums are compared without being built, and only a
        # refusal takes the reference loop, which finds the failing queue and words the explanation
        if path_fits(attrs, leaf, task.resreq):
            return True
        return self._allocatable_on_path_reference(attrs, leaf, task, explain)

    def _allocatable_on_path_reference(self, attrs: dict[str, QueueAttr], leaf: QueueAttr, task: TaskInfo,
                                       explain: bool) -> bool:
        """`_allocatable_on_path` with every sum built (the reference `path_fits` is tested against)."""
        for a in [leaf] + [attrs[n] for n in reversed(leaf.ancestors)]:
            used = a.allocated.plus(task.resreq)
            ok, failed = used.less_equal_with_dimension(a.real_capability, task.resreq)
            if not ok:
                if explain:
                    self.ssn.explain(task.key, qc.shortfall(self._where(leaf, a), used, a.real_capability, failed,
                                                            "realCapability"))
                return False
        return True


def path_fits(attrs: dict[str, QueueAttr], leaf: QueueAttr, req: Resource) -> bool:
    """`(allocated + req).less_equal_with_dimension(realCapability, req)` at the leaf and at every
    ancestor, root last, without building the sums: the same float additions and comparisons."""
    cpu, memory = req.cpu > 0, req.memory > 0
    scalars = [(n, v) for n, v in req.scalars.items() if not (n == PODS or v <= 0)] if req.scalars else ()
    a = leaf
    ancestors = leaf.ancestors
    i = len(ancestors)
    while True:
        limit = a.real_capability
        used = a.allocated
        if limit is None:
            if cpu or memory or scalars:
                return False
        else:
            if cpu and used.cpu + req.cpu > limit.cpu:
                return False
            if memory and used.memory + req.memory > limit.memory:
                return False
            if scalars:
                have, cap = used.scalars, limit.scalars
                for n, v in scalars:
                    if have.get(n, 0.0) + v > cap.get(n, 0.0):
                        return False
        if i == 0:
            return True
        i -= 1
        a = attrs[ancestors[i]]
