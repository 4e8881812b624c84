"""Small cluster dumps (kubectl dicts) for the forecast and diff tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from k8s import node, pod, podgroup, queue

T0 = "2026-01-01T00:00:00Z"


def running(o: dict[str, Any], start: str = T0, **ann: str) -> dict[str, Any]:
    """A running pod with a start time and runtime annotations (`expected_end`, `duration`)."""
    o["status"]["startTime"] = start
    for k, v in ann.items():
        o["metadata"]["annotations"][f"apportion.io/{k.replace('_', '-')}"] = v
    return o


def two_queues() -> list[dict[str, Any]]:
    """Two 8-cpu nodes; queue a (capability 8) runs a1 (3+3 cpu), queue b runs big (4+4 cpu); train
    (4 × 1 cpu gang, queue a) and web (2 cpu, queue b) wait."""
    return [
        node("n1", cpu=8), node("n2", cpu=8),
        queue("a", capability={"cpu": 8}, deserved={"cpu": 8}), queue("b", deserved={"cpu": 8}),
        podgroup("big", queue="b", min_member=2, phase="Running", created=T0),
        running(pod("big-0", "big", cpu=4, node_name="n1"), duration="600"),
        running(pod("big-1", "big", cpu=4, node_name="n2"), duration="20m"),
        podgroup("a1", queue="a", min_member=2, phase="Running", created=T0),
        running(pod("a1-0", "a1", cpu=3, node_name="n1"), expected_end="2026-01-01T00:05:00Z"),
        running(pod("a1-1", "a1", cpu=3, node_name="n2"), expected_end="2026-01-01T00:15:00Z"),
        podgroup("train", queue="a", min_member=4, phase="Pending", created="2026-01-01T00:01:00Z"),
        *[pod(f"train-{i}", "train", cpu=1) for i in range(4)],
        podgroup("web", queue="b", min_member=1, phase="Pending", created="2026-01-01T00:01:00Z"),
        pod("web-0", "web", cpu=2, annotations={"apportion.io/duration": "5m"}),
    ]


def write(path: Path, objs: list[dict[str, Any]]) -> str:
    path.write_text(yaml.safe_dump_all(objs))
    return str(path)
