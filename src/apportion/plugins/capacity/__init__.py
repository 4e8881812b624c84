"""The capacity plugin (`plugins/capacity/capacity.go`, semantics guide §6.10-6.11), one module per concern.

- `attrs`: realCapability and its terms, the per-queue attributes, the per-task simulation copy;
- `tree`: the session-open build, flat (`buildQueueAttrs`) and as a tree (`buildHierarchicalQueueAttrs`,
  `updateAncestors`, `checkHierarchicalQueue`), and the tree limits a simulator keeps between sessions;
- `ordering`: the queue orders and the victim-queue order;
- `admission`: reclaimable, preemptive, allocatable, job enqueueable and enqueued;
- `simulate`: the simulate points and the allocate/deallocate event handlers;
- `report`: the `queues` map of the cycle output;
- `picker`: the tree mode's fast queue picker (the reference scan's answer without scanning);
- `plugin`: `CapacityPlugin`, which puts them together and registers them at session open.
"""

from apportion.plugins.capacity.attrs import (
    ANCESTOR_RECLAIM_LEVEL,
    ELASTIC_ENABLE,
    GUARANTEE_ENABLE,
    ROOT_CAPABILITY,
    STATE_KEY,
    CapacityState,
    QueueAttr,
    RealCapabilityTerms,
    ancestor_at_depth,
    queue_level,
    real_capability,
)
from apportion.plugins.capacity.ordering import compare_share_with_deserved
from apportion.plugins.capacity.plugin import CapacityPlugin

__all__ = [
    "ANCESTOR_RECLAIM_LEVEL",
    "ELASTIC_ENABLE",
    "GUARANTEE_ENABLE",
    "ROOT_CAPABILITY",
    "STATE_KEY",
    "CapacityPlugin",
    "CapacityState",
    "QueueAttr",
    "RealCapabilityTerms",
    "ancestor_at_depth",
    "compare_share_with_deserved",
    "queue_level",
    "real_capability",
]
