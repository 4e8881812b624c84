"""The followers' queues reach the cache with their records (service/live.py, `QueueRecords`): each
record must be what `parse_queue` (the reference) gives for the object, whatever the object, and
never share a mutable part with another queue's record."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.errors import InputError
from apportion.kube.fields import Fields
from apportion.kube.objects import parse_queue
from apportion.reservation.definition import ReservationId
from apportion.reservation.follower import ReservationShare
from apportion.service.live import QueueRecords
from apportion.service.publish import _queue
from apportion.state.check import canonical

DIMS = [("memory-mb", "vcores"), ("memory-mb", "vcores", "nvidia.com/gpu")]
caps = st.one_of(st.none(), st.just({}), st.fixed_dictionaries(
    {"cpu": st.sampled_from(["32", "1500m", "0"]), "memory": st.sampled_from(["128Gi", "1000Mi", "0"])},
    optional={"nvidia.com/gpu": st.sampled_from(["2", "0"])}))


@st.composite
def publisher_objects(draw: st.DrawFn) -> dict[str, Any]:
    """A queue as the publisher makes it (publish._queue) for a random share and plan."""
    dims = draw(st.sampled_from(DIMS))
    # few values, so that specs repeat (the memo is read) under other names
    v = tuple(draw(st.lists(st.sampled_from([0, 1, 1024]), min_size=len(dims), max_size=len(dims))))
    share = ReservationShare(ReservationId(1, draw(st.integers(1, 50))), "u", v, 0.5, 1.0, draw(st.booleans()))
    overuse, cap = draw(st.booleans()), draw(caps)
    name = str(share.id)
    return _queue("dedicated", name, ("dedicated", v, dims, share.gang, overuse, cap), share, dims, overuse, cap)


def _other(obj: dict[str, Any], extra: str) -> dict[str, Any]:
    """The object with something the publisher never writes (so the record is parsed in full)."""
    out = {**obj, "metadata": dict(obj["metadata"])}
    if extra == "annotations":
        out["metadata"]["annotations"] = {"a": "b"}
    elif extra == "status":
        out["status"] = {"state": "Closed"}
    elif extra == "weight":
        out = {"kind": "Queue", "metadata": out["metadata"], "spec": {**obj["spec"], "weight": 3}}
    elif extra == "empty name":
        out["metadata"]["name"] = ""
    return out


def _parsed(obj: dict[str, Any]) -> Any:
    try:
        return canonical(parse_queue(Fields(obj, "t")))
    except InputError as e:
        return str(e)


def _recorded(records: QueueRecords, obj: dict[str, Any]) -> Any:
    try:
        return canonical(records.record(obj, "t"))
    except InputError as e:
        return str(e)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(publisher_objects(), st.sampled_from(["", "", "annotations", "status", "weight",
                                                                  "empty name"])), min_size=1, max_size=12))
def test_a_record_is_what_parsing_the_object_gives(objs: list[tuple[dict[str, Any], str]]) -> None:
    records = QueueRecords()
    made = []
    for obj, extra in objs:
        o = _other(obj, extra) if extra else obj
        assert _recorded(records, o) == _parsed(o)
        if not extra:
            made.append(records.record(o, "t"))
    # every record has its own Resources and annotations, even two of one spec
    for kind in ("capability", "deserved", "guarantee", "annotations"):
        assert len({id(getattr(r, kind)) for r in made}) == len(made)


def test_the_memo_is_forgotten_past_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(QueueRecords, "LIMIT", 2)
    records = QueueRecords()
    for k in range(5):
        obj = {"kind": "Queue", "metadata": {"name": f"q{k}"}, "spec": {"parent": "p", "deserved": {"cpu": str(k)}}}
        assert canonical(records.record(obj, "t")) == _parsed(obj)
        assert len(records._by_spec) <= 2
