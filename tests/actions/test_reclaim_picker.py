"""reclaim and preempt pop their queues through the session's picker (capacity's tree picker in tree
mode): the same queues in the same order as the reference scan, so the same evictions and pipelines, on
random trees where reclaim evicts across queues and preempt within them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.framework.session import Session
from apportion.plugins.capacity.drain_subset import DrainPicker
from apportion.plugins.capacity.picker import TreePicker

from k8s import cycle, first_fit, node, pod, podgroup, priority_class, queue

PREEMPT_CONF = """
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
"""
CONF = """
actions: "enqueue, allocate, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
"""


@st.composite
def contended_trees(draw: Any) -> list[dict]:
    """Parents under root, leaves under them (names interleaved or not, deserved or best effort): some
    leaves run gangs that fill the nodes, others wait with gangs that can only start by reclaiming."""
    n_nodes = draw(st.integers(1, 4))
    objs: list[dict] = [node(f"n{i}", cpu=8, memory="32Gi") for i in range(n_nodes)]
    objs += [queue("root"), priority_class("low", 10), priority_class("high", 1000)]
    interleave = draw(st.booleans())
    leaves: list[str] = []
    for p in range(draw(st.integers(1, 3))):
        pname = f"p{p}"
        des = draw(st.sampled_from([None, "4", "8", "16"]))
        objs.append(queue(pname, parent="root", **({"deserved": {"cpu": des}} if des else {})))
        for c in range(draw(st.integers(1, 4))):
            cname = f"q{c}{pname}" if interleave else f"{pname}-l{c}"
            cdes = draw(st.sampled_from([None, "2", "4", "8"]))
            objs.append(queue(cname, parent=pname, **({"deserved": {"cpu": cdes}} if cdes else {})))
            leaves.append(cname)
    free = [8] * n_nodes
    for g in range(draw(st.integers(1, 14))):
        q = draw(st.sampled_from(leaves))
        size = draw(st.integers(1, 3))
        cpu = draw(st.sampled_from([1, 2]))
        pc = draw(st.sampled_from(["", "low", "high"]))
        if draw(st.booleans()):
            # running, where it fits (the dump must be a cluster that could exist)
            spots = first_fit(free, size, cpu)
            if spots is None:
                continue
            objs.append(podgroup(f"g{g}", queue=q, min_member=size, phase="Running",
                                 min_resources={"cpu": str(size * cpu)}, priority_class=pc))
            objs += [pod(f"g{g}-{t}", f"g{g}", cpu=cpu, memory="1Gi", node_name=f"n{at}")
                     for t, at in enumerate(spots)]
        else:
            objs.append(podgroup(f"g{g}", queue=q, min_member=size, phase="Inqueue",
                                 min_resources={"cpu": str(size * cpu)}, priority_class=pc))
            objs += [pod(f"g{g}-{t}", f"g{g}", cpu=cpu, memory="1Gi") for t in range(size)]
    return objs


@pytest.mark.parametrize("conf", [CONF, PREEMPT_CONF], ids=["reclaim", "preempt"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=contended_trees())
def test_evicting_actions_with_the_tree_picker_decide_as_with_the_scan(conf: str, objs: list[dict],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Session, "fast_queue_pickers", True)
    fast = cycle(objs, conf).to_json()
    monkeypatch.setattr(Session, "fast_queue_pickers", False)
    assert fast == cycle(objs, conf).to_json()


def test_reclaim_pops_its_queues_from_the_tree_picker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worked case: `hog` runs over its deserved on the one node, `poor` and `poorer` wait under
    another parent; the picker serves the reclaimers and reclaim evicts from `hog`."""
    objs = [node("n0", cpu=8, memory="32Gi"), queue("root"),
            queue("pa", parent="root", deserved={"cpu": "4"}), queue("pb", parent="root", deserved={"cpu": "4"}),
            queue("hog", parent="pa", deserved={"cpu": "4"}),
            queue("poor", parent="pb", deserved={"cpu": "2"}), queue("poorer", parent="pb", deserved={"cpu": "2"}),
            podgroup("h", queue="hog", phase="Running")]
    objs += [pod(f"h-{i}", "h", cpu=2, memory="1Gi", node_name="n0") for i in range(4)]
    objs += [podgroup("a", queue="poor"), pod("a-0", "a", cpu=2, memory="1Gi"),
             podgroup("b", queue="poorer"), pod("b-0", "b", cpu=2, memory="1Gi")]
    pickers: list[Any] = []
    real = Session.queue_picker

    def record(self: Session, queues: Any) -> Any:
        picker = real(self, queues)
        pickers.append(picker)
        return picker

    monkeypatch.setattr(Session, "queue_picker", record)
    result = cycle(objs, CONF)
    # allocate's and reclaim's pickers are capacity's (the tree picker, built on the first pop; enqueue
    # has nothing pending to admit)
    popped = [p for p in pickers if isinstance(p, DrainPicker) and isinstance(p._full, TreePicker)]
    assert len(popped) >= 2
    assert sorted(result.evictions) == ["ns/h-2", "ns/h-3"]
    assert result.pipelined == {"ns/a-0": "n0", "ns/b-0": "n0"}
    monkeypatch.setattr(Session, "fast_queue_pickers", False)
    assert cycle(objs, CONF).to_json() == result.to_json()
