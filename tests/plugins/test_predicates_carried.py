"""predicates: signatures carried to the next session over the same node index say what fresh ones say."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_predicates import _conf, _task

from apportion.framework.session import Session
from apportion.plugins import predicates
from apportion.state import check

import k8s

LABELS = st.dictionaries(st.sampled_from(["zone", "gen", "pool"]), st.sampled_from(["a", "b", "3"]), max_size=2)
TAINT = st.fixed_dictionaries({"key": st.sampled_from(["dedicated", "maint"]), "value": st.sampled_from(["", "gpu"]),
                               "effect": st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"])})
TOLERATION = st.one_of(
    st.fixed_dictionaries({"key": st.sampled_from(["dedicated", "maint", "node.kubernetes.io/unschedulable"]),
                           "operator": st.just("Exists")}),
    st.fixed_dictionaries({"key": st.sampled_from(["dedicated", "maint"]), "operator": st.just("Equal"),
                           "value": st.sampled_from(["", "gpu"]), "effect": st.sampled_from(["NoSchedule", ""])}),
)
TERM = st.fixed_dictionaries({"matchExpressions": st.lists(st.fixed_dictionaries({
    "key": st.sampled_from(["zone", "gen"]), "operator": st.sampled_from(["In", "NotIn", "Exists"]),
    "values": st.lists(st.sampled_from(["a", "b", "3"]), min_size=1, max_size=2)}), min_size=1, max_size=2)})
NODE = st.tuples(LABELS, st.lists(TAINT, max_size=2), st.booleans(), st.integers(min_value=1, max_value=3))
POD = st.tuples(LABELS, st.lists(TOLERATION, max_size=2), st.one_of(st.none(), st.lists(TERM, min_size=1, max_size=2)))


def _objs(nodes: list[tuple[Any, ...]], pods: list[tuple[Any, ...]]) -> list[dict]:
    objs = [k8s.node(f"n{i}", labels=lab, taints=taints, unschedulable=unsched, pods=cap)
            for i, (lab, taints, unsched, cap) in enumerate(nodes)]
    objs += [k8s.queue("default"), k8s.podgroup("pg", min_member=len(pods))]
    for i, (sel, tols, terms) in enumerate(pods):
        spec: dict[str, Any] = {"nodeSelector": sel, "tolerations": tols}
        if terms is not None:
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": terms}}}
        objs.append(k8s.pod(f"p{i}", "pg", **spec))
    # a running pod fills node 0's pod count, so the count filter has something to say
    objs.append(k8s.pod("run", None, node_name="n0", phase="Running"))
    return objs


def _sessions(objs_each: list[list[dict]], carry: bool, monkeypatch: pytest.MonkeyPatch) -> list[list[Any]]:
    """What predicates answers for every pending pod in sessions opened one after another over one memo."""
    monkeypatch.setattr(predicates, "CARRY_SIGNATURES", carry)
    memo: dict[str, Any] = {}
    answers = []
    for objs in objs_each:
        snap = k8s.snapshot(*objs)
        snap.memo, snap.nodes_key = memo, "same nodes"
        ssn: Session = k8s.open_session(snap, _conf())
        names = sorted(t.name for j in ssn.jobs.values() for t in j.tasks.values() if not t.node_name)
        answers.append([(n, *_answer(ssn, n)) for n in names])
    return answers


def _answer(ssn: Session, name: str) -> tuple[list[str], list[tuple[str, int]]]:
    rows, summary = ssn.predicate_for_allocate(_task(ssn, name))
    return [ssn.nodes[int(r)].name for r in rows], summary


@settings(max_examples=60, deadline=None)
@given(nodes=st.lists(NODE, min_size=1, max_size=4), first=st.lists(POD, min_size=1, max_size=3),
       second=st.lists(POD, min_size=1, max_size=3))
def test_carried_signatures_answer_as_fresh_ones(nodes: list[Any], first: list[Any], second: list[Any]) -> None:
    # the second session repeats the first's pods and adds its own: some signatures carried, some new
    each = [_objs(nodes, first), _objs(nodes, first + second)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(check.ENV, "1")
        carried = _sessions(each, True, mp)
        plain = _sessions(each, False, mp)
    assert carried == plain


def test_signatures_are_built_once_over_one_node_index(monkeypatch: pytest.MonkeyPatch) -> None:
    # the self-check builds every carried signature again to compare: the counts are the plain run's
    monkeypatch.delenv(check.ENV, raising=False)
    built: list[object] = []
    real = predicates.PredicatesPlugin._build

    def counting(self: predicates.PredicatesPlugin, *args: Any) -> Any:
        built.append(args[1:])
        return real(self, *args)

    monkeypatch.setattr(predicates.PredicatesPlugin, "_build", counting)
    nodes = [({"zone": "a"}, [], False, 3), ({"zone": "b"}, [], False, 3)]
    pods = [({}, [], None), ({"zone": "b"}, [], None)]
    answers = _sessions([_objs(nodes, pods)] * 3, True, monkeypatch)
    assert answers[0] == answers[1] == answers[2]
    assert len(built) == 2  # one per signature, in the first session only
    built.clear()
    _sessions([_objs(nodes, pods)] * 3, False, monkeypatch)
    assert len(built) == 6  # the plain path: every session builds its own
