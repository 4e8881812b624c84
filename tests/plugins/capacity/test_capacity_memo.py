"""Capacity's tree taken from a caller's memo decides exactly as a fresh build, and is rebuilt whenever
a queue spec or the cluster changes."""

from __future__ import annotations

from typing import Any

import pytest

from apportion.engine import run_session
from apportion.framework.conf import parse_conf
from apportion.framework.session import Session
from apportion.plugins.capacity import CapacityPlugin

from k8s import node, pod, podgroup, queue, snapshot

CONF = parse_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
""")


def objects(training_guarantee: str = "10", nodes: int = 2) -> list[dict]:
    objs = [node(f"n{i}", cpu=50, memory="200Gi") for i in range(nodes)]
    objs += [queue("root"),
             queue("team-a", parent="root", deserved={"cpu": "60"}, capability={"cpu": "70"}, guarantee={"cpu": "20"}),
             queue("team-b", parent="root", deserved={"cpu": "40"}, capability={"cpu": "50"}, guarantee={"cpu": "20"}),
             # capability above its parent's: a configuration warning every session must repeat
             queue("training", parent="team-a", deserved={"cpu": "40"}, capability={"cpu": "80"},
                   guarantee={"cpu": training_guarantee}),
             queue("batch", parent="team-b", deserved={"cpu": "30"}, capability={"cpu": "40"}, guarantee={"cpu": "15"})]
    objs += [podgroup("run", queue="training"), pod("run-0", "run", cpu=30, node_name="n0"),
             podgroup("big", queue="training", phase="Pending", min_resources={"cpu": "45"}),
             pod("big-0", "big", cpu=45),
             podgroup("b", queue="batch", phase="Pending", min_resources={"cpu": "10"}), pod("b-0", "b", cpu=10)]
    return objs


def decide(objs: list[dict], memo: dict[str, Any] | None) -> tuple[dict, list[str]]:
    snap = snapshot(*objs)
    snap.memo = memo
    ssn = Session(snap, CONF)
    return run_session(ssn).to_json(), ssn.warnings


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per session that built the tree itself."""
    seen: list[int] = []
    real = CapacityPlugin.build_tree

    def spy(self: CapacityPlugin, ssn: Session) -> str | None:
        seen.append(1)
        return real(self, ssn)

    monkeypatch.setattr(CapacityPlugin, "build_tree", spy)
    return seen


def test_second_session_takes_the_tree_from_the_memo(builds: list[int]) -> None:
    fresh, fresh_warnings = decide(objects(), None)
    memo: dict[str, Any] = {}
    first, _ = decide(objects(), memo)
    second, second_warnings = decide(objects(), memo)
    assert len(builds) == 2  # the memo-less session and the first one that filled the memo
    assert first == second == fresh
    assert second_warnings == fresh_warnings
    assert any("training: capability exceeds parent team-a" in w for w in second_warnings)
    # the memo's tree was used, not modified: the third session still decides the same
    assert decide(objects(), memo)[0] == fresh


@pytest.mark.parametrize("change", [{"training_guarantee": "25"}, {"nodes": 3}])
def test_a_changed_spec_or_cluster_rebuilds(builds: list[int], change: dict[str, Any]) -> None:
    memo: dict[str, Any] = {}
    decide(objects(), memo)
    changed, _ = decide(objects(**change), memo)
    assert len(builds) == 2
    assert changed == decide(objects(**change), None)[0]
    assert changed["queues"] != decide(objects(), None)[0]["queues"]


def test_queue_objects_kept_across_snapshots_are_read_once_and_a_replaced_one_is_noticed(
        builds: list[int]) -> None:
    """As the simulator does: the same QueueInfo objects in every snapshot, a changed queue replaced."""
    expected = decide(objects(), None)[0]
    expected_changed = decide(objects(training_guarantee="25"), None)[0]
    builds.clear()
    memo: dict[str, Any] = {}
    base = snapshot(*objects())
    kept = dict(base.queues)

    def decide_with(queues: dict[str, Any], objs: list[dict]) -> dict:
        snap = snapshot(*objs)
        snap.queues = dict(queues)
        snap.memo = memo
        return run_session(Session(snap, CONF)).to_json()

    first = decide_with(kept, objects())
    again = decide_with(kept, objects())
    assert len(builds) == 1 and first == again == expected
    replaced = dict(kept, training=snapshot(*objects(training_guarantee="25")).queues["training"])
    changed = decide_with(replaced, objects())
    assert len(builds) == 2
    assert changed == expected_changed
