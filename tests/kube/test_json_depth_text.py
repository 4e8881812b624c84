"""The nesting bound told from a JSON text (`json_text_within`) is the decoded values' (`check_depth`):
whatever the strings hold (brackets, quotes, escapes), one value or several one after another; and a
dump reads to the same documents, or the same error, with the text's bound on or off."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.errors import InputError, check_depth_levels
from apportion.kube import documents
from apportion.kube.documents import json_text_within, parse_documents

_TRICKY = st.text(alphabet=st.sampled_from(list('[]{}"\\/ab\n\té€\U0001f600')), max_size=6)
_VALUES = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), _TRICKY),
                       lambda kids: st.lists(kids, max_size=3) | st.dictionaries(_TRICKY, kids, max_size=3),
                       max_leaves=25)


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k[": value, "s": "]}\\"}
    return value


def _within(values: list[object], limit: int) -> bool:
    try:
        for v in values:
            check_depth_levels(v, "w", limit=limit)
    except InputError:
        return False
    return True


def _text(values: list[object], ascii_only: bool, indent: int | None) -> str:
    return "\n".join(json.dumps(v, ensure_ascii=ascii_only, indent=indent) for v in values)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_VALUES, min_size=1, max_size=3), wrap=st.integers(0, 10), limit=st.integers(-1, 12),
       ascii_only=st.booleans(), indent=st.sampled_from([None, 1]))
def test_the_text_bound_is_the_walk(values: list[object], wrap: int, limit: int, ascii_only: bool,
                                    indent: int | None) -> None:
    values = [_nested(wrap, v) for v in values]
    assert json_text_within(_text(values, ascii_only, indent), limit) == _within(values, limit)


@pytest.mark.parametrize(("text", "limit"), [("1", -1), ("1", 0), ("[]", -1), ("[]", 0), ("[[]]", 0), ("[[]]", 1),
                                             ('"[[\\\\"', 0), ('["\\"[", []]', 1), ('{"\\\\": [[]]}', 1)])
def test_small_texts(text: str, limit: int) -> None:
    assert json_text_within(text, limit) == _within([json.loads(text)], limit)


@pytest.mark.parametrize("depth", [99, 100, 101, 102, 103, 300])
def test_the_bound_at_the_limit(depth: int) -> None:
    value = _nested(depth, "x")
    assert json_text_within(json.dumps(value), 100) == _within([value], 100) == (depth <= 101)


def test_many_escapes_are_left_to_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps({"a": '\\"' * 50})
    assert json_text_within(text, 5)
    monkeypatch.setattr(documents, "ESCAPES_MAX", 10)
    assert not json_text_within(text, 5)


def _outcome(text: str) -> object:
    try:
        return parse_documents(text, "d.json")
    except InputError as e:
        return str(e)


@settings(max_examples=150, deadline=None)
@given(values=st.lists(_VALUES, min_size=1, max_size=3), wrap=st.integers(0, 120),
       kinds=st.lists(st.sampled_from(["Pod", "List"]), min_size=1, max_size=3))
def test_a_dump_reads_the_same_with_the_bound_or_the_walk(values: list[object], wrap: int, kinds: list[str]) -> None:
    objs = [{"kind": k, "items": [{"kind": "Pod", "spec": _nested(wrap, v)}]} if k == "List"
            else {"kind": k, "spec": _nested(wrap, v)} for k, v in zip(kinds, values)]
    text = _text(objs, True, None)
    fast = _outcome(text)
    documents.JSON_TEXT_DEPTH = False
    try:
        assert _outcome(text) == fast
    finally:
        documents.JSON_TEXT_DEPTH = True
