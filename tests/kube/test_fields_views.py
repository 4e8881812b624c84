"""Reading through a `Fields.sub` view is reading the whole path: same values, same defaults, same
errors (the pod parser reads `metadata`, `spec` and `status` through views); and the memo of parsed
resource lists gives what a fresh parse gives."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion import resources
from apportion.errors import InputError, QuantityError
from apportion.kube import pods as pod_module
from apportion.kube.fields import Fields
from apportion.kube.pods import parse_pod
from apportion.resources import Resource

_KEYS = st.sampled_from(["a", "b", "c"])
_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "x", "1", "true"]))
_VALUES = st.recursive(_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=2),
                                                      st.dictionaries(_KEYS, inner, max_size=3)), max_leaves=8)


def _outcome(read: Any) -> tuple[str, Any]:
    try:
        return "ok", read()
    except InputError as e:
        return "error", str(e)


@settings(max_examples=300, deadline=None)
@given(data=st.dictionaries(_KEYS, _VALUES, max_size=3), head=_KEYS,
       rest=st.lists(_KEYS, min_size=1, max_size=3),
       getter=st.sampled_from(["get", "str_", "map_", "list_", "str_map", "bool_", "int_"]))
def test_a_view_reads_as_the_whole_path(data: dict[str, Any], head: str, rest: list[str], getter: str) -> None:
    whole, view = Fields(data, "f.yaml"), Fields(data, "f.yaml").sub(head)
    path = ".".join(rest)
    args: tuple[Any, ...] = (False,) if getter == "bool_" else (7,) if getter == "int_" else ()
    assert _outcome(lambda: getattr(view, getter)(path, *args)) == \
        _outcome(lambda: getattr(whole, getter)(f"{head}.{path}", *args))
    assert str(view.fail(path, "m")) == str(whole.fail(f"{head}.{path}", "m"))


def _pod(**spec: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, "spec": spec}


def test_pod_errors_name_the_whole_path() -> None:
    cases = [
        (_pod(containers=[{"resources": {"requests": {"cpu": "x"}}}]), "spec.containers[0].resources.requests.cpu"),
        (_pod(tolerations=[{"operator": "Maybe"}]), "spec.tolerations[0].operator"),
        (_pod(priority="high"), "spec.priority"),
        (_pod(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": {"a": 1}}}),
         "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"),
        ({"kind": "Pod", "metadata": {"name": "p"}, "spec": []}, "spec.nodeName"),
        ({"kind": "Pod", "metadata": ["p"]}, "metadata.name"),
    ]
    for obj, path in cases:
        try:
            parse_pod(Fields(obj, "d.json"))
        except InputError as e:
            assert str(e).startswith(f"d.json: {path}:"), (str(e), path)
        else:
            raise AssertionError(f"no error for {path}")


@settings(max_examples=200, deadline=None)
@given(rl=st.dictionaries(st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu", "rdma", "count/x"]),
                          st.sampled_from(["1", "250m", "4Gi", "-1", "0.5", "1e3", "x", "7Ki"]), max_size=4),
       allow_negative=st.booleans())
def test_the_resource_memo_gives_a_fresh_parse(rl: dict[str, str], allow_negative: bool) -> None:
    def parse() -> tuple[str, Any]:
        try:
            r = Resource.from_resource_list(rl, allow_negative=allow_negative)
        except QuantityError as e:
            return "error", str(e)
        return "ok", (r.cpu, r.memory, sorted(r.scalars.items()))

    warm = parse()  # fills the memo (or reads it)
    assert parse() == warm
    resources._PARSED.clear()
    assert parse() == warm


_QTY = st.sampled_from(["1", "250m", "2Gi", "x", "-1", 3, 1.5, True])
_SPECS = st.fixed_dictionaries({}, optional={
    "containers": st.lists(st.fixed_dictionaries({"name": st.just("c")}, optional={
        "resources": st.fixed_dictionaries({}, optional={"requests": st.dictionaries(
            st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), _QTY, max_size=3)}),
        "restartPolicy": st.just("Always")}), max_size=2),
    "initContainers": st.lists(st.fixed_dictionaries({"resources": st.just({"requests": {"cpu": "2"}})}), max_size=1),
    "priority": st.sampled_from([0, 7, 2**40, "high", True, 1.0]),
    "priorityClassName": st.sampled_from(["", "pc", 5]),
    "preemptionPolicy": st.sampled_from(["Never", "PreemptLowerPriority"]),
    "nodeSelector": st.dictionaries(st.sampled_from(["zone", "gpu"]), st.sampled_from(["a", "b", 1]), max_size=2),
    "tolerations": st.lists(st.fixed_dictionaries({"key": st.just("k")}, optional={
        "operator": st.sampled_from(["Exists", "Equal", "Maybe"]), "effect": st.just("NoSchedule")}), max_size=2),
    "schedulingGates": st.lists(st.just({"name": "g"}), max_size=1),
    "schedulerName": st.sampled_from(["volcano", "default-scheduler"]),
    "affinity": st.just({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}),
})


def _parsed(obj: dict[str, Any]) -> tuple[str, Any]:
    try:
        ps = parse_pod(Fields(obj, "d.json"))
    except InputError as e:
        return "error", str(e)
    t = ps.task
    return "ok", (ps.key, ps.scheduler, ps.group, t.resreq.cpu, t.resreq.memory, sorted(t.resreq.scalars.items()),
                  t.priority, t.raw_priority, t.priority_class_name, t.preempt_never, t.gated, t.node_name,
                  t.node_selector, t.required_terms, t.preferred_terms, t.tolerations, t.nonzero_cpu, t.nonzero_memory)


@settings(max_examples=300, deadline=None)
@given(base=_SPECS, others=st.lists(_SPECS, max_size=3),
       nodes=st.lists(st.sampled_from(["", "n1", "n2"]), min_size=2, max_size=3))
def test_the_spec_memo_gives_a_fresh_parse(base: dict[str, Any], others: list[dict[str, Any]],
                                           nodes: list[str]) -> None:
    """Pods of a few specs (each on different nodes, under different names) parse as each would alone,
    errors named for each pod, and no two tasks share what a task may change. The other specs are the
    first with one field changed: a memo blind to that field would hand out the first's parts."""
    specs = [base] + [{**base, k: v} for other in others for k, v in list(other.items())[:1]]
    pods_ = [{"kind": "Pod", "metadata": {"name": f"p{si}-{i}", "namespace": "n"},
              "spec": {**spec, **({"nodeName": n} if n else {})}}
             for si, spec in enumerate(specs) for i, n in enumerate(nodes)]
    cold = []
    for p in pods_:
        pod_module._SPEC_MEMO.clear()
        cold.append(_parsed(p))
    pod_module._SPEC_MEMO.clear()
    assert [_parsed(p) for p in pods_] == cold  # later pods of a spec read the memo
    if cold[0][0] == "ok":
        a, b = (parse_pod(Fields(p, "d.json")).task for p in pods_[:2])
        assert a.resreq is not b.resreq and a.node_selector is not b.node_selector
