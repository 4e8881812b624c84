"""Extension-point names and the switch that gates each (semantics guide §1.3, §4.2)."""

from __future__ import annotations

QUEUE_ORDER = "queue_order"
JOB_ORDER = "job_order"
TASK_ORDER = "task_order"
VICTIM_QUEUE_ORDER = "victim_queue_order"
JOB_VALID = "job_valid"
JOB_READY = "job_ready"
JOB_PIPELINED = "job_pipelined"
JOB_ENQUEUEABLE = "job_enqueueable"
JOB_ENQUEUED = "job_enqueued"
JOB_STARVING = "job_starving"
OVERUSED = "overused"
ALLOCATABLE = "allocatable"
PREEMPTIVE = "preemptive"
PRE_PREDICATE = "pre_predicate"
PREDICATE = "predicate"
BEST_NODE = "best_node"
NODE_ORDER = "node_order"
PREEMPTABLE = "preemptable"
RECLAIMABLE = "reclaimable"
SIMULATE_ALLOCATABLE = "simulate_allocatable"
SIMULATE_PREDICATE = "simulate_predicate"
SIMULATE_ADD_TASK = "simulate_add_task"
SIMULATE_REMOVE_TASK = "simulate_remove_task"

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

PERMIT = 1
ABSTAIN = 0
REJECT = -1
