"""A dump read once (`build.ONE_READ`, `objects.PLAIN_READ`) against the reference read through field
views: Nodes and PodGroups drawn with every field plain, missing, empty, None or of another type give the
same record, field by field, or the same InputError; whole dumps (duplicates, odd pods and objects mixed
in) give the same records, warnings and first error."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_plain_pod import pods

from apportion.errors import InputError
from apportion.kube import build, objects
from apportion.kube.build import parse_objects
from apportion.kube.fields import Fields
from apportion.kube.objects import parse_node, parse_node_reference, parse_podgroup, parse_podgroup_reference

_MISSING = object()
_ODD = st.one_of(st.none(), st.integers(-2, 2), st.booleans(), st.just(1.5), st.just([]), st.just({}), st.just("x"))
_STR = st.sampled_from(["", "a", "n1", "ns", "Pending", "Inqueue", "Running", "Odd"])
_LABELS = st.dictionaries(st.sampled_from(["zone", "kubernetes.io/hostname", "k"]),
                          st.one_of(_STR, _STR, _STR, _STR, _STR, _ODD), max_size=3)
_RESOURCES = st.sampled_from([{"cpu": "32", "memory": "128Gi", "pods": "110"}, {"cpu": "1"}, {},
                              {"cpu": "32", "memory": "128Gi"}, {"cpu": "x"}, {"cpu": "-1"}, {"nvidia.com/gpu": 2},
                              "8"])


def _drawer(draw: st.DrawFn) -> tuple[bool, Callable[[st.SearchStrategy[Any]], Any]]:
    """Whether the object drawn is odd, and a drawer of its field values: for a plain object (half of
    them, most then read plainly) plain or missing values only, for an odd one anything (most of those
    go to the reference)."""
    odd = draw(st.booleans())
    values = st.one_of(st.just(_MISSING), _ODD) if odd else st.just(_MISSING)
    return odd, lambda plain: draw(st.one_of(plain, plain, plain, values))


def _shaped(draw: st.DrawFn, odd: bool, parts: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in parts.items():
        shape = draw(st.sampled_from(["plain", "plain", "missing", "none", "odd"])) if odd else \
            draw(st.sampled_from(["plain"] * 6 + ["missing"]))
        if shape == "plain":
            out[name] = {k: v for k, v in value.items() if v is not _MISSING}
        elif shape == "none":
            out[name] = None
        elif shape == "odd":
            out[name] = draw(st.sampled_from([[], "x", 3]))
    return out


_NAME = st.sampled_from(["a", "n1", "ns"])


@st.composite
def nodes(draw: st.DrawFn) -> dict[str, Any]:
    odd, field = _drawer(draw)
    return {"kind": "Node", **_shaped(draw, odd, {
        "metadata": {"name": draw(_STR) if odd else draw(_NAME), "labels": field(_LABELS)},
        "spec": {"taints": field(st.sampled_from([[], [], [{"key": "k", "effect": "NoSchedule"}], [{"x": 1}]])),
                 "unschedulable": field(st.sampled_from([True, False, None, "true", "False"]))},
        "status": {"allocatable": field(_RESOURCES)},
    })}


@st.composite
def podgroups(draw: st.DrawFn) -> dict[str, Any]:
    odd, field = _drawer(draw)
    return {"kind": "PodGroup", **_shaped(draw, odd, {
        "metadata": {"name": draw(_STR) if odd else draw(_NAME), "namespace": field(_STR),
                     "creationTimestamp": field(st.sampled_from(["", "2026-01-01T00:00:00Z"])),
                     "annotations": field(_LABELS)},
        "spec": {"minMember": field(st.sampled_from([0, 1, 10, 2**31 - 1, -1, 2**31, "3", True])),
                 "minTaskMember": field(st.sampled_from([{}, {}, {"w": 2}, {"w": -1}])),
                 "minResources": field(_RESOURCES), "queue": field(_STR),
                 "priorityClassName": field(_STR)},
        "status": {"phase": field(st.sampled_from(["", "Pending", "Inqueue", "Running", "Odd"]))},
    })}


def _view(value: Any) -> Any:
    """A record compared by value, field by field (a task compares by identity)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__,
                tuple((f.name, _view(getattr(value, f.name))) for f in dataclasses.fields(value)))
    if isinstance(value, dict):
        return tuple((k, _view(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_view(v) for v in value)
    return repr(value)


def _outcome(read: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", _view(read())
    except InputError as e:
        return "error", str(e)


@settings(max_examples=500, deadline=None)
@given(node=nodes())
def test_a_plain_node_is_the_reference(node: dict[str, Any]) -> None:
    assert _outcome(lambda: parse_node(Fields(node, "d.json"))) == \
        _outcome(lambda: parse_node_reference(Fields(node, "d.json")))


@settings(max_examples=500, deadline=None)
@given(pg=podgroups())
def test_a_plain_podgroup_is_the_reference(pg: dict[str, Any]) -> None:
    assert _outcome(lambda: parse_podgroup(Fields(pg, "d.json"))) == \
        _outcome(lambda: parse_podgroup_reference(Fields(pg, "d.json")))


def test_a_dumps_objects_take_the_plain_read() -> None:
    """The tests above compare something: a dump's Node and PodGroup are read plainly."""
    node = {"kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "z"}},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}}
    pg = {"kind": "PodGroup", "metadata": {"name": "j", "namespace": "b", "creationTimestamp": "2026-01-01T00:00:00Z"},
          "spec": {"queue": "q", "minMember": 10, "minResources": {"cpu": "80"}}, "status": {"phase": "Inqueue"}}
    assert objects.plain_node(node) is not None
    assert objects.plain_podgroup(pg) is not None
    assert _outcome(lambda: objects.plain_node(node)) == _outcome(lambda: parse_node_reference(Fields(node, "d")))
    assert _outcome(lambda: objects.plain_podgroup(pg)) == \
        _outcome(lambda: parse_podgroup_reference(Fields(pg, "d")))


@contextmanager
def _reference() -> Iterator[None]:
    saved = build.ONE_READ, objects.PLAIN_READ
    build.ONE_READ = objects.PLAIN_READ = False
    try:
        yield
    finally:
        build.ONE_READ, objects.PLAIN_READ = saved


def _parsed(docs: list[tuple[str, Any]]) -> tuple[str, Any]:
    def read() -> Any:
        rec = parse_objects(docs)
        return (rec.warnings, rec.priority_classes, rec.configmaps, rec.nodes, rec.queues, rec.podgroups, rec.pods)
    return _outcome(read)


_ANY = st.one_of(pods(), nodes(), podgroups(), st.just({"kind": "Service"}),
                 st.sampled_from([
                     {"kind": "Queue", "metadata": {"name": "q"}},
                     {"kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, "spec": {"nodeName": "n1"}},
                     {"kind": "Pod", "metadata": {"name": "p", "namespace": "n", "uid": "u"}, "spec": {}},
                     {"kind": "Pod", "metadata": {"name": "q", "namespace": "n", "uid": "u"}, "spec": {}},
                     # a duplicate key, and a duplicate uid, whose spec is malformed too
                     {"kind": "Pod", "metadata": {"name": "p", "namespace": "n", "uid": "v"}, "spec": {"containers": "c"}},
                     {"kind": "Pod", "metadata": {"name": "r", "namespace": "n", "uid": "u"}, "spec": {"containers": "c"}},
                     {"kind": "Node", "metadata": {"name": "n1"}},
                     {"kind": "PodGroup", "metadata": {"name": "j", "namespace": "n"}},
                 ]))


@settings(max_examples=400, deadline=None)
@given(docs=st.lists(_ANY, max_size=8))
def test_a_dump_read_once_is_the_reference(docs: list[dict[str, Any]]) -> None:
    """Records (nodes, podgroups and pods, field by field), warnings, or the first error, as the
    reference's: duplicates of a plain and an odd object, in either order, among them."""
    located = [(f"d.json: document {i}", d) for i, d in enumerate(docs)]
    got = _parsed(located)
    with _reference():
        want = _parsed(located)
    assert got == want


def test_a_duplicate_is_reported_before_its_malformed_spec() -> None:
    """The key and the uid read once are checked for duplicates before the spec is parsed, as the
    reference checks them."""
    first = {"kind": "Pod", "metadata": {"name": "p", "namespace": "n", "uid": "u"}, "spec": {}}
    for second, what in (({"name": "p", "namespace": "n", "uid": "v"}, "duplicate Pod 'n/p'"),
                         ({"name": "q", "namespace": "n", "uid": "u"}, "duplicate pod uid 'u'")):
        docs = [("d0", first), ("d1", {"kind": "Pod", "metadata": second, "spec": {"containers": "c"}})]
        got = _parsed(docs)
        with _reference():
            assert got == _parsed(docs)
        assert got[0] == "error" and what in got[1], got
