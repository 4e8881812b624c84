"""Properties of the bounded readers: whatever the text, a reader returns or raises InputError, never
anything else; quantities in range parse, the others are refused by the one range rule."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.errors import InputError, check_depth, check_depth_levels, shown
from apportion.kube.documents import load_yaml_all, parse_documents
from apportion.quantity import MAX_EXPONENT, parse_quantity

_SUFFIXES = ["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "Ei", "n", "u", "E"]


@settings(max_examples=100, deadline=None)
@given(digits=st.text("0123456789", min_size=1, max_size=600), frac=st.text("0123456789", max_size=5),
       exp=st.one_of(st.none(), st.integers(-500, 500)), suffix=st.sampled_from(_SUFFIXES))
def test_a_quantity_parses_in_range_or_is_refused(digits: str, frac: str, exp: int | None, suffix: str) -> None:
    text = digits + (f".{frac}" if frac else "") + (f"e{exp}" if exp is not None else suffix)
    try:
        v = parse_quantity(text)
    except InputError as e:
        assert "out of range" in str(e) and len(str(e)) < 200
        return
    assert v == 0 or 10.0 ** -MAX_EXPONENT * 0.999 <= abs(v) <= 10.0 ** MAX_EXPONENT * 1.001
    if exp is None and not suffix:
        assert v == float(Decimal(text))


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("[]{}:,-'\" \n0123456789aZ#&*!|>?%@`")), max_size=300))
def test_any_text_is_read_or_refused_with_an_input_error(text: str) -> None:
    for reader in (lambda: load_yaml_all(text, "t.yaml"), lambda: parse_documents(text, "t.yaml")):
        try:
            reader()
        except InputError as e:
            assert str(e).startswith("t.yaml") and "\n" not in str(e)


@given(st.integers(0, 300))
def test_depth_bound_is_exact(depth: int) -> None:
    value: object = 1
    for _ in range(depth):
        value = [value]
    try:
        check_depth(value, "w", limit=100)
        assert depth <= 101  # the innermost scalar sits one level below the deepest list
    except InputError:
        assert depth > 101


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value, "s": "x"}
    return value


def _outcome(check: object, value: object, limit: int) -> str:
    try:
        check(value, "w", limit=limit)  # type: ignore[operator]
    except InputError as e:
        return str(e)
    return ""


@settings(max_examples=300, deadline=None)
@given(value=st.recursive(st.one_of(st.none(), st.integers(), st.text(max_size=3)),
                          lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=2), kids, max_size=3),
                          max_leaves=30),
       wrap=st.integers(0, 12), limit=st.integers(-1, 14))
def test_depth_check_is_the_level_by_level_reference(value: object, wrap: int, limit: int) -> None:
    """The recursive fast pass passes and refuses exactly what the level-by-level pass does, with the
    same message (the path it names)."""
    deep = _nested(wrap, value)
    assert _outcome(check_depth, deep, limit) == _outcome(check_depth_levels, deep, limit)


def test_depth_check_past_the_recursive_limit_is_the_reference() -> None:
    deep = _nested(400, 1)
    for limit in (150, 250, 399, 400, 500):
        assert _outcome(check_depth, deep, limit) == _outcome(check_depth_levels, deep, limit)


@settings(max_examples=60, deadline=None)
@given(st.recursive(st.one_of(st.text(), st.integers(), st.floats()),
                    lambda kids: st.lists(kids) | st.dictionaries(st.text(), kids), max_leaves=40))
def test_shown_is_always_short(value: object) -> None:
    assert len(shown(value)) <= 100
