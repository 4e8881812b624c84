"""`parse_pod`'s plain read (a pod whose fields are plain dicts and strings) against
`parse_pod_reference`: the same record, field by field, or the same InputError, for pods drawn with every
field it reads plain, missing, empty, None or of another type, on or off the given nodes."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.errors import InputError
from apportion.kube.build import object_key, parse_objects, pod_key, pod_uid
from apportion.kube.fields import Fields
from apportion.kube.pods import _plain_pod, parse_pod, parse_pod_reference
from apportion.kube.records import PodSpec

_MISSING = object()
_ODD = st.one_of(st.none(), st.integers(-2, 2), st.booleans(), st.just(1.5), st.just([]), st.just({}))
_STR = st.sampled_from(["", "a", "n1", "n2", "x/y", "True", "0", "2147483648", "-5"])


def _field(plain: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(plain, plain, plain, st.just(_MISSING), _ODD)


def _strs() -> st.SearchStrategy[Any]:
    keys = st.sampled_from(["scheduling.k8s.io/group-name", "volcano.sh/task-priority", "volcano.sh/preemptable",
                            "volcano.sh/task-spec", "app", "k"])
    return st.dictionaries(keys, st.one_of(_STR, _STR, _STR, _ODD), max_size=4)


_SPEC = st.fixed_dictionaries({}, optional={
    "nodeName": _field(st.sampled_from(["", "n1", "n2", "gone"])),
    "containers": st.sampled_from([[{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                                   [{"resources": {"requests": {"cpu": "x"}}}], "c", []]),
    "priority": _field(st.integers(-3, 3)),
    "schedulerName": _field(st.sampled_from(["volcano", "other"])),
    "tolerations": st.sampled_from([[{"operator": "Exists"}], [{"operator": "Maybe"}]]),
})


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    meta = {k: v for k, v in {
        "name": draw(_field(_STR)), "namespace": draw(_field(_STR)), "uid": draw(_field(_STR)),
        "creationTimestamp": draw(_field(st.sampled_from(["", "2026-01-01T00:00:00Z"]))),
        "deletionTimestamp": draw(_field(st.sampled_from(["", "2026-01-01T00:00:00Z"]))),
        "annotations": draw(_field(_strs())), "labels": draw(_field(_strs())),
    }.items() if v is not _MISSING}
    status = {k: v for k, v in {
        "phase": draw(_field(st.sampled_from(["", "Pending", "Running", "Succeeded", "Failed", "Odd"]))),
        "startTime": draw(_field(st.sampled_from(["", "2026-01-01T00:00:00Z"]))),
    }.items() if v is not _MISSING}
    pod: dict[str, Any] = {"kind": "Pod"}
    for name, value in (("metadata", meta), ("spec", draw(_SPEC)), ("status", status)):
        shape = draw(st.sampled_from(["plain", "plain", "plain", "missing", "none", "odd"]))
        if shape == "plain":
            pod[name] = value
        elif shape == "none":
            pod[name] = None
        elif shape == "odd":
            pod[name] = draw(st.sampled_from([[], "x", 3]))
    return pod


def _outcome(read: Any) -> tuple[str, Any]:
    try:
        pod: PodSpec = read()
    except InputError as e:
        return "error", str(e)
    return "ok", (pod.key, pod.scheduler, pod.group,
                  tuple((f.name, repr(getattr(pod.task, f.name))) for f in fields(pod.task)))


@settings(max_examples=600, deadline=None)
@given(pod=pods(), nodes=st.none() | st.just({"n1", "n2"}))
def test_the_plain_read_is_the_reference(pod: dict[str, Any], nodes: set[str] | None) -> None:
    assert _outcome(lambda: parse_pod(Fields(pod, "d.json"), nodes)) == \
        _outcome(lambda: parse_pod_reference(Fields(pod, "d.json"), nodes))


def test_a_dumps_pod_takes_the_plain_read() -> None:
    """The test above compares something: a plain pod is read by `_plain_pod`, not handed on."""
    pod = {"kind": "Pod", "metadata": {"name": "p", "namespace": "n", "annotations": {"a": "b"}},
           "spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "1"}}}]},
           "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}}
    plain = _plain_pod(pod, "d.json", {"n1"})
    assert plain is not None
    assert _outcome(lambda: plain) == _outcome(lambda: parse_pod_reference(Fields(pod, "d.json"), {"n1"}))
    assert _plain_pod({**pod, "metadata": {"name": 3}}, "d.json", None) is None


@settings(max_examples=300, deadline=None)
@given(pod=pods())
def test_the_plain_pod_key_is_the_reference(pod: dict[str, Any]) -> None:
    """The key as `object_key` gives it (or its error), and a uid read at once only where the fields give
    the same one without an error."""
    def read(fn: Any) -> tuple[str, Any]:
        try:
            return "ok", fn()
        except InputError as e:
            return "error", str(e)

    o = Fields(pod, "d.json")
    got = read(lambda: pod_key(o))
    assert (got[0], got[1][0] if got[0] == "ok" else got[1]) == read(lambda: object_key("Pod", o))
    if got[0] == "ok" and got[1][1] is not None:
        assert got[1][1] == pod_uid(o, got[1][0])


def test_a_duplicate_pod_is_reported_before_its_malformed_uid() -> None:
    pods_ = [{"kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, "spec": {}},
             {"kind": "Pod", "metadata": {"name": "p", "namespace": "n", "uid": {"x": 1}}, "spec": {}}]
    try:
        parse_objects([(f"d{i}.json", p) for i, p in enumerate(pods_)])
    except InputError as e:
        assert "duplicate Pod 'n/p'" in str(e), str(e)
    else:
        raise AssertionError("no error")
