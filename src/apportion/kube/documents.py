"""Reading kubectl output (YAML or JSON): files (or stdin) into decoded objects, each with its location
(file, document index, `items[i]` of a List), before any object is interpreted.

Decoding is bounded for any input: libyaml's C loader (fast on large dumps, and its own nesting limit
keeps it off the C stack), integers of at most `MAX_INT_DIGITS` digits, documents at most
`errors.MAX_DEPTH` levels deep, in YAML and JSON alike. Every other reader of outside YAML (scheduler
confs, scenarios) decodes through `load_yaml`, so the bounds hold everywhere.
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Any

import orjson

from apportion.errors import MAX_DEPTH, InputError, check_depth

if TYPE_CHECKING:
    import yaml

#: longest integer a document may write. Python refuses to convert more than 4300 digits, and no field
#: of a Kubernetes object, scheduler conf or scenario means anything near 100.
MAX_INT_DIGITS = 100


def _construct_int(loader: Any, node: yaml.ScalarNode) -> Any:
    # the length test first: it is all that runs for the integers of a real dump
    if len(node.value) > MAX_INT_DIGITS and (digits := sum(c.isdigit() for c in node.value)) > MAX_INT_DIGITS:
        from yaml.constructor import ConstructorError

        raise ConstructorError(None, None, f"an integer of {digits} digits is too long (at most {MAX_INT_DIGITS})",
                               node.start_mark)
    return loader.construct_yaml_int(node)


_LOADER: Any = None


def _loader() -> Any:
    """The C safe loader (for large kubectl dumps: benchmarks/README.md), refusing over-long integers
    with the line and column they are at; made, and PyYAML imported, on the first YAML text read."""
    global _LOADER
    if _LOADER is None:
        try:
            from yaml import CSafeLoader as base
        except ImportError:  # pragma: no cover - PyYAML built without libyaml
            from yaml import SafeLoader as base  # type: ignore[assignment]

        class _Loader(base):
            """The C safe loader, refusing over-long integers."""

        _Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
        _LOADER = _Loader
    return _LOADER


def read_text(path: str) -> str:
    """The text of a file (`-`: stdin); InputError naming the file when it cannot be read or is not UTF-8."""
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", where=path) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", where="<stdin>" if path == "-" else path) from None


def load_yaml_all(text: str, name: str, *, multi: bool = True) -> list[Any]:
    """Every document of a YAML (or JSON) text, decoded within the bounds above; InputError naming
    `name` (`name: document i` when `multi`; and the line and column, when the parser knows them)."""
    import yaml

    try:
        docs = list(yaml.load_all(text, Loader=_loader()))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        loc = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(f"malformed YAML{loc}: {problem}", where=name) from None
    except RecursionError:  # pragma: no cover - libyaml stops at 1000 levels first
        raise InputError("malformed YAML: nested too deeply", where=name) from None
    for di, doc in enumerate(docs):
        check_depth(doc, f"{name}: document {di}" if multi else name)
    return docs


def load_yaml(text: str, name: str) -> Any:
    """The single document of a YAML text (None when empty); as `load_yaml_all` otherwise."""
    docs = load_yaml_all(text, name, multi=False)
    if len(docs) > 1:
        raise InputError(f"expected one YAML document, found {len(docs)}", where=name)
    return docs[0] if docs else None


def read_documents(paths: list[str]) -> list[tuple[str, Any]]:
    """(location, object) for every object in the files; `-` reads stdin. Lists are flattened."""
    out: list[tuple[str, Any]] = []
    for path in paths:
        text = read_text(path)
        name = "<stdin>" if path == "-" else path
        out.extend(parse_documents(text, name))
    return out


def parse_documents(text: str, name: str) -> list[tuple[str, Any]]:
    """(location, object) for every object in a kubectl dump: YAML documents, or JSON (`kubectl get -o
    json`: one object or List, or several objects one after another)."""
    out: list[tuple[str, Any]] = []
    if text.lstrip()[:1] in ("{", "["):
        docs = json_documents(text, name)
        if not (JSON_TEXT_DEPTH and json_text_within(text, MAX_DEPTH)):
            for di, doc in enumerate(docs):
                check_depth(doc, f"{name}: document {di}")
    else:
        docs = load_yaml_all(text, name)
    for di, doc in enumerate(docs):
        where = f"{name}: document {di}"
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError(f"expected a Kubernetes object (a mapping), got {type(doc).__name__}", where=where)
        if doc.get("kind") == "List":
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise InputError("items: expected a list", where=where)
            for ii, item in enumerate(items):
                if not isinstance(item, dict):
                    raise InputError(f"items[{ii}]: expected a Kubernetes object, got {type(item).__name__}", where=where)
                out.append((f"{where} items[{ii}]", item))
        else:
            out.append((where, doc))
    return out


#: True: a JSON text whose brackets, told from the text, nest too little to break `MAX_DEPTH` skips the
#: walk of every decoded value (`check_depth`, a tenth of reading a dump: the text's pass costs less than
#: half of it); False: every document is walked (the reference)
JSON_TEXT_DEPTH = True

#: what is left of a JSON text to tell its nesting from: string quotes, and every bracket as `(` or `)`
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}')
_BRACKETS = bytes.maketrans(b"[]{}", b"()()")
#: a text with more escapes than this is walked instead (an escape-heavy text, e.g. kubectl's
#: last-applied annotations on every pod, is read faster by the walk)
ESCAPES_MAX = 100_000
#: one escape: a backslash and the character after it
_ESCAPE = re.compile(rb"\\.", re.DOTALL)


def json_text_within(text: str, limit: int) -> bool:
    """Whether no value of a JSON text (one value, or several one after another) that a decoder
    accepted is nested more than `limit` levels deep, as `check_depth` counts; False when that cannot
    be told cheaply (the caller then walks the decoded values, which also finds the path).

    From the text alone: the escapes are dropped (in valid JSON a backslash only ever starts one, inside
    a string), then all but quotes and brackets, then the strings; what is left is the brackets of the
    arrays and objects, balanced. Each pass that deletes the empty pairs lowers the nesting by one
    level, so a text emptied by `limit` + 1 passes nests at most `limit` + 1 containers, and the
    innermost of those sits `limit` levels below the outermost: within the bound."""
    if limit < 0:  # (every value is refused, a scalar too)
        return False
    try:
        b = text.encode()
    except UnicodeEncodeError:  # a lone surrogate (stdin read with surrogateescape)
        return False
    if b"\\" in b:
        # every backslash lies between the first and the last (and the character the last escapes):
        # only that span is counted and rewritten (a dump's escapes sit in its ConfigMap's conf). The
        # first backslash of a text starts an escape, so the span's escapes are the text's
        first, last = b.find(b"\\"), b.rfind(b"\\")
        span = b[first:last + 2]
        if span.count(b"\\") > ESCAPES_MAX:
            return False
        # left to right, a backslash and the character it escapes go together (`\\` is one escape);
        # the digits of `\uXXXX` stay with the rest, as no digit is structure
        b = b[:first] + _ESCAPE.sub(b"", span) + b[last + 2:]
    b = b.translate(_BRACKETS, _NOT_STRUCTURE)
    if b.count(b'"') == 2 * b.count(b'""'):
        # every run of quotes is even (the count of `""` takes half of each run, rounded down), so
        # each bracket has an even number of quotes before it: none is inside a string, and the
        # brackets are what is left without the quotes
        b = b.translate(None, b'"')
    else:
        # a run of quotes is strings closing and opening around no bracket: dropping two adjacent
        # quotes leaves every bracket inside or outside a string as it was
        b = b.replace(b'""', b"")
        if b'"' in b:
            b = b"".join(b.split(b'"')[::2])
    for _ in range(limit + 1):
        if not b:
            return True
        shorter = b.replace(b"()", b"")
        if len(shorter) == len(b):
            return False  # not balanced: not a text a decoder accepted
        b = shorter
    return not b


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(digits.lstrip('-'))} digits is too long (at most {MAX_INT_DIGITS})")
    return int(digits)


def json_documents(text: str, name: str) -> list[Any]:
    """The JSON values in text: one (orjson, the fast path) or several one after another."""
    try:
        return [orjson.loads(text)]
    except orjson.JSONDecodeError:
        pass
    # the slow path: JSON values one after another, or a value orjson refused (an integer past 64 bits,
    # nesting past its limit), with Python's decoder bounded as the YAML loader is
    docs: list[Any] = []
    dec = json.JSONDecoder(parse_int=_bounded_int)
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos >= end:
            return docs
        try:
            doc, pos = dec.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise InputError(f"malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}", where=name) from None
        except ValueError as e:  # an over-long integer (_bounded_int)
            raise InputError(f"malformed JSON: {e}", where=name) from None
        except RecursionError:
            raise InputError(f"malformed JSON: nested more than {MAX_DEPTH} levels deep", where=name) from None
        docs.append(doc)
