"""Reading through a `Fields.sub` view is reading the whole path: same values, same defaults, same
errors (the pod parser reads `metadata`, `spec` and `status` through views); and the memo of parsed
resource lists gives what a fresh parse gives."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion import resources
from apportion.errors import InputError, QuantityError
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
