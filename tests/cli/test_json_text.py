"""`dumps_indent1` writes exactly what `json.dumps(value, indent=1)` writes (the reference), for any
JSON-like value, and refuses what json refuses with json's own error."""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cli.json_text import dumps_indent1


class Level(enum.IntEnum):
    LOW = 1


class Name(enum.StrEnum):
    A = "a\u00e9"


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-(10 ** 40), 10 ** 40),
    st.floats(allow_nan=True, allow_infinity=True), st.text(), st.sampled_from([Level.LOW, Name.A]))
keys = st.one_of(st.text(), st.integers(), st.floats(allow_nan=True), st.booleans(), st.none(),
                 st.sampled_from([Level.LOW, Name.A]))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.lists(inner, max_size=3).map(tuple),
                            st.dictionaries(keys, inner, max_size=5)),
    max_leaves=40)


@settings(max_examples=600, deadline=None)
@given(value=values)
def test_the_same_text_as_json_dumps(value: Any) -> None:
    assert dumps_indent1(value) == json.dumps(value, indent=1)


def test_a_cycle_result_shape() -> None:
    value = {"binds": {"ns/a-0": "n1", "ns/b-\u00fc": "n2"}, "pipelined": {}, "evictions": [],
             "queues": {"q": {"share": 0.5, "allocated": {"cpu": 2.0, "memory": 1e21}, "w": 1}},
             "events": [{"type": "Normal", "nested": [[], {}, [1, [2.5, None]]]}]}
    assert dumps_indent1(value) == json.dumps(value, indent=1)


@pytest.mark.parametrize("value", [{"a": object()}, [1, {2}], {(1, 2): 3}, b"bytes"])
def test_what_json_refuses_is_refused_alike(value: Any) -> None:
    with pytest.raises(TypeError) as ours:
        dumps_indent1(value)
    with pytest.raises(TypeError) as theirs:
        json.dumps(value, indent=1)
    assert str(ours.value) == str(theirs.value)


def test_a_reference_cycle_is_refused_alike() -> None:
    loop: list[Any] = [1]
    loop.append({"x": loop})
    with pytest.raises(ValueError, match="Circular reference detected"):
        dumps_indent1(loop)
