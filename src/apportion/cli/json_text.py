"""`json.dumps(value, indent=1)`, the text of `cycle -o json`, without the standard encoder's generators.

With an indent the standard library encodes in pure Python, one generator per nesting level, and every
piece of text passes up through each of them: at 50,000 binds that was most of writing a cycle's JSON.
`dumps_indent1` builds the same text in one list, with the standard library's own functions for every
string, integer and float, so the bytes are the same (tests/cli/test_json_text.py compares the two).
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _quote
from typing import Any

_INF = float("inf")


class _Unusual(Exception):
    """A value the fast path does not encode (a type json would refuse, a key it would refuse)."""


def dumps_indent1(value: Any) -> str:
    """Exactly `json.dumps(value, indent=1)` (ASCII, keys in their order, NaN and infinities allowed);
    anything the fast path does not handle (a type json refuses or a reference cycle) goes to
    json.dumps itself, which raises as it always did."""
    out: list[str] = []
    try:
        text = _scalar(value)
        if text is None:
            _container(value, out, "\n")
        else:
            out.append(text)
    except (_Unusual, RecursionError):
        return json.dumps(value, indent=1)
    return "".join(out)


def _float(x: float) -> str:
    # json.encoder's floatstr with allow_nan
    if x != x:
        return "NaN"
    if x == _INF:
        return "Infinity"
    if x == -_INF:
        return "-Infinity"
    return float.__repr__(x)


def _scalar(x: Any) -> str | None:
    """The text of a non-container, in the order json's encoder tests the types; None for a container."""
    if isinstance(x, str):
        return _quote(x)
    if x is None:
        return "null"
    if x is True:
        return "true"
    if x is False:
        return "false"
    if isinstance(x, int):
        return int.__repr__(x)
    if isinstance(x, float):
        return _float(x)
    if isinstance(x, (list, tuple, dict)):
        return None
    raise _Unusual


def _key(k: Any) -> str:
    """A dict key as json writes it (the standard library's coercions; skipkeys is off)."""
    if isinstance(k, str):
        return _quote(k)
    if isinstance(k, float):
        return _quote(_float(k))
    if k is True:
        return '"true"'
    if k is False:
        return '"false"'
    if k is None:
        return '"null"'
    if isinstance(k, int):
        return _quote(int.__repr__(k))
    raise _Unusual


def _container(x: Any, out: list[str], nl: str) -> None:
    """A list, tuple or dict at the indent `nl` ("\\n" and one space per level above it)."""
    inner = nl + " "
    append = out.append
    if isinstance(x, dict):
        if not x:
            append("{}")
            return
        sep = "{" + inner
        for k, v in x.items():
            text = _scalar(v)
            if text is None:
                append(f"{sep}{_key(k)}: ")
                _container(v, out, inner)
            else:
                append(f"{sep}{_key(k)}: {text}")
            sep = "," + inner
        append(nl + "}")
        return
    if not x:
        append("[]")
        return
    sep = "[" + inner
    for v in x:
        text = _scalar(v)
        if text is None:
            append(sep)
            _container(v, out, inner)
        else:
            append(sep + text)
        sep = "," + inner
    append(nl + "]")
