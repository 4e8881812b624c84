"""`dataclass` with the comparison and printing methods made as closures instead of compiled code.

On Python 3.11 `dataclasses.dataclass` writes each method it adds as source text and compiles it
(`exec`): about 0.2 ms a method, `__repr__` the dearest (each of its f-string's fields is parsed by a
parser of its own). A command pays that for every class its modules define before doing anything.
`dataclass` here has `dataclasses` make the class with `__init__` (and a frozen class's
`__setattr__`/`__delattr__`) as ever, and adds `__repr__`, `__eq__`, `__hash__` and the orderings
as closures over the field names: no compilation, the same answers (the same strings, the same
comparisons of the same tuples, the same hashes, the same errors, the same `...` for a recursive
repr), and `__dataclass_params__` reads as the plain class's. A class that writes any of these
methods itself, or asks for `unsafe_hash`, is made by `dataclasses` alone.

For type checkers it is `dataclasses.dataclass` itself.
"""

from __future__ import annotations

import dataclasses
import operator
from _thread import get_ident
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

#: True: `dataclass` adds the closures; False: `dataclasses.dataclass` as it is (the reference the
#: tests compare the closures with). Read when a class is made.
LEAN = True

_T = TypeVar("_T")

#: the methods whose presence in the class body leaves the class to `dataclasses` alone
_OWN_METHODS = ("__repr__", "__eq__", "__hash__", "__lt__", "__le__", "__gt__", "__ge__")


def _values_of(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple `(obj.a, obj.b, ...)` the generated methods build, attributes read in field order."""
    if len(names) >= 2:
        return attrgetter(*names)  # a tuple for two names or more
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda obj: ()


def _repr_method(names: tuple[str, ...]) -> Callable[[Any], str]:
    running: set[tuple[int, int]] = set()

    def __repr__(self: Any) -> str:
        # dataclasses' `_recursive_repr`: a repr that reaches its own object again, in the same
        # thread, prints `...` there
        key = id(self), get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            # read and printed field by field, in order, as the generated f-string does
            return self.__class__.__qualname__ + "(" + ", ".join([f"{n}={getattr(self, n)!r}" for n in names]) + ")"
        finally:
            running.discard(key)

    return __repr__


def _compare_method(name: str, values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    op = {"__eq__": operator.eq, "__lt__": operator.lt, "__le__": operator.le, "__gt__": operator.gt,
          "__ge__": operator.ge}[name]

    def method(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return op(values(self), values(other))
        return NotImplemented

    method.__name__ = name
    return method


def _hash_method(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _add(cls: type, fn: Any, name: str) -> None:
    fn.__name__ = name
    fn.__qualname__ = f"{cls.__qualname__}.{name}"
    # as dataclasses' methods: the class's module, so that pickle finds `C.__eq__` by its name
    fn.__module__ = cls.__module__
    setattr(cls, name, fn)


def _make(cls: type, *, init: bool = True, repr: bool = True, eq: bool = True, order: bool = False,
          unsafe_hash: bool = False, frozen: bool = False, **rest: Any) -> type:
    if not LEAN or unsafe_hash or any(n in cls.__dict__ for n in _OWN_METHODS):
        return dataclasses.dataclass(cls, init=init, repr=repr, eq=eq, order=order, unsafe_hash=unsafe_hash,
                                     frozen=frozen, **rest)
    if order and not eq:
        raise ValueError("eq must be true if order is true")  # as dataclasses says it
    made: type = dataclasses.dataclass(cls, init=init, repr=False, eq=False, order=False, frozen=frozen, **rest)
    fields = dataclasses.fields(made)
    if repr:
        _add(made, _repr_method(tuple(f.name for f in fields if f.repr)), "__repr__")
    if eq:
        compared = _values_of(tuple(f.name for f in fields if f.compare))
        _add(made, _compare_method("__eq__", compared), "__eq__")
        if frozen:
            hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
            _add(made, _hash_method(_values_of(hashed)), "__hash__")
        else:
            made.__hash__ = None  # type: ignore[assignment]  # as dataclasses sets it: unhashable
        if order:
            for name in ("__lt__", "__le__", "__gt__", "__ge__"):
                _add(made, _compare_method(name, compared), name)
    params = made.__dataclass_params__  # type: ignore[attr-defined]
    params.repr, params.eq, params.order = repr, eq, order
    return made


if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:

    def dataclass(cls: type[_T] | None = None, /, **options: Any) -> Any:
        """`dataclasses.dataclass` (the same options), with `__repr__`, `__eq__`, `__hash__` and the
        orderings made as closures (the module's docstring)."""

        def wrap(c: type[_T]) -> type[_T]:
            return _make(c, **options)  # type: ignore[return-value]

        return wrap if cls is None else wrap(cls)
