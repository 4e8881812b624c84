"""allocate gives a task whose placement key failed since the last node change that failure again
(framework/node_choice.py, FailedChoice): on random contended clusters the session decides, explains and
records unresolvable nodes exactly as when every failed choice is worked out again."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_reclaim_repeats import _conf, contended

from apportion.framework import node_choice
from apportion.framework.node_choice import NodeChoice
from spying import record_calls

from k8s import cycle, node, pod, podgroup, queue


def _decide(objs: list[dict], conf: str) -> tuple[Any, dict[str, list[str]], dict[str, set[int]]]:
    result = cycle(objs, conf)
    assert result.session is not None
    return result.to_json(), result.session.explanations, result.session.unresolvable_nodes


def _count_replays(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the tasks given a failed choice again, in order."""
    return record_calls(monkeypatch, node_choice.FailedChoice, "replay", lambda self, ssn, task: task.key)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(case=contended(), guards=st.sampled_from(["", "gangAtomicVictims: true"]))
def test_failed_choices_given_again_decide_and_explain_as_worked_out_again(
        case: tuple[list[dict], bool], guards: str, monkeypatch: pytest.MonkeyPatch) -> None:
    objs, hierarchical = case
    conf = _conf(hierarchical, guards)
    monkeypatch.setattr(NodeChoice, "remember_failed_choices", True)
    fast = _decide(objs, conf)
    monkeypatch.setattr(NodeChoice, "remember_failed_choices", False)
    full = _decide(objs, conf)
    assert fast[0] == full[0]
    assert fast[1] == full[1]
    assert list(fast[1]) == list(full[1])
    assert fast[2] == full[2]


def _unplaceable_gangs() -> list[dict]:
    """Three waiting gangs of alike tasks, none of which fits the one node's free cpu."""
    objs = [node("n0", cpu=8, memory="32Gi"), queue("q", deserved={"cpu": "8"}), queue("r"),
            podgroup("h", queue="r", min_member=1, phase="Running")]
    objs += [pod("h-0", "h", cpu=6, memory="1Gi", node_name="n0")]
    for g in ("a", "b", "c"):
        objs += [podgroup(g, queue="q", min_member=2, phase="Inqueue", min_resources={"cpu": "8"})]
        objs += [pod(f"{g}-{i}", g, cpu=4, memory="1Gi") for i in range(2)]
    return objs


def test_alike_tasks_get_the_first_failure_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each gang's first task fails on the full path only for the first gang: nothing is placed in
    between, so the others are given its failure, and they explain it as the full path does."""
    conf = "actions: \"enqueue, allocate\"\n" + _conf(False, "").split("\n", 1)[1]
    replayed = _count_replays(monkeypatch)
    fast = _decide(_unplaceable_gangs(), conf)
    assert replayed == ["ns/b-0", "ns/c-0"]
    monkeypatch.setattr(NodeChoice, "remember_failed_choices", False)
    replayed.clear()
    assert _decide(_unplaceable_gangs(), conf) == fast
    assert replayed == []
    assert any("insufficient cpu" in m for m in fast[1]["ns/c-0"])


def test_a_touched_node_ends_the_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """A placement between two failures of the same key moves the node table: the second is worked out
    again. In job order gang a fails, job b (smaller) is placed, gang c fails on the full path."""
    objs = [node("n0", cpu=8, memory="32Gi"), queue("q", deserved={"cpu": "8"}), queue("r"),
            podgroup("h", queue="r", min_member=1, phase="Running")]
    objs += [pod("h-0", "h", cpu=6, memory="1Gi", node_name="n0")]
    for g, cpu in (("a", 4), ("b", 1), ("c", 4)):
        objs += [podgroup(g, queue="q", min_member=1, phase="Inqueue", min_resources={"cpu": str(cpu)}),
                 pod(f"{g}-0", g, cpu=cpu, memory="1Gi")]
    conf = "actions: \"enqueue, allocate\"\n" + _conf(False, "").split("\n", 1)[1]
    replayed = _count_replays(monkeypatch)
    fast = _decide(objs, conf)
    assert "ns/b-0" in fast[0]["binds"]
    assert replayed == []
    assert any("insufficient cpu" in m for m in fast[1]["ns/c-0"])
    monkeypatch.setattr(NodeChoice, "remember_failed_choices", False)
    assert _decide(objs, conf) == fast


@pytest.mark.parametrize("remember", [True, False])
def test_a_request_no_node_fits_is_explained_without_the_full_predicate(
        remember: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gangs that fill the nodes and then find no FutureIdle that fits: the placement cache's answers
    say so, and the failure (explanations, unresolvable nodes, decisions) is the full predicate's, which
    is not asked. Node n1 is tainted but too small and n3 lacks memory: the
    full predicate would not ask the plugins of them."""
    from apportion.framework.placement import PlacementCache

    objs = [node("n0", cpu=8, memory="32Gi"), node("n1", cpu=2, memory="32Gi",
                                                  taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
            node("n2", cpu=4, memory="32Gi"), node("n3", cpu=64, memory="512Mi"), queue("q", deserved={"cpu": "40"})]
    for g in ("a", "b", "c"):
        objs += [podgroup(g, queue="q", min_member=6, phase="Inqueue")]
        objs += [pod(f"{g}-{i}", g, cpu=4, memory="1Gi") for i in range(6)]
    conf = "actions: \"enqueue, allocate\"\n" + _conf(False, "").split("\n", 1)[1]
    monkeypatch.setattr(NodeChoice, "remember_failed_choices", remember)
    full_asked: list[str] = []
    real = NodeChoice._predicate_for_allocate

    def count(self: Any, task: Any, rows: Any = None) -> Any:
        full_asked.append(task.key)
        return real(self, task, rows)

    monkeypatch.setattr(NodeChoice, "_predicate_for_allocate", count)
    fast = _decide(objs, conf)
    assert full_asked == []
    assert any("insufficient cpu" in m and "insufficient memory" in m for m in fast[1]["ns/a-3"])
    monkeypatch.setattr(PlacementCache, "enabled", False)
    assert _decide(objs, conf) == fast
    assert full_asked


def test_a_gang_placed_and_discarded_leaves_the_failure_standing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Between two gangs whose request fits no node, a gang places a task and is discarded: the node's
    FutureIdle is back bit for bit (whole amounts), so the second failure is the first given again,
    and everything decided and explained is what the full path works out."""
    objs = [node("n0", cpu=8, memory="32Gi"), node("n1", cpu=4, memory="32Gi"), queue("q", deserved={"cpu": "40"})]
    # a and c ask 9 cpu (within the queue's 12, on no node); b's second task finds no node after its first
    for g, cpu, n in (("a", 9, 1), ("b", 6, 2), ("c", 9, 1)):
        objs += [podgroup(g, queue="q", min_member=n, phase="Inqueue")]
        objs += [pod(f"{g}-{i}", g, cpu=cpu, memory="1Gi") for i in range(n)]
    conf = "actions: \"enqueue, allocate\"\n" + _conf(False, "").split("\n", 1)[1]
    replayed = _count_replays(monkeypatch)
    fast = _decide(objs, conf)
    assert not fast[0]["binds"]
    assert any(m.startswith("gang 1/2") for m in fast[1]["ns/b"])
    assert replayed == ["ns/c-0"]
    monkeypatch.setattr(NodeChoice, "remember_failed_choices", False)
    replayed.clear()
    assert _decide(objs, conf) == fast
    assert replayed == []


def test_a_failure_stands_on_the_same_bits_only() -> None:
    """FailedChoice.stands compares bits of the rows touched since (of every row past
    TOUCHED_ROWS_COMPARED entries): -0.0 against 0.0 (worded differently as a best node's amount) ends
    the failure, a NaN touched and kept as it was does not, a changed amount does."""
    from apportion.cluster.node_table import NodeTable
    from apportion.framework.node_choice import TOUCHED_ROWS_COMPARED, FailedChoice

    table = NodeTable.__new__(NodeTable)
    table.future = np.array([[0.0, 1.0], [float("nan"), 2.0], [3.0, 3.0]])
    table.touched = []
    cols = np.array([0, 1])
    for many in (False, True):
        table.touched.clear()
        failure = FailedChoice(0, [("insufficient cpu", 3)], [], table.future[:, cols], cols)
        assert failure.stands(table)
        table.touched += [1] * (TOUCHED_ROWS_COMPARED + 1 if many else 1)  # the NaN row, as it was
        assert failure.stands(table) and failure.pos == len(table.touched)
        table.touched.append(0)
        table.future[0, 0] = -0.0
        assert not failure.stands(table)
        table.future[0, 0] = 0.0
        assert failure.stands(table) and failure.pos == len(table.touched)
        table.touched.append(2)
        table.future[2, 1] = 1.5
        assert not failure.stands(table)
        table.future[2, 1] = 3.0
    assert not FailedChoice(0, [], []).stands(table)


def test_a_request_that_fits_nowhere_is_given_again_across_placement_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two gangs ask the same 9 cpu with different node selectors (two placement keys): no node's
    FutureIdle fits, so the second gets the first's failure by its request, without a placement key
    made for it, and decides and explains as the full path does."""
    from apportion.framework.placement import PlacementCache

    objs = [node("n0", cpu=8, memory="32Gi", labels={"zone": "a"}), node("n1", cpu=4, memory="32Gi"),
            queue("q", deserved={"cpu": "40"})]
    for g, zone in (("a", "a"), ("b", "b")):
        objs += [podgroup(g, queue="q", min_member=1, phase="Inqueue"),
                 pod(f"{g}-0", g, cpu=9, memory="1Gi", nodeSelector={"zone": zone})]
    conf = "actions: \"enqueue, allocate\"\n" + _conf(False, "").split("\n", 1)[1]
    replayed = _count_replays(monkeypatch)
    keyed = record_calls(monkeypatch, PlacementCache, "_key", lambda self, task: task.key)
    fast = _decide(objs, conf)
    assert replayed == ["ns/b-0"] and keyed == ["ns/a-0"]
    assert any("insufficient cpu" in m for m in fast[1]["ns/b-0"])
    monkeypatch.setattr(NodeChoice, "remember_failed_choices", False)
    assert _decide(objs, conf) == fast
