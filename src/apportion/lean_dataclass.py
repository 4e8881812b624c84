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

What `dataclasses` still compiles (`__init__`, a frozen class's `__setattr__`/`__delattr__`, and every
method of a class left to it) is compiled once and cached, as Python caches a module's bytecode
(`KEPT_CODE`): `dataclasses` writes each method's text and `exec`s it; a table beside the package's
bytecode (`__pycache__/dataclass_code.<cache tag>.bin`) holds, for each text met before, the code
object `exec` compiles from it (marshalled), and `exec` here runs that code object instead of
compiling the text again. A text the table lacks is compiled as ever and added to the table when the
interpreter exits, unless bytecode is not to be written (`sys.dont_write_bytecode`, as for `.pyc`
files); `write_kept_code` writes the table for every module of the package at once (`make` does, after
installing). The file is a cache: built here, never committed.

For type checkers it is `dataclasses.dataclass` itself.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import marshal
import operator
import os
import sys
from _thread import get_ident
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

#: True: `dataclass` adds the closures; False: `dataclasses.dataclass` as it is (the reference the
#: tests compare the closures with). Read when a class is made.
LEAN = True

#: True: the texts `dataclasses` compiles are looked up in the cached table first (`KEPT_CODE_PATH`: a
#: text not there, or a file of another interpreter, is compiled as ever); False: every text is compiled
#: (the reference). With APPORTION_CHECK_STATE set, each code object taken from the table is compared
#: with the text compiled.
KEPT_CODE = True
#: the file of compiled texts: marshal of (interpreter tag, {text: marshalled code object}); one per
#: interpreter, beside the package's own bytecode
KEPT_CODE_PATH = os.path.join(os.path.dirname(__file__), "__pycache__",
                              f"dataclass_code.{sys.implementation.cache_tag or 'none'}.bin")

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


def _interpreter_tag() -> tuple[str, int, int]:
    """What a compiled code object depends on: the bytecode's version and the optimisation level."""
    return sys.implementation.cache_tag or "", sys.hexversion, sys.flags.optimize


#: the file's table, read on the first class made (None: not read yet; empty: unreadable, or another
#: interpreter's)
_kept: dict[str, bytes] | None = None


def _kept_code() -> dict[str, bytes]:
    global _kept
    if _kept is None:
        _kept = {}
        try:
            with open(KEPT_CODE_PATH, "rb") as fh:
                tag, table = marshal.loads(fh.read())
        except (OSError, EOFError, ValueError, TypeError):
            return _kept
        if tag == _interpreter_tag() and type(table) is dict:
            _kept = table
    return _kept


def _compile(text: str) -> Any:
    """What `exec(text, ...)` compiles in `dataclasses` (a module without `__future__` imports)."""
    return compile(text, "<string>", "exec", dont_inherit=True)


def _exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    """`exec` for `dataclasses._create_fn`: a text of the table runs as its kept code object."""
    if type(source) is not str:
        builtins.exec(source, globals, locals)
        return
    blob = _kept_code().get(source)
    if blob is None:
        # compiled as `dataclasses` compiles it: this module's `__future__` imports are not inherited
        code = _compile(source)
        _note_missed(source, code)
        builtins.exec(code, globals, locals)
        return
    code = marshal.loads(blob)
    if os.environ.get("APPORTION_CHECK_STATE", "") not in ("", "0") and code != _compile(source):
        raise RuntimeError(f"APPORTION_CHECK_STATE: the kept code of a dataclass method differs from its text's:\n{source}")
    builtins.exec(code, globals, locals)


#: texts compiled here that the table lacked (added to its file at exit, unless bytecode is not written)
_missed: dict[str, bytes] = {}


def _note_missed(text: str, code: Any) -> None:
    if not _missed and not sys.dont_write_bytecode:
        atexit.register(_write_missed)
    _missed[text] = marshal.dumps(code)


def _write_missed() -> None:
    """Add the texts compiled since the table was read to its file (a cache: a file that cannot be
    written, e.g. an installation read-only to this user, is left as it is)."""
    if not _missed or sys.dont_write_bytecode:
        return
    table = dict(_kept_code())
    table.update(_missed)
    _missed.clear()
    with contextlib.suppress(OSError):
        _write_table(KEPT_CODE_PATH, table)


def _write_table(path: str, table: dict[str, bytes]) -> None:
    """Write the table whole under another name first, then rename it: a reader (another process
    starting) sees the old file or the new one, never a part."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as fh:
            fh.write(marshal.dumps((_interpreter_tag(), table)))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _dataclasses(cls: type, **options: Any) -> type:
    """`dataclasses.dataclass(cls, **options)`, its `exec` the one above while it runs (a name in the
    module's globals is found before the builtin)."""
    if not KEPT_CODE or (not _kept_code() and sys.dont_write_bytecode):
        return dataclasses.dataclass(cls, **options)
    namespace = vars(dataclasses)
    namespace["exec"] = _exec
    try:
        return dataclasses.dataclass(cls, **options)
    finally:
        namespace.pop("exec", None)


def write_kept_code(path: str = KEPT_CODE_PATH, modules: list[str] | None = None) -> int:
    """Write the table of compiled texts for every dataclass the modules (default: every module of the
    package) define when imported; the number of texts. Run in a fresh interpreter (`python -c "from
    apportion.lean_dataclass import write_kept_code; write_kept_code()"`; `make` does after installing):
    where bytecode is written, a run adds what it compiled anyway, and a text the table lacks is
    compiled as it would be without it, only slower."""
    import importlib
    import pkgutil

    texts: list[str] = []

    def record(source: Any, globals: Any = None, locals: Any = None, /) -> None:
        if type(source) is str:
            texts.append(source)
            source = _compile(source)
        builtins.exec(source, globals, locals)

    global KEPT_CODE
    was, KEPT_CODE = KEPT_CODE, False
    vars(dataclasses)["exec"] = record
    try:
        if modules is None:
            import apportion

            modules = [m.name for m in pkgutil.walk_packages(apportion.__path__, "apportion.")]
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001, S112 - a module whose own imports are missing here has no entry
                continue
    finally:
        vars(dataclasses).pop("exec", None)
        KEPT_CODE = was
    table = {t: marshal.dumps(_compile(t)) for t in sorted(set(texts))}
    _write_table(path, table)
    return len(table)


def _make(cls: type, *, init: bool = True, repr: bool = True, eq: bool = True, order: bool = False,
          unsafe_hash: bool = False, frozen: bool = False, **rest: Any) -> type:
    if not LEAN or unsafe_hash or any(n in cls.__dict__ for n in _OWN_METHODS):
        return _dataclasses(cls, init=init, repr=repr, eq=eq, order=order, unsafe_hash=unsafe_hash,
                            frozen=frozen, **rest)
    if order and not eq:
        raise ValueError("eq must be true if order is true")  # as dataclasses says it
    made: type = _dataclasses(cls, init=init, repr=False, eq=False, order=False, frozen=frozen, **rest)
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
