"""The typed queue status on CycleResult, and the cycle output's `queues` map as a view over it."""

from __future__ import annotations

from apportion.engine import run_cycle
from apportion.framework.queue_status import QueueStatus
from apportion.resources import Resource

from k8s import node, pod, podgroup, queue, snapshot


def test_queue_status_is_typed_and_the_queues_map_is_its_view() -> None:
    snap = snapshot(node("n1", cpu=8), queue("a", weight=1), queue("b", weight=1),
                    podgroup("j", "a", min_member=1), pod("j-0", "j", cpu=2))
    result = run_cycle(snap)
    status = result.queue_status["a"]
    assert isinstance(status, QueueStatus) and isinstance(status.allocated, Resource)
    assert status.allocated.cpu == 2000 and status.parent == "root" and status.state == "Open"
    assert result.queues == {name: st.to_json() for name, st in result.queue_status.items()}
    assert result.queues["a"]["allocated"]["cpu"] == 2  # natural units: cores
    assert result.to_json()["queues"]["a"] is result.queues["a"]  # built once, then read
