"""predicates: pod count, NodeUnschedulable, NodeAffinity, TaintToleration, switches and why-pending text."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from apportion.cluster.model import TaskInfo
from apportion.framework import extension as ep
from apportion.framework.session import Session

import k8s

ALLOC = "enqueue, allocate"


def _conf(**pred_args: Any):
    pred: dict[str, Any] = {"name": "predicates"}
    if pred_args:
        pred["arguments"] = pred_args
    return k8s.conf(ALLOC, ["priority", "gang"], [pred])


def _task(ssn: Session, name: str) -> TaskInfo:
    for job in ssn.jobs.values():
        for t in job.tasks.values():
            if t.name == name:
                return t
    raise KeyError(name)


def _feasible(objs: list[dict], pod: str = "p", **pred_args: Any) -> tuple[list[str], list[tuple[str, int]]]:
    ssn = k8s.session(objs, _conf(**pred_args))
    rows, summary = ssn.predicate_for_allocate(_task(ssn, pod))
    return [ssn.nodes[int(r)].name for r in rows], summary


def _pending(pod: dict) -> list[dict]:
    return [k8s.queue("default"), k8s.podgroup("pg"), pod]


LABELLED = [
    k8s.node("n1", labels={"zone": "a", "gen": "3"}),
    k8s.node("n2", labels={"zone": "b", "gen": "5"}),
    k8s.node("n3", labels={"gen": "x"}),
]


def _affinity(*terms: dict) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


# ---------------------------------------------------------------------- nodeSelector and node affinity
def test_node_selector_binds_only_to_matching_node() -> None:
    objs = [*LABELLED, *_pending(k8s.pod("p", "pg", nodeSelector={"zone": "b"}))]
    res = k8s.cycle(objs, _conf())
    assert res.binds == {"ns/p": "n2"}


def test_node_selector_needs_every_pair() -> None:
    names, _ = _feasible([*LABELLED, *_pending(k8s.pod("p", "pg", nodeSelector={"zone": "a", "gen": "5"}))])
    assert names == []


@pytest.mark.parametrize(
    ("operator", "values", "expected"),
    [
        ("In", ["a", "b"], ["n1", "n2"]),
        ("NotIn", ["a"], ["n2", "n3"]),  # a node without the label matches NotIn
        ("Exists", [], ["n1", "n2"]),
        ("DoesNotExist", [], ["n3"]),
    ],
)
def test_match_expression_operators_on_zone(operator: str, values: list[str], expected: list[str]) -> None:
    term = {"matchExpressions": [{"key": "zone", "operator": operator, "values": values}]}
    names, _ = _feasible([*LABELLED, *_pending(k8s.pod("p", "pg", affinity=_affinity(term)))])
    assert names == expected


@pytest.mark.parametrize(
    ("operator", "value", "expected"),
    [
        ("Gt", "4", ["n2"]),  # 5 > 4; n3's "x" is not an integer, so it never matches Gt/Lt
        ("Lt", "4", ["n1"]),
        ("Gt", "2", ["n1", "n2"]),
        ("Lt", "-1", []),
    ],
)
def test_gt_lt_compare_label_as_int64(operator: str, value: str, expected: list[str]) -> None:
    term = {"matchExpressions": [{"key": "gen", "operator": operator, "values": [value]}]}
    names, _ = _feasible([*LABELLED, *_pending(k8s.pod("p", "pg", affinity=_affinity(term)))])
    assert names == expected


def test_invalid_requirement_makes_only_its_term_fail() -> None:
    bad = {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["three"]}]}
    good = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
    names, _ = _feasible([*LABELLED, *_pending(k8s.pod("p", "pg", affinity=_affinity(bad, good)))])
    assert names == ["n2"]
    in_without_values = {"matchExpressions": [{"key": "zone", "operator": "In", "values": []}]}
    names, _ = _feasible([*LABELLED, *_pending(k8s.pod("p", "pg", affinity=_affinity(in_without_values)))])
    assert names == []


def test_terms_are_ored_and_requirements_anded() -> None:
    t1 = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]},
                               {"key": "gen", "operator": "In", "values": ["5"]}]}  # no node has both
    t2 = {"matchExpressions": [{"key": "gen", "operator": "In", "values": ["x"]}]}
    names, _ = _feasible([*LABELLED, *_pending(k8s.pod("p", "pg", affinity=_affinity(t1, t2)))])
    assert names == ["n3"]


def test_empty_term_and_empty_term_list_match_nothing() -> None:
    names, _ = _feasible([*LABELLED, *_pending(k8s.pod("p", "pg", affinity=_affinity({})))])
    assert names == []
    names, _ = _feasible([*LABELLED, *_pending(k8s.pod("p", "pg", affinity=_affinity()))])
    assert names == []


def test_node_selector_and_required_terms_both_apply() -> None:
    term = {"matchExpressions": [{"key": "gen", "operator": "Exists"}]}
    pod = k8s.pod("p", "pg", nodeSelector={"zone": "a"}, affinity=_affinity(term))
    names, _ = _feasible([*LABELLED, *_pending(pod)])
    assert names == ["n1"]


@pytest.mark.parametrize(
    ("operator", "values", "expected"),
    [
        ("In", ["n2"], ["n2"]),
        ("NotIn", ["n2"], ["n1", "n3"]),
        ("In", ["n1", "n2"], []),  # node field selectors take exactly one value: the term is invalid
        ("Exists", [], []),  # only In/NotIn are valid on fields
    ],
)
def test_match_fields_on_metadata_name(operator: str, values: list[str], expected: list[str]) -> None:
    term = {"matchFields": [{"key": "metadata.name", "operator": operator, "values": values}]}
    names, _ = _feasible([*LABELLED, *_pending(k8s.pod("p", "pg", affinity=_affinity(term)))])
    assert names == expected


def test_match_fields_other_key_is_invalid() -> None:
    term = {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["n1"]}]}
    names, _ = _feasible([*LABELLED, *_pending(k8s.pod("p", "pg", affinity=_affinity(term)))])
    assert names == []


def test_hostname_label_is_set_for_every_node() -> None:
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n3"]}]}
    names, _ = _feasible([*LABELLED, *_pending(k8s.pod("p", "pg", affinity=_affinity(term)))])
    assert names == ["n3"]


def test_conflicting_metadata_name_terms_fail_in_pre_predicate() -> None:
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]},
                            {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}
    objs = [*LABELLED, *_pending(k8s.pod("p", "pg", affinity=_affinity(term)))]
    ssn = k8s.session(objs, _conf())
    err = ssn.pre_predicate(_task(ssn, "p"))
    assert err is not None and "metadata.name" in err
    res = k8s.cycle(objs, _conf())
    assert res.binds == {}
    assert "3 node(s) didn't match Pod's node affinity: its required metadata.name terms conflict" in res.events[0].message


# ---------------------------------------------------------------------- taints and tolerations
TAINTED = [
    k8s.node("n1", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
    k8s.node("n2", taints=[{"key": "maint", "value": "", "effect": "NoExecute"}]),
    k8s.node("n3", taints=[{"key": "soft", "value": "yes", "effect": "PreferNoSchedule"}]),
]


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], ["n3"]),  # PreferNoSchedule never filters
        ([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}], ["n1", "n3"]),
        ([{"key": "dedicated", "operator": "Equal", "value": "cpu"}], ["n3"]),  # value differs
        ([{"key": "dedicated", "operator": "Exists"}], ["n1", "n3"]),  # any value, any effect
        ([{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}], ["n3"]),  # effect differs
        ([{"key": "maint", "operator": "Exists", "effect": "NoExecute"}], ["n2", "n3"]),
        ([{"operator": "Exists"}], ["n1", "n2", "n3"]),  # empty key + Exists tolerates everything
    ],
)
def test_taint_toleration_filter(tolerations: list[dict], expected: list[str]) -> None:
    names, _ = _feasible([*TAINTED, *_pending(k8s.pod("p", "pg", tolerations=tolerations))])
    assert names == expected


def test_untolerated_taint_reason_names_the_taint() -> None:
    _, summary = _feasible([*TAINTED, *_pending(k8s.pod("p", "pg"))])
    assert ("had untolerated taint {dedicated: gpu}", 1) in summary
    assert ("had untolerated taint {maint: }", 1) in summary


def test_first_untolerated_taint_is_reported() -> None:
    node = k8s.node("n1", taints=[{"key": "a", "value": "1", "effect": "NoSchedule"},
                                  {"key": "b", "value": "2", "effect": "NoSchedule"}])
    _, summary = _feasible([node, *_pending(k8s.pod("p", "pg"))])
    assert summary == [("had untolerated taint {a: 1}", 1)]
    tolerate_a = [{"key": "a", "operator": "Exists"}]
    _, summary = _feasible([node, *_pending(k8s.pod("p", "pg", tolerations=tolerate_a))])
    assert summary == [("had untolerated taint {b: 2}", 1)]


# ---------------------------------------------------------------------- unschedulable nodes
def test_unschedulable_node_rejected_unless_tolerated() -> None:
    nodes = [k8s.node("n1", unschedulable=True), k8s.node("n2", cpu=1)]
    big = k8s.pod("p", "pg", cpu=2)
    res = k8s.cycle([*nodes, *_pending(big)], _conf())
    assert res.binds == {}
    assert "1 node(s) were unschedulable" in res.events[0].message
    tol = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    res = k8s.cycle([*nodes, *_pending(k8s.pod("p", "pg", cpu=2, tolerations=tol))], _conf())
    assert res.binds == {"ns/p": "n1"}


def test_first_unresolvable_filter_stops_the_node() -> None:
    node = k8s.node("n1", unschedulable=True, labels={"zone": "a"},
                    taints=[{"key": "x", "value": "y", "effect": "NoSchedule"}])
    _, summary = _feasible([node, *_pending(k8s.pod("p", "pg", nodeSelector={"zone": "b"}))])
    assert summary == [("were unschedulable", 1)]


# ---------------------------------------------------------------------- pod count
def _full_node_objs() -> list[dict]:
    # n1 has pods allocatable 2: one running pod and one releasing pod. FutureIdle gives the releasing
    # pod's slot back (resource fit passes), but the node view still holds two pods.
    return [
        k8s.node("n1", pods=2),
        k8s.queue("default"),
        k8s.podgroup("old", phase="Running"),
        k8s.pod("run", "old", node_name="n1"),
        k8s.pod("rel", "old", node_name="n1", deleting=True),
        k8s.podgroup("pg"),
        k8s.pod("p", "pg"),
    ]


def test_pod_count_is_plain_unschedulable() -> None:
    ssn = k8s.session(_full_node_objs(), _conf())
    task = _task(ssn, "p")
    rows, summary = ssn.predicate_for_allocate(task)
    assert len(rows) == 0
    assert summary == [("had too many pods (pods allocatable reached)", 1)]
    pf = ssn.plugin_predicates(task, np.arange(1))
    assert not pf.ok[0] and not pf.unresolvable[0]
    # reclaim/preempt still see the node: an eviction could make room.
    assert list(ssn.predicate_for_preempt(task)) == [0]


def test_pod_count_event_for_pending_pod() -> None:
    res = k8s.cycle(_full_node_objs(), _conf())
    assert res.binds == {}
    ev = {e.object: e.message for e in res.events}
    assert "0/1 nodes are available: 1 node(s) had too many pods (pods allocatable reached)" in ev["ns/pg"]


def test_in_session_eviction_leaves_the_node_view() -> None:
    ssn = k8s.session(_full_node_objs(), _conf())
    task = _task(ssn, "p")
    assert len(ssn.predicate_for_allocate(task)[0]) == 0
    ssn.do_evict(_task(ssn, "run"), "test")
    assert list(ssn.predicate_for_allocate(task)[0]) == [0]
    ssn.undo_evict(_task(ssn, "run"))
    assert len(ssn.predicate_for_allocate(task)[0]) == 0


def test_in_session_placements_count_including_pipelined() -> None:
    objs = [k8s.node("n1", pods=110), k8s.queue("default"), k8s.podgroup("pg", min_member=1),
            k8s.pod("p", "pg"), k8s.pod("q", "pg")]
    ssn = k8s.session(objs, _conf())
    plugin = next(p for _, p in ssn.plugins if p.name == "predicates")
    assert int(plugin.view.count[0]) == 0
    ssn.do_pipeline(_task(ssn, "p"), 0)
    ssn.do_allocate(_task(ssn, "q"), 0)
    assert int(plugin.view.count[0]) == 2
    ssn.undo_allocate(_task(ssn, "q"))  # node_name is already cleared when the event fires
    assert int(plugin.view.count[0]) == 1


def test_gang_fills_pod_slots_in_session() -> None:
    objs = [k8s.node("n1", pods=2), k8s.node("n2", pods=1), k8s.queue("default"),
            k8s.podgroup("pg", min_member=3), *(k8s.pod(f"p-{i}", "pg", cpu=1) for i in range(4))]
    res = k8s.cycle(objs, _conf())
    assert sorted(res.binds.values()) == ["n1", "n1", "n2"]


# ---------------------------------------------------------------------- switches
def test_node_affinity_switch_off_ignores_selector() -> None:
    pod = k8s.pod("p", "pg", nodeSelector={"zone": "nowhere"})
    assert _feasible([*LABELLED, *_pending(pod)])[0] == []
    assert _feasible([*LABELLED, *_pending(pod)], **{"predicate.NodeAffinityEnable": False})[0] == ["n1", "n2", "n3"]


def test_taint_switch_off_ignores_taints_but_not_unschedulable() -> None:
    nodes = [*TAINTED, k8s.node("n4", unschedulable=True)]
    names, _ = _feasible([*nodes, *_pending(k8s.pod("p", "pg"))], **{"predicate.TaintTolerationEnable": False})
    assert names == ["n1", "n2", "n3"]


def test_switch_with_wrong_type_keeps_default_and_warns() -> None:
    pod = k8s.pod("p", "pg", nodeSelector={"zone": "nowhere"})
    ssn = k8s.session([*LABELLED, *_pending(pod)], _conf(**{"predicate.NodeAffinityEnable": 3}))
    assert len(ssn.predicate_for_allocate(_task(ssn, "p"))[0]) == 0
    assert any("predicate.NodeAffinityEnable" in w for w in ssn.warnings)


def test_enable_predicate_off_skips_the_plugin() -> None:
    conf = k8s.conf(ALLOC, ["priority", "gang"], [{"name": "predicates", "enablePredicate": False}])
    res = k8s.cycle([k8s.node("n1", unschedulable=True), *_pending(k8s.pod("p", "pg"))], conf)
    assert res.binds == {"ns/p": "n1"}


# ---------------------------------------------------------------------- why-pending and other points
def test_why_pending_names_each_filter_with_counts() -> None:
    nodes = [
        k8s.node("n1", labels={"zone": "a"}, taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        k8s.node("n2", labels={"zone": "a"}, unschedulable=True),
        k8s.node("n3", labels={"zone": "b"}),
        k8s.node("n4", labels={"zone": "b"}),
        k8s.node("n5", labels={"zone": "a"}, cpu=1),
    ]
    res = k8s.cycle([*nodes, *_pending(k8s.pod("p", "pg", cpu=2, nodeSelector={"zone": "a"}))], _conf())
    msg = res.events[0].message
    assert ("0/5 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, "
            "1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) insufficient cpu") in msg
    assert "1 node(s) were unschedulable" in msg


def test_signature_cache_shared_and_results_consistent() -> None:
    pods = [k8s.pod(f"p-{i}", "pg", nodeSelector={"zone": "a"}) for i in range(3)]
    ssn = k8s.session([*LABELLED, k8s.queue("default"), k8s.podgroup("pg", min_member=3), *pods], _conf())
    plugin = next(p for _, p in ssn.plugins if p.name == "predicates")
    for i in range(3):
        rows, _ = ssn.predicate_for_allocate(_task(ssn, f"p-{i}"))
        assert [ssn.nodes[int(r)].name for r in rows] == ["n1"]
    assert len(plugin._built.by_key) == 1


def test_simulate_predicate_and_registration() -> None:
    objs = [*TAINTED, *_pending(k8s.pod("p", "pg"))]
    ssn = k8s.session(objs, _conf())
    task = _task(ssn, "p")
    assert ssn.simulate_predicate(task, 2, {}) is None
    assert ssn.simulate_predicate(task, 0, {}) == "node n1 had untolerated taint {dedicated: gpu}"
    assert "predicates" in ssn.fns[ep.PRE_PREDICATE]
    assert "predicates" not in ssn.fns[ep.NODE_ORDER]  # volume scores are constant: no batch node order
