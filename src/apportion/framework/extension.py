"""Extension-point names and the switch that gates each (semantics guide §1.3, §4.2).

The names are `Final` so that `Session.add_fn`'s overloads (interface.py) type each registration.
"""

from __future__ import annotations

from typing import Final

QUEUE_ORDER: Final = "queue_order"
JOB_ORDER: Final = "job_order"
TASK_ORDER: Final = "task_order"
VICTIM_QUEUE_ORDER: Final = "victim_queue_order"
JOB_VALID: Final = "job_valid"
JOB_READY: Final = "job_ready"
JOB_PIPELINED: Final = "job_pipelined"
JOB_ENQUEUEABLE: Final = "job_enqueueable"
JOB_ENQUEUED: Final = "job_enqueued"
JOB_STARVING: Final = "job_starving"
OVERUSED: Final = "overused"
ALLOCATABLE: Final = "allocatable"
PREEMPTIVE: Final = "preemptive"
PRE_PREDICATE: Final = "pre_predicate"
PREDICATE: Final = "predicate"
BEST_NODE: Final = "best_node"
NODE_ORDER: Final = "node_order"
PREEMPTABLE: Final = "preemptable"
RECLAIMABLE: Final = "reclaimable"
SIMULATE_ALLOCATABLE: Final = "simulate_allocatable"
SIMULATE_PREDICATE: Final = "simulate_predicate"
SIMULATE_ADD_TASK: Final = "simulate_add_task"
SIMULATE_REMOVE_TASK: Final = "simulate_remove_task"

#: point -> the switch keys of which at least one must be on; () means "no switch".
GATES: dict[str, tuple[str, ...]] = {
    QUEUE_ORDER: ("enableQueueOrder",),
    JOB_ORDER: ("enableJobOrder",),
    TASK_ORDER: ("enableTaskOrder",),
    VICTIM_QUEUE_ORDER: (),
    JOB_VALID: (),
    JOB_READY: ("enableJobReady",),
    JOB_PIPELINED: ("enableJobPipelined",),
    JOB_ENQUEUEABLE: ("enableJobEnqueued",),
    JOB_ENQUEUED: ("enableJobEnqueued",),
    JOB_STARVING: ("enableJobStarving",),
    OVERUSED: ("enabledOverused",),
    ALLOCATABLE: ("enabledAllocatable",),
    PREEMPTIVE: ("enablePreemptive",),
    PRE_PREDICATE: ("enablePredicate",),
    PREDICATE: ("enablePredicate",),
    BEST_NODE: ("enableBestNode",),
    NODE_ORDER: ("enableNodeOrder",),
    PREEMPTABLE: ("enablePreemptable",),
    RECLAIMABLE: ("enableReclaimable",),
    SIMULATE_ALLOCATABLE: ("enabledAllocatable",),
    SIMULATE_PREDICATE: ("enablePredicate",),
    SIMULATE_ADD_TASK: ("enablePreemptable", "enabledAllocatable"),
    SIMULATE_REMOVE_TASK: ("enablePreemptable", "enabledAllocatable"),
}

PERMIT: Final = 1
ABSTAIN: Final = 0
REJECT: Final = -1
