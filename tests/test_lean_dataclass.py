"""`apportion.lean_dataclass.dataclass` against `dataclasses.dataclass`: classes made both ways from the
same body, under the same options, give the same repr, equality, orderings and hash (values and errors)
for instances drawn from the same values, and read the same `__dataclass_params__` and fields; and the
modules that use it on the forecast's path make their classes the lean way."""

from __future__ import annotations

import dataclasses
import math
import pickle
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion import lean_dataclass

_VALUES = st.one_of(st.integers(-2, 2), st.sampled_from(["", "a", "b'c"]), st.just(math.nan), st.just(1.5),
                    st.none(), st.lists(st.integers(0, 1), max_size=2), st.just([[]]))
_OPTIONS = st.fixed_dictionaries({}, optional={
    "repr": st.booleans(), "eq": st.booleans(), "order": st.booleans(), "frozen": st.booleans(),
    "slots": st.booleans(), "kw_only": st.booleans(), "match_args": st.booleans()})
#: per field: its repr, compare and hash flags (field() arguments), or None for a plain annotation
_FIELD = st.one_of(st.none(), st.fixed_dictionaries({"repr": st.booleans(), "compare": st.booleans(),
                                                     "hash": st.sampled_from([None, True, False])}))


def _make(lean: bool, n_fields: int, flags: list[dict[str, Any] | None], options: dict[str, Any]) -> Any:
    body: dict[str, Any] = {"__annotations__": {f"f{i}": "Any" for i in range(n_fields)}, "__module__": __name__,
                            "__qualname__": "Made", "__doc__": "A class made for the test."}
    for i, fl in enumerate(flags[:n_fields]):
        if fl is not None:
            body[f"f{i}"] = dataclasses.field(**fl)
    cls = type("Made", (), body)
    was = lean_dataclass.LEAN
    lean_dataclass.LEAN = lean
    try:
        return lean_dataclass.dataclass(**options)(cls)
    finally:
        lean_dataclass.LEAN = was


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - the same error both ways is part of the answer
        return ("error", type(e), str(e))


def _answers(cls: Any, a: Any, b: Any) -> list[Any]:
    # (object's repr and hash tell instances by their address: compared as that)
    identity = cls.__hash__ is object.__hash__
    out = [_outcome(lambda: re.sub("at 0x[0-9a-f]+", "at ADDRESS", repr(a))), _outcome(lambda: a == b),
           _outcome(lambda: a != b), _outcome(lambda: a == a), _outcome(lambda: a == 1),
           "object's hash" if identity else _outcome(lambda: hash(a)), cls.__hash__ is None]
    out += [_outcome(lambda: a < b), _outcome(lambda: a <= b), _outcome(lambda: a > b), _outcome(lambda: a >= b)]
    if cls.__dataclass_params__.frozen:
        out.append(_outcome(lambda: setattr(a, "f0", 1)))
    return out


@settings(max_examples=150, deadline=None)
@given(n=st.integers(0, 3), flags=st.lists(_FIELD, min_size=3, max_size=3), options=_OPTIONS,
       left=st.lists(_VALUES, min_size=3, max_size=3), right=st.lists(_VALUES, min_size=3, max_size=3))
def test_lean_classes_answer_as_plain_ones(n: int, flags: list[dict[str, Any] | None], options: dict[str, Any],
                                           left: list[Any], right: list[Any]) -> None:
    made = [_outcome(lambda lean=lean: _make(lean, n, flags, options)) for lean in (True, False)]
    if made[1][0] == "error":
        assert made[0][:2] == made[1][:2] and str(made[0][2]) == str(made[1][2])
        return
    lean_cls, plain_cls = made[0][1], made[1][1]
    assert repr(lean_cls.__dataclass_params__) == repr(plain_cls.__dataclass_params__)
    assert [repr(f) for f in dataclasses.fields(lean_cls)] == [repr(f) for f in dataclasses.fields(plain_cls)]
    assert lean_cls.__doc__ == plain_cls.__doc__
    assert getattr(lean_cls, "__match_args__", None) == getattr(plain_cls, "__match_args__", None)
    assert ("__slots__" in lean_cls.__dict__) == ("__slots__" in plain_cls.__dict__)
    kw = {f"f{i}": v for i, v in enumerate(left[:n])}
    kw2 = {f"f{i}": v for i, v in enumerate(right[:n])}
    for a_kw, b_kw in ((kw, kw2), (kw, dict(kw)), (kw2, kw)):
        lean = _answers(lean_cls, lean_cls(**a_kw), lean_cls(**b_kw))
        plain = _answers(plain_cls, plain_cls(**a_kw), plain_cls(**b_kw))
        assert lean == plain


@pytest.mark.parametrize("lean", [True, False])
def test_recursive_repr_prints_dots(lean: bool) -> None:
    cls = _make(lean, 2, [None, None], {})
    a = cls(1, None)
    a.f1 = [a]
    assert repr(a) == "Made(f0=1, f1=[...])"
    assert repr(cls(2, a)) == "Made(f0=2, f1=Made(f0=1, f1=[...]))"


def test_a_class_with_its_own_methods_is_left_to_dataclasses() -> None:
    @lean_dataclass.dataclass(frozen=True)
    class Own:
        """Its own repr."""

        x: int

        def __repr__(self) -> str:
            return "own"

    assert repr(Own(1)) == "own" and Own(1) == Own(1) and hash(Own(1)) == hash((1,))
    with pytest.raises(TypeError, match="functools.total_ordering"):

        @lean_dataclass.dataclass(order=True)
        class Ordered:
            """Writes an ordering of its own."""

            x: int

            def __lt__(self, other: object) -> bool:
                return False


def test_the_forecast_path_classes_are_lean() -> None:
    from apportion.engine import CycleResult
    from apportion.forecast.core import Forecast
    from apportion.forecast.start import StartState
    from apportion.kube.records import Records
    from apportion.reservation.definition import ReservationId
    from apportion.simulation.specs import Scenario

    for cls in (CycleResult, Forecast, StartState, Records, ReservationId, Scenario):
        # a closure (its code is lean_dataclass's), not compiled text; its module is the class's
        assert cls.__repr__.__code__.co_filename.endswith("lean_dataclass.py"), cls
        assert cls.__repr__.__module__ == cls.__module__
        assert pickle.loads(pickle.dumps(cls.__eq__)) is cls.__eq__  # found by name, as dataclasses'
        assert cls.__dataclass_params__.repr and cls.__dataclass_params__.eq
    assert ReservationId(1, 2) < ReservationId(1, 3) and hash(ReservationId(1, 2)) == hash((1, 2))
