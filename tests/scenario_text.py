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
