"""reclaim skips the search of a pending task that repeats a failed search of the same job in the same
session (actions/reclaim.py, FailedSearch): on random contended clusters, flat and as a tree, with and
without the guards, the session decides and explains exactly what the full search of every task gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.actions import reclaim

from k8s import cycle, first_fit, node, pod, podgroup, priority_class, queue

_TIERS = """
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity%s}, {name: nodeorder}]
"""


def _conf(hierarchical: bool, guards: str) -> str:
    action = '"enqueue, allocate, reclaim, backfill"'
    text = f"actions: {action}\n" + _TIERS % (", enableHierarchy: true" if hierarchical else "")
    if guards:
        text += f"configurations:\n- name: reclaim\n  arguments: {{{guards}}}\n"
    return text


@st.composite
def contended(draw: Any) -> tuple[list[dict], bool]:
    """Queues that run gangs filling the nodes and queues whose gangs of alike tasks wait, some of
    them only able to start by reclaiming; flat or under two parents."""
    hierarchical = draw(st.booleans())
    n_nodes = draw(st.integers(1, 4))
    objs: list[dict] = [node(f"n{i}", cpu=8, memory="32Gi", scalars={"nvidia.com/gpu": "4"})
                        for i in range(n_nodes)]
    objs += [priority_class("low", 10), priority_class("high", 1000)]
    names = [f"q{i}" for i in range(draw(st.integers(2, 4)))]
    if hierarchical:
        objs += [queue("root"), queue("pa", parent="root", deserved={"cpu": "8"}),
                 queue("pb", parent="root", deserved={"cpu": "8"})]
    for i, q in enumerate(names):
        spec: dict[str, Any] = {}
        des = draw(st.sampled_from([None, "2", "4", "8"]))
        if des:
            spec["deserved"] = {"cpu": des, "nvidia.com/gpu": "2"}
        if draw(st.integers(0, 4)) == 0:
            spec["guarantee"] = {"cpu": "1"}
        if hierarchical:
            spec["parent"] = "pa" if i % 2 else "pb"
        objs.append(queue(q, **spec))
    free = [8] * n_nodes
    for g in range(draw(st.integers(1, 12))):
        q = draw(st.sampled_from(names))
        size = draw(st.integers(1, 4))
        min_member = draw(st.integers(1, size))
        cpu = draw(st.sampled_from([1, 2, 4]))
        gpu = draw(st.sampled_from([None, "1"]))
        extra = {"scalars": {"nvidia.com/gpu": gpu}} if gpu else {}
        pc = draw(st.sampled_from(["", "low", "high"]))
        if draw(st.booleans()):
            spots = first_fit(free, size, cpu)
            if spots is None:
                continue
            objs.append(podgroup(f"g{g}", queue=q, min_member=min_member, phase="Running",
                                 min_resources={"cpu": str(min_member * cpu)}, priority_class=pc))
            objs += [pod(f"g{g}-{t}", f"g{g}", cpu=cpu, memory="1Gi", node_name=f"n{at}", **extra)
                     for t, at in enumerate(spots)]
        else:
            objs.append(podgroup(f"g{g}", queue=q, min_member=min_member, phase="Inqueue",
                                 min_resources={"cpu": str(min_member * cpu)}, priority_class=pc))
            objs += [pod(f"g{g}-{t}", f"g{g}", cpu=cpu, memory="1Gi", **extra) for t in range(size)]
    return objs, hierarchical


def _decide(objs: list[dict], conf: str) -> tuple[Any, dict[str, list[str]]]:
    result = cycle(objs, conf)
    assert result.session is not None
    return result.to_json(), result.session.explanations


def _count_searches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys of the tasks reclaim searches victims for, in order (reclaim._search wrapped)."""
    searched: list[str] = []
    real = reclaim._search

    def count(ssn: Any, job: Any, task: Any, *args: Any) -> Any:
        searched.append(task.key)
        return real(ssn, job, task, *args)

    monkeypatch.setattr(reclaim, "_search", count)
    return searched


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(case=contended(), guards=st.sampled_from(["", "gangAtomicVictims: true", "minRuntime: 600"]))
def test_skipping_repeated_searches_decides_and_explains_as_the_full_search(
        case: tuple[list[dict], bool], guards: str, monkeypatch: pytest.MonkeyPatch) -> None:
    objs, hierarchical = case
    conf = _conf(hierarchical, guards)
    monkeypatch.setattr(reclaim, "SKIP_REPEATS", True)
    fast = _decide(objs, conf)
    monkeypatch.setattr(reclaim, "SKIP_REPEATS", False)
    full = _decide(objs, conf)
    assert fast[0] == full[0]
    assert fast[1] == full[1]
    assert list(fast[1]) == list(full[1])


def test_a_gang_of_alike_tasks_is_searched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """`hog` runs at its deserved on the one node (nothing to reclaim); `poor` waits with a gang of
    three alike tasks: the first task's search fails, the other two are not searched, and all three
    carry the search's explanation."""
    objs = [node("n0", cpu=8, memory="32Gi"),
            queue("hog", deserved={"cpu": "8"}), queue("poor", deserved={"cpu": "4"}),
            podgroup("h", queue="hog", min_member=4, phase="Running")]
    objs += [pod(f"h-{i}", "h", cpu=2, memory="1Gi", node_name="n0") for i in range(4)]
    objs += [podgroup("a", queue="poor", min_member=3, min_resources={"cpu": "6"})]
    objs += [pod(f"a-{i}", "a", cpu=2, memory="1Gi") for i in range(3)]
    conf = _conf(False, "")
    searched = _count_searches(monkeypatch)
    fast = _decide(objs, conf)
    assert searched == ["ns/a-0"]
    said = fast[1]
    reclaim_said = [m for m in said["ns/a-0"] if m.startswith("capacity found no task to reclaim")]
    assert reclaim_said
    assert all(reclaim_said[0] in said[f"ns/a-{i}"] for i in (1, 2))
    searched.clear()
    monkeypatch.setattr(reclaim, "SKIP_REPEATS", False)
    assert _decide(objs, conf) == fast
    assert searched == ["ns/a-0", "ns/a-1", "ns/a-2"]


def test_alike_jobs_of_a_queue_are_searched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two waiting gangs of `poor` ask the same (same request, same nodes) while nothing can be
    reclaimed: only the first job's first task is searched; a gang of `other` asks from another queue
    and is searched itself."""
    objs = [node("n0", cpu=8, memory="32Gi"),
            queue("hog", deserved={"cpu": "8"}), queue("poor", deserved={"cpu": "4"}),
            queue("other", deserved={"cpu": "4"}),
            podgroup("h", queue="hog", min_member=4, phase="Running")]
    objs += [pod(f"h-{i}", "h", cpu=2, memory="1Gi", node_name="n0") for i in range(4)]
    for g, q in (("a", "poor"), ("b", "poor"), ("c", "other")):
        objs += [podgroup(g, queue=q, min_member=2, min_resources={"cpu": "4"})]
        objs += [pod(f"{g}-{i}", g, cpu=2, memory="1Gi") for i in range(2)]
    conf = _conf(False, "")
    searched = _count_searches(monkeypatch)
    fast = _decide(objs, conf)
    assert sorted(searched) == ["ns/a-0", "ns/c-0"]
    searched.clear()
    monkeypatch.setattr(reclaim, "SKIP_REPEATS", False)
    assert _decide(objs, conf) == fast
    assert len(searched) == 6
