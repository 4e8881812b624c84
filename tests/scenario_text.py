"""Scenario-file fragments shared by the simulator's tests."""

from __future__ import annotations

from pathlib import Path

#: the shared traces, beside the repository (never copied into it)
TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"

FLAT_CAPACITY = """
scheduler: |
  actions: "enqueue, allocate, reclaim, backfill"
  tiers:
  - plugins:
    - name: priority
    - name: gang
  - plugins:
    - name: drf
    - name: predicates
    - name: capacity
"""

HIER_CAPACITY = """
scheduler: |
  actions: "enqueue, allocate, reclaim, backfill"
  tiers:
  - plugins:
    - name: priority
    - name: gang
  - plugins:
    - name: predicates
    - name: capacity
      enableHierarchy: true
"""

#: the smallest complete scenario: two nodes, one queue, one job
TINY_SCENARIO = """cluster:
  generate:
  - count: 2
    allocatable: {cpu: 4, memory: 8Gi}
queues:
- kind: Queue
  metadata: {name: q}
  spec: {weight: 1}
workload:
  jobs:
  - {name: j, queue: q, arrival: 0, duration: 10, resources: {cpu: 1}}
"""
