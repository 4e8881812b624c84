"""An apply is checked by what it changes (service/validate.py), with the whole check's answer: on random
edits of a valid stored set, the incremental check and `ClusterObjects.check` on the whole set accept
the same edits, refuse the others with the same first error, and give the same plans and capacities."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.errors import InputError
from apportion.service.core import plan_capacities
from apportion.service.objects import ClusterObjects, ObjectKey, object_key

GOOD_A = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: proportion\n"
GOOD_B = "actions: \"allocate\"\ntiers:\n- plugins:\n  - name: proportion\n"
BAD = 'actions: "nope"'
NODES = ["n1", "n2", "n3", "n4"]
QUEUES = ["default", "a", "b", "res", "res2"]
UIDS = ["u1", "u2", "u3", None, None]


def node(name: str, cpu: Any = "8") -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "memory": "16Gi"}}}


def queue(name: str, parent: str = "", reservable: bool = False, plan: str | None = None, weight: Any = 1
          ) -> dict[str, Any]:
    ann: dict[str, str] = {}
    if reservable:
        ann["apportion.io/reservable"] = "true"
    if plan is not None:
        ann["apportion.io/plan"] = plan
    spec: dict[str, Any] = {"weight": weight, "guarantee": {"resource": {"cpu": "2", "memory": "4Gi"}}}
    if parent:
        spec["parent"] = parent
    return {"kind": "Queue", "metadata": {"name": name, "annotations": ann}, "spec": spec}


def pclass(name: str, default: bool, value: Any = 10) -> dict[str, Any]:
    return {"kind": "PriorityClass", "metadata": {"name": name}, "value": value, "globalDefault": default}


def configmap(name: str, text: str | None) -> dict[str, Any]:
    return {"kind": "ConfigMap", "metadata": {"name": name, "namespace": "kube-system"},
            "data": {} if text is None else {"volcano-scheduler.conf": text}}


def podgroup(name: str, q: str, min_member: Any = 1) -> dict[str, Any]:
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": "default"},
            "spec": {"queue": q, "minMember": min_member}}


def pod(name: str, group: str, node_name: str | None, uid: str | None, cpu: Any = "1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default",
                            "annotations": {"scheduling.k8s.io/group-name": group}}
    if uid is not None:
        meta["uid"] = uid
    out: dict[str, Any] = {"kind": "Pod", "metadata": meta,
                           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
                           "status": {"phase": "Running" if node_name else "Pending"}}
    if node_name:
        out["spec"]["nodeName"] = node_name
    return out


def base() -> dict[ObjectKey, dict[str, Any]]:
    objs = [node("n1"), node("n2"), node("n3"), queue("default"), queue("a"), queue("b", parent="a"),
            queue("res", reservable=True), pclass("high", False, 100), pclass("low", True, 1),
            configmap("volcano-scheduler-configmap", GOOD_A), configmap("other", None),
            podgroup("g1", "a"), podgroup("g2", "res"),
            pod("p1", "g1", "n1", "u1"), pod("p2", "g1", "n2", None), pod("p3", "g2", None, "u3"),
            pod("p4", "g2", "n3", None)]
    return {object_key(o, "base"): o for o in objs}


# one operation of an edit: ("put", object) or ("delete", key)
names = st.sampled_from
put_ops = st.one_of(
    st.builds(node, names(NODES), names(["8", "4", "x"])),
    st.builds(queue, names(QUEUES), names(["", "a", "res", "res2", "b"]), st.booleans(),
              names([None, '{"agent": "greedy"}', '{"agent": "nope"}', "not json"]), names([1, 2, -1])),
    st.builds(pclass, names(["high", "low", "mid"]), st.booleans(), names([10, "abc"])),
    st.builds(configmap, names(["volcano-scheduler-configmap", "other", "third"]),
              names([GOOD_A, GOOD_B, BAD, None])),
    st.builds(podgroup, names(["g1", "g2", "g3"]), names(QUEUES + ["missing"]), names([1, -1])),
    st.builds(pod, names(["p1", "p2", "p5", "p6"]), names(["g1", "g2", "g9"]), names([None, *NODES]),
              names(UIDS), names(["1", "bad"])),
).map(lambda o: ("put", o))
delete_ops = names([("Node", "", n) for n in NODES] + [("Queue", "", q) for q in QUEUES[1:]]
                   + [("PriorityClass", "", "high"), ("PriorityClass", "", "low"),
                      ("ConfigMap", "kube-system", "volcano-scheduler-configmap"), ("ConfigMap", "kube-system", "other"),
                      ("PodGroup", "default", "g1"), ("Pod", "default", "p1"), ("Pod", "default", "p3")]
                   ).map(lambda k: ("delete", k))
edits = st.lists(st.lists(st.one_of(put_ops, delete_ops), min_size=1, max_size=3), min_size=1, max_size=6)


def _outcome(objects: ClusterObjects, puts: list[tuple[str, Any]], deletes: list[ObjectKey]) -> Any:
    try:
        new, plans, nodes, queues = objects.edited(puts, deletes)
    except InputError as e:
        return ("refused", type(e).__name__, str(e))
    return ("accepted", new, plans, plan_capacities(nodes, queues, plans))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits)
def test_the_incremental_check_answers_as_the_whole_check(steps: list[list[tuple[str, Any]]]) -> None:
    stored = base()
    ClusterObjects.check(stored, {})  # the base passes the whole check
    for step in steps:
        puts: list[tuple[str, Any]] = []
        deletes: list[ObjectKey] = []
        for i, (op, arg) in enumerate(step):
            if op == "put":
                puts.append((f"request: document {i}", json.loads(json.dumps(arg))))
            elif arg not in deletes:
                deletes.append(arg)
        fast = _outcome(ClusterObjects(stored, valid=True), puts, deletes)
        whole = _outcome(ClusterObjects(stored, valid=False), puts, deletes)
        assert fast == whole, (step, fast[:3], whole[:3])
        if fast[0] == "accepted":
            stored = fast[1]


def test_an_edit_of_an_invalid_stored_set_gets_the_whole_check() -> None:
    stored = base()
    stored[("ConfigMap", "kube-system", "volcano-scheduler-configmap")] = configmap("volcano-scheduler-configmap", BAD)
    # a database written before the conf was checked: every edit is refused until the conf is fixed
    objects = ClusterObjects(stored, valid=False)
    assert _outcome(objects, [("r", node("n9"))], [])[0] == "refused"
    fixed = _outcome(objects, [("r", configmap("volcano-scheduler-configmap", GOOD_B))], [])
    assert fixed[0] == "accepted"
    objects.replace(fixed[1])
    assert objects.valid
