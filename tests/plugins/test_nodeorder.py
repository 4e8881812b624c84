"""nodeorder: kube-scheduler score plugins, integer arithmetic checked by hand, and Volcano's weights."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import TaskInfo
from apportion.framework.session import Session
from apportion.plugins.nodeorder import NodeOrderPlugin

import k8s

GI = 1024**3
MI = 1024**2
ALL_OFF = {
    "leastrequested.weight": 0,
    "mostrequested.weight": 0,
    "balancedresource.weight": 0,
    "nodeaffinity.weight": 0,
    "podaffinity.weight": 0,
    "tainttoleration.weight": 0,
    "imagelocality.weight": 0,
    "podtopologyspread.weight": 0,
}


def _session(objs: list[dict], **weights: Any) -> Session:
    args = {**ALL_OFF, **weights}
    conf = k8s.conf("enqueue, allocate", ["priority", "gang"], ["predicates", {"name": "nodeorder", "arguments": args}])
    return k8s.session(objs, conf)


def _task(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def _plugin(ssn: Session) -> NodeOrderPlugin:
    plugin = next(p for _, p in ssn.plugins if p.name == "nodeorder")
    assert isinstance(plugin, NodeOrderPlugin)
    return plugin


def _scores(objs: list[dict], pod: str = "p", **weights: Any) -> list[float]:
    ssn = _session(objs, **weights)
    return list(_plugin(ssn).node_order(_task(ssn, pod), np.arange(len(ssn.nodes))))


def _used_node() -> list[dict]:
    """A 4-cpu/8Gi node with one running pod of 1 cpu/1Gi, and a pending pod of 1 cpu/1Gi."""
    return [
        k8s.node("n1", cpu=4, memory="8Gi"),
        k8s.queue("default"),
        k8s.podgroup("old", phase="Running"),
        k8s.pod("run", "old", cpu=1, memory="1Gi", node_name="n1"),
        k8s.podgroup("pg"),
        k8s.pod("p", "pg", cpu=1, memory="1Gi"),
    ]


# ---------------------------------------------------------------------- NodeResourcesFit
def test_least_allocated_integer_arithmetic() -> None:
    # requested = running 1000m + pod 1000m = 2000m of 4000m; memory 1Gi + 1Gi = 2Gi of 8Gi.
    cpu = ((4000 - 2000) * 100) // 4000  # 50
    mem = ((8 * GI - 2 * GI) * 100) // (8 * GI)  # 75
    expected = (cpu * 50 + mem * 50) // (50 + 50)  # 62 (62.5 truncated)
    assert expected == 62
    assert _scores(_used_node(), **{"leastrequested.weight": 1}) == [62.0]
    assert _scores(_used_node(), **{"leastrequested.weight": 3}) == [186.0]


def test_least_allocated_truncates_each_step() -> None:
    objs = [k8s.node("n1", cpu=3, memory="7Gi"), k8s.queue("default"), k8s.podgroup("pg"),
            k8s.pod("p", "pg", cpu=1, memory="1Gi")]
    cpu = ((3000 - 1000) * 100) // 3000  # 66 (66.7)
    mem = ((7 * GI - 1 * GI) * 100) // (7 * GI)  # 85 (85.7)
    assert (cpu, mem) == (66, 85)
    assert _scores(objs, **{"leastrequested.weight": 1}) == [float((cpu * 50 + mem * 50) // 100)]  # 75


def test_least_allocated_uses_non_zero_defaults() -> None:
    # Neither pod sets requests: each counts as 100m cpu and 200Mi memory.
    objs = [k8s.node("n1", cpu=1, memory="1Gi"), k8s.queue("default"), k8s.podgroup("old", phase="Running"),
            k8s.pod("run", "old", cpu=0, memory="", node_name="n1"),
            k8s.podgroup("pg"), k8s.pod("p", "pg", cpu=0, memory="")]
    cpu = ((1000 - 200) * 100) // 1000  # 80
    mem = ((GI - 400 * MI) * 100) // GI  # 60 (60.9)
    assert _scores(objs, **{"leastrequested.weight": 1}) == [float((cpu + mem) // 2)]


def test_least_allocated_over_capacity_scores_zero() -> None:
    objs = [k8s.node("n1", cpu=1, memory="1Gi"), k8s.queue("default"), k8s.podgroup("pg"),
            k8s.pod("p", "pg", cpu=2, memory="512Mi")]
    mem = ((GI - 512 * MI) * 100) // GI  # 50; cpu is over capacity -> 0
    assert _scores(objs, **{"leastrequested.weight": 1}) == [float((0 * 50 + mem * 50) // 100)]


def test_most_allocated_weight() -> None:
    cpu = (2000 * 100) // 4000  # 50
    mem = (2 * GI * 100) // (8 * GI)  # 25
    assert _scores(_used_node(), **{"mostrequested.weight": 2}) == [2.0 * ((cpu + mem) // 2)]  # 2 x 37


def test_most_allocated_caps_at_capacity() -> None:
    objs = [k8s.node("n1", cpu=1, memory="1Gi"), k8s.queue("default"), k8s.podgroup("pg"),
            k8s.pod("p", "pg", cpu=2, memory="512Mi")]
    assert _scores(objs, **{"mostrequested.weight": 1}) == [float((100 + 50) // 2)]


def test_most_allocated_packs_and_least_allocated_spreads() -> None:
    objs = [k8s.node("n1"), k8s.node("n2"), k8s.queue("default"), k8s.podgroup("pg", min_member=3),
            *(k8s.pod(f"p-{i}", "pg", cpu=1, memory="1Gi") for i in range(3))]

    def run(**weights: Any) -> list[str]:
        args = {**ALL_OFF, **weights}
        conf = k8s.conf("enqueue, allocate", ["priority", "gang"],
                        ["predicates", {"name": "nodeorder", "arguments": args}])
        res = k8s.cycle(objs, conf)
        return [res.binds[f"ns/p-{i}"] for i in range(3)]

    # Ties go to the smaller name; the node view sees the earlier placements of the session.
    assert run(**{"leastrequested.weight": 1}) == ["n1", "n2", "n1"]
    assert run(**{"mostrequested.weight": 1}) == ["n1", "n1", "n1"]


# ---------------------------------------------------------------------- BalancedAllocation
def test_balanced_allocation_two_resources() -> None:
    # actual requests: cpu 2000/4000 = 0.5, memory 2Gi/8Gi = 0.25; std = |0.5 - 0.25| / 2 = 0.125
    assert int((1 - abs(0.5 - 0.25) / 2) * 100) == 87
    assert _scores(_used_node(), **{"balancedresource.weight": 1}) == [87.0]


def test_balanced_allocation_with_gpu() -> None:
    objs = [k8s.node("n1", cpu=8, memory="16Gi", scalars={"nvidia.com/gpu": "4"}),
            k8s.queue("default"), k8s.podgroup("old", phase="Running"),
            k8s.pod("run", "old", cpu=0, memory="", node_name="n1", scalars={"nvidia.com/gpu": "2"}),
            k8s.podgroup("pg"), k8s.pod("p", "pg", cpu=2, memory="4Gi", scalars={"nvidia.com/gpu": "1"})]
    f = [2000 / 8000, (4 * GI) / (16 * GI), 3 / 4]
    mean = (f[0] + f[1] + f[2]) / 3
    std = math.sqrt(sum((x - mean) ** 2 for x in f) / 3)
    assert int((1 - std) * 100) == 76
    assert _scores(objs, **{"balancedresource.weight": 1}) == [76.0]
    # A pod without a GPU request is scored on cpu and memory only: 0.25 and 0.25 -> 100.
    objs[-1] = k8s.pod("p", "pg", cpu=2, memory="4Gi")
    assert _scores(objs, **{"balancedresource.weight": 1}) == [100.0]


def test_balanced_allocation_skips_best_effort_pods() -> None:
    objs = [*_used_node()[:-1], k8s.pod("p", "pg", cpu=0, memory="")]
    assert _scores(objs, **{"balancedresource.weight": 1}) == [0.0]


def test_balanced_fraction_capped_at_one() -> None:
    objs = [k8s.node("n1", cpu=1, memory="4Gi"), k8s.queue("default"), k8s.podgroup("pg"),
            k8s.pod("p", "pg", cpu=2, memory="1Gi")]
    # cpu fraction 2.0 -> 1; memory 0.25; std = 0.375 -> 62.5 -> 62
    assert _scores(objs, **{"balancedresource.weight": 1}) == [62.0]


# ---------------------------------------------------------------------- NodeAffinity (preferred)
def _pref(weight: int, key: str, op: str, values: list[str] | None = None) -> dict:
    return {"weight": weight, "preference": {"matchExpressions": [{"key": key, "operator": op, "values": values or []}]}}


def _affinity_objs(*prefs: dict) -> list[dict]:
    return [
        k8s.node("n1", labels={"zone": "a"}),
        k8s.node("n2", labels={"zone": "b", "disk": "ssd"}),
        k8s.node("n3"),
        k8s.queue("default"), k8s.podgroup("pg"),
        k8s.pod("p", "pg", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": list(prefs)}}),
    ]


def test_node_affinity_preferred_normalised() -> None:
    objs = _affinity_objs(_pref(10, "zone", "In", ["a"]), _pref(30, "disk", "In", ["ssd"]), _pref(5, "zone", "Exists"))
    raw = [10 + 5, 30 + 5, 0]
    normalised = [100 * r // max(raw) for r in raw]  # [42, 100, 0]
    assert _scores(objs, **{"nodeaffinity.weight": 2}) == [2.0 * s for s in normalised]


def test_node_affinity_normalised_over_candidates_only() -> None:
    objs = _affinity_objs(_pref(10, "zone", "In", ["a"]), _pref(30, "disk", "In", ["ssd"]))
    ssn = _session(objs, **{"nodeaffinity.weight": 1})
    # Without n2 among the candidates, n1's raw 10 is the maximum and becomes 100.
    assert list(_plugin(ssn).node_order(_task(ssn, "p"), np.array([0, 2]))) == [100.0, 0.0]


def test_node_affinity_prefers_matching_node_in_cycle() -> None:
    objs = _affinity_objs(_pref(50, "zone", "In", ["b"]))
    conf = k8s.conf("enqueue, allocate", ["priority", "gang"], ["predicates", "nodeorder"])
    assert k8s.cycle(objs, conf).binds == {"ns/p": "n2"}


# ---------------------------------------------------------------------- TaintToleration
def _taint_objs(tolerations: list[dict]) -> list[dict]:
    soft = "PreferNoSchedule"
    return [
        k8s.node("n1", taints=[{"key": "t1", "value": "", "effect": soft}, {"key": "t2", "value": "", "effect": soft}]),
        k8s.node("n2", taints=[{"key": "t2", "value": "", "effect": soft}]),
        k8s.node("n3"),
        k8s.queue("default"), k8s.podgroup("pg"),
        k8s.pod("p", "pg", tolerations=tolerations),
    ]


@pytest.mark.parametrize(
    ("tolerations", "counts"),
    [
        ([], [2, 1, 0]),
        ([{"key": "t1", "operator": "Exists"}], [1, 1, 0]),
        ([{"key": "t2", "operator": "Exists", "effect": "NoSchedule"}], [2, 1, 0]),  # wrong effect
        ([{"key": "t2", "operator": "Exists", "effect": "PreferNoSchedule"}], [1, 0, 0]),
        ([{"operator": "Exists"}], [0, 0, 0]),
    ],
)
def test_taint_toleration_score_reversed(tolerations: list[dict], counts: list[int]) -> None:
    m = max(counts)
    expected = [100 - 100 * c // m for c in counts] if m else [100, 100, 100]
    assert _scores(_taint_objs(tolerations), **{"tainttoleration.weight": 3}) == [3.0 * s for s in expected]


# ---------------------------------------------------------------------- weights and the node view
def test_weight_zero_means_no_contribution() -> None:
    objs = _affinity_objs(_pref(10, "zone", "In", ["a"]))
    assert _scores(objs) == [0.0, 0.0, 0.0]


def test_default_weights_sum_every_plugin() -> None:
    objs = _used_node()
    conf = k8s.conf("enqueue, allocate", ["priority", "gang"], ["predicates", "nodeorder"])
    ssn = k8s.session(objs, conf)
    # least 1 x 62 + balanced 1 x 87 + taint 3 x 100 (no taints: reversed normalisation gives 100);
    # node affinity has no preferred terms; image locality, pod affinity and spread score 0.
    assert list(_plugin(ssn).node_order(_task(ssn, "p"), np.array([0]))) == [62.0 + 87.0 + 300.0]


def test_wrong_weight_type_warns_and_keeps_default() -> None:
    ssn = _session(_used_node(), **{"leastrequested.weight": "2"})
    assert _plugin(ssn).w.least_requested == 1
    assert any("leastrequested.weight" in w for w in ssn.warnings)


def test_eviction_removes_pod_from_scores() -> None:
    ssn = _session(_used_node(), **{"leastrequested.weight": 1})
    task = _task(ssn, "p")
    assert list(_plugin(ssn).node_order(task, np.array([0]))) == [62.0]
    ssn.do_evict(_task(ssn, "run"), "test")
    # Empty node again: cpu (3000 x 100) / 4000 = 75, memory (7Gi x 100) / 8Gi = 87 -> 81
    assert list(_plugin(ssn).node_order(task, np.array([0]))) == [float((75 + 87) // 2)]


# ---------------------------------------------------------------------- fast paths agree with the general ones
def test_fast_paths_match_general_arithmetic() -> None:
    rng = np.random.default_rng(7)
    ssn = _session(_used_node(), **{"leastrequested.weight": 1})
    plugin = _plugin(ssn)
    n = 5000
    cap_cpu = rng.integers(1, 256_000, n).astype(float)
    cap_mem = rng.integers(1, 2**41, n).astype(float)
    req_cpu = np.floor(cap_cpu * rng.uniform(0, 1.3, n))
    req_mem = np.floor(cap_mem * rng.uniform(0, 1.3, n))
    plugin.cpu_mem_everywhere = True
    fast = plugin._least(req_cpu, cap_cpu, req_mem, cap_mem)
    plugin.cpu_mem_everywhere = False
    general = plugin._least(req_cpu, cap_cpu, req_mem, cap_mem)
    assert np.array_equal(fast, general)
    # and both equal Python's exact integer arithmetic
    for i in range(0, n, 97):
        c = 0 if req_cpu[i] > cap_cpu[i] else (int(cap_cpu[i]) - int(req_cpu[i])) * 100 // int(cap_cpu[i])
        m = 0 if req_mem[i] > cap_mem[i] else (int(cap_mem[i]) - int(req_mem[i])) * 100 // int(cap_mem[i])
        assert fast[i] == (c * 50 + m * 50) // 100
    alloc = np.stack([cap_cpu, cap_mem, np.zeros(n)], axis=1)
    sums = np.zeros((n, 5))
    sums[:, 2], sums[:, 3] = req_cpu, req_mem
    plugin.cpu_mem_everywhere = True
    fast = plugin._balanced(alloc, sums, 0.0, 1.0, 0.0)
    plugin.cpu_mem_everywhere = False
    assert np.array_equal(fast, plugin._balanced(alloc, sums, 0.0, 1.0, 0.0))


def test_node_without_memory_allocatable_scores_cpu_only() -> None:
    objs = [k8s.node("n1", cpu=4, memory="0"), k8s.queue("default"), k8s.podgroup("pg"),
            k8s.pod("p", "pg", cpu=1, memory="")]
    ssn = _session(objs, **{"leastrequested.weight": 1, "balancedresource.weight": 1})
    assert not _plugin(ssn).cpu_mem_everywhere
    # LeastAllocated: memory has no allocatable, so only cpu counts: (4000 - 1000) x 100 / 4000 = 75.
    # BalancedAllocation: one fraction only -> std 0 -> 100.
    assert list(_plugin(ssn).node_order(_task(ssn, "p"), np.array([0]))) == [75.0 + 100.0]


# ---------------------------------------------------------------------- the one-node score equals the array score
class _View:
    """A node view with given per-node sums and one task's requests (what node_order reads of it)."""

    def __init__(self, sums: np.ndarray, requests: tuple[float, float, float, float, float]) -> None:
        self.sums = sums
        self._requests = requests

    def requests(self, task: TaskInfo) -> tuple[float, float, float, float, float]:
        return self._requests


_AMOUNTS = st.one_of(st.integers(0, 2**41).map(float), st.floats(0, 1e13, allow_nan=False),
                     st.sampled_from([0.0, 1.0, 1000.0, 8.0, 2.0 * GI, 0.1]))


@settings(max_examples=300, deadline=None)
@given(caps=st.lists(st.tuples(st.integers(1, 256_000).map(float), st.integers(1, 2**41).map(float),
                               st.one_of(st.just(0.0), st.integers(1, 16).map(float), st.floats(0.5, 64))),
                     min_size=1, max_size=12),
       used=st.lists(st.tuples(_AMOUNTS, _AMOUNTS, _AMOUNTS, _AMOUNTS, _AMOUNTS), min_size=12, max_size=12),
       request=st.tuples(_AMOUNTS, _AMOUNTS, _AMOUNTS, _AMOUNTS, st.one_of(st.just(0.0), _AMOUNTS)),
       weights=st.sampled_from([(1, 1, 3), (1, 0, 0), (0, 1, 0), (2, 3, 3), (0, 1, 3)]))
def test_one_node_score_is_the_array_score_bit_for_bit(caps: list[tuple[float, float, float]],
                                                       used: list[tuple[float, ...]],
                                                       request: tuple[float, float, float, float, float],
                                                       weights: tuple[int, int, int]) -> None:
    """node_order_row (the placement cache's one-node refresh: LeastAllocated, BalancedAllocation over
    two or three resources, TaintToleration in plain floats) and the three-fraction column form (every
    node with GPUs) give the general array code's float on every row, GPU requests and nodes without
    GPUs included: the scores feed ties broken by node name."""
    ssn = _session(_used_node(), **{"leastrequested.weight": weights[0], "balancedresource.weight": weights[1],
                                    "tainttoleration.weight": weights[2]})
    plugin = _plugin(ssn)
    task = _task(ssn, "p")
    alloc = np.array(caps, dtype=float)
    plugin.alloc, plugin._alloc_rows = alloc, alloc.tolist()
    plugin.view = _View(np.array(used[:len(caps)], dtype=float), request)  # type: ignore[assignment]
    plugin.three_everywhere = False
    full = plugin.node_order(task, np.arange(len(caps)))  # balanced_score, the general array code
    plugin.three_everywhere = bool(np.all(alloc > 0))
    assert plugin.node_order(task, np.arange(len(caps))).tobytes() == full.tobytes()  # its column form
    for row in range(len(caps)):
        got = plugin.node_order_row(task, row)
        assert isinstance(got, float)
        assert np.float64(got).tobytes() == full[row].tobytes(), (row, got, full[row])
