"""capacity: queues with a written deserved, a guarantee and a capability, flat or as a tree (§6.10, §6.11).

Follows `plugins/capacity/capacity.go` and the seeds (`seeds/000_*`, design doc `seeds/004_*`). Where the
seeds and current Volcano disagree, the seeds win by default (semantics guide, top section):

- the root of the tree is the cluster total (capability = deserved = realCapability = total); the
  argument `capacity.rootCapability: unlimited` gives current Volcano's root instead;
- an allocate/deallocate event refreshes the share of the leaf *and of every ancestor* (the seed's
  worked example: team-a 0.75 -> 0.917), so the hierarchical queue order stays true within a session;
- the design doc's `capacity.GuaranteeEnable` / `capacity.ElasticEnable` switches (default true) are
  honoured: off, every guarantee counts as empty / no job is elastic.

This module is `OnSessionOpen`: it reads the arguments, builds the attributes (tree.py; flat mode over a
memo: flat_ledger.py) and registers each extension point in the order Volcano does (ordering.py,
admission.py, simulate.py, report.py).
"""

from __future__ import annotations

from apportion.framework import extension as ep
from apportion.framework.session import EventHandler, Session
from apportion.plugins.capacity.admission import LEVELS_MEMO, Admission
from apportion.plugins.capacity.attrs import (
    ANCESTOR_RECLAIM_LEVEL,
    ELASTIC_ENABLE,
    GUARANTEE_ENABLE,
    ROOT_CAPABILITY,
    QueueAttr,
)
from apportion.plugins.capacity.buckets import BUCKETS_MEMO, Buckets
from apportion.plugins.capacity.drain_subset import DrainPicker
from apportion.plugins.capacity.flat_ledger import FlatLedgerSetup
from apportion.plugins.capacity.ordering import Ordering
from apportion.plugins.capacity.report import Report
from apportion.plugins.capacity.simulate import Simulation
from apportion.resources import Resource


class CapacityPlugin(FlatLedgerSetup, Ordering, Admission, Simulation, Report):
    """Volcano's capacity plugin (see the module docstring)."""

    name = "capacity"

    #: set by `apportion quota` to look at a conf that has no capacity entry hierarchically.
    force_hierarchy: bool | None = None

    # ================================================================= session open
    def on_session_open(self, ssn: Session) -> None:
        """OnSessionOpen: read the arguments, build the attributes, register the extension points."""
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
        self._shared: set[str] = set()
        self._owned: list[str] = []
        self._ledger = None
        # the levels' verdicts hold while their attributes objects are the session's (admission.py)
        self._levels = ssn.memo.setdefault(LEVELS_MEMO, {}) if ssn.memo is not None else {}
        self._levels_pos = 0
        self._moved = []
        self._names = {}
        self._wheres = {}
        # made only when the memo holds none (setdefault's default would be made every session)
        buckets = ssn.memo.get(BUCKETS_MEMO) if ssn.memo is not None else None
        if buckets is None:
            buckets = Buckets()
            if ssn.memo is not None:
                ssn.memo[BUCKETS_MEMO] = buckets
        self._buckets = buckets
        #: why the plugin refuses every queue decision this session (tree mode), or None.
        self.blocked: str | None = None
        #: False when the tree could not be built (cycle, unknown parent, no root).
        self.tree_ok = True
        #: configuration warnings of this plugin (also in ssn.warnings), for `apportion quota`.
        self.config_warnings: list[str] = []

        if self.hierarchical:
            self.build_hierarchical_queue_attrs(ssn)
        else:
            self.build_flat_queue_attrs(ssn)
        if self.blocked:
            ssn.queue_decisions_blocked = (
                f"{ssn.queue_decisions_blocked}; {self.blocked}" if ssn.queue_decisions_blocked else self.blocked
            )

        ssn.add_fn(ep.RECLAIMABLE, self.name, self.reclaimable)
        ssn.add_fn(ep.PREEMPTIVE, self.name, self.preemptive)
        ssn.add_fn(ep.ALLOCATABLE, self.name, self.allocatable)
        ssn.add_fn(ep.JOB_ENQUEUEABLE, self.name, self.job_enqueueable)
        ssn.add_fn(ep.JOB_ENQUEUED, self.name, self.job_enqueued)
        ssn.add_enqueue_test(self.name, self.admissible_enqueues)
        ssn.add_enqueue_answers(self.name, self.enqueue_answers, self.enqueue_buckets)
        ssn.add_fn(ep.PRE_PREDICATE, self.name, self.pre_predicate)
        ssn.add_fn(ep.SIMULATE_ADD_TASK, self.name, self.simulate_add_task)
        ssn.add_fn(ep.SIMULATE_REMOVE_TASK, self.name, self.simulate_remove_task)
        ssn.add_fn(ep.SIMULATE_ALLOCATABLE, self.name, self.simulate_allocatable)
        # Volcano registers no queue order when the tree is broken (buildHierarchicalQueueAttrs returns early).
        if not self.blocked:
            if self.hierarchical:
                ssn.add_fn(ep.QUEUE_ORDER, self.name, self.hierarchical_queue_order)
                ssn.add_fn(ep.VICTIM_QUEUE_ORDER, self.name, self.victim_queue_order)
                ssn.add_queue_picker(self.name, lambda queues, compare: DrainPicker(self, list(queues), compare))
            else:
                ssn.add_fn(ep.QUEUE_ORDER, self.name, self.queue_order)
        ssn.add_event_handler(EventHandler(allocate=self.on_allocate, deallocate=self.on_deallocate))
