"""One exception type per layer; the CLI turns each into exit code 2 and a one-line message."""

from __future__ import annotations

import reprlib
from typing import Any, cast


class ApportionError(Exception):
    """Base of every error apportion reports to a user (never shown as a traceback)."""


class InputError(ApportionError):
    """Bad input: a file, document, field or request that is wrong. Exit status 2."""

    def __init__(self, message: str, *, where: str = "") -> None:
        self.where = where
        self.bare = message
        super().__init__(f"{where}: {message}" if where else message)


class QuantityError(InputError):
    """A Kubernetes quantity that does not parse."""


class ConfError(InputError):
    """A scheduler configuration that Volcano would reject."""


class InternalError(ApportionError):
    """A broken invariant (Volcano would panic). Exit status 1."""


# ---------------------------------------------------------------- reporting bad input safely
#: deepest nesting of mappings and lists any input may have. Kubernetes objects reach about 12 levels;
#: a bound keeps every reader, validator and error message clear of Python's recursion limit.
MAX_DEPTH = 100

#: longest echo of a bad value in a message
SHOWN_MAX = 100
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel = 2
_SHOWN.maxstring = 40
_SHOWN.maxother = 40
_SHOWN.maxlong = 40
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = 4


def shown(value: object) -> str:
    """A short repr of a bad value for an error message: long strings, numbers and deep or long
    structures are cut (`'aaaa...aaaa'`, `[[...]]`), so a message never echoes a whole input."""
    try:
        text = _SHOWN.repr(value)
    except (ValueError, RecursionError):  # an int past Python's 4300-digit conversion limit
        return f"<a {type(value).__name__} too large to show>"
    # reprlib bounds each level, not the whole: a few levels of long keys and escapes still add up
    return text if len(text) <= SHOWN_MAX else text[: SHOWN_MAX - 3] + "..."


def check_depth(value: object, where: str, *, limit: int = MAX_DEPTH) -> None:
    """Refuse a decoded document nested deeper than `limit`: InputError naming `where` and the first
    steps of the path that goes too deep."""
    # this runs over every object of every dump: a document within the limit passes by `_within`
    # (recursive, so at most `limit` frames deep: only for limits far below the interpreter's), and only
    # one that is not takes the level-by-level pass, which finds the path
    kind = type(value)
    if 0 <= limit <= _RECURSIVE_LIMIT and (
            (kind is not dict and kind is not list) or _within(cast("dict[Any, Any] | list[Any]", value), limit)):
        return
    check_depth_levels(value, where, limit=limit)


#: the deepest limit `check_depth` checks by recursion (Python's recursion limit is 1,000 frames)
_RECURSIVE_LIMIT = 200


def _within(container: dict[Any, Any] | list[Any], budget: int) -> bool:
    """No container nested more than `budget` levels below this one."""
    for x in (container.values() if type(container) is dict else container):
        kind = type(x)
        if (kind is dict or kind is list) and (budget == 0 or not _within(x, budget - 1)):
            return False
    return True


def check_depth_levels(value: object, where: str, *, limit: int = MAX_DEPTH) -> None:
    """`check_depth` level by level, holding no paths (the reference its fast pass is tested against).
    Iterative, so the check itself never recurses."""
    level: list[Any] = [value]
    depth = 0
    while level:
        if depth > limit:
            raise InputError(f"{_deep_path(value, limit)}...: nested more than {limit} levels deep", where=where)
        below: list[Any] = []
        for v in level:
            if type(v) is dict:
                below.extend(x for x in v.values() if type(x) is dict or type(x) is list)
            elif type(v) is list:
                below.extend(x for x in v if type(x) is dict or type(x) is list)
        level = below
        depth += 1


def _deep_path(value: object, limit: int) -> str:
    """The first steps of a path to a container deeper than `limit` (found again, with paths, only once
    the fast pass has failed)."""
    stack: list[tuple[object, int, tuple[object, ...]]] = [(value, 0, ())]
    while stack:
        v, depth, path = stack.pop()
        if depth > limit:
            return "".join(f"[{k}]" if isinstance(k, int) else f".{shown(k)[1:-1] if isinstance(k, str) else k}"
                           for k in path).lstrip(".")
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        for k, x in items:
            if isinstance(x, (dict, list)):
                stack.append((x, depth + 1, path + (k,) if len(path) < 4 else path))
    return ""
