"""Reading kubectl output (YAML or JSON): files (or stdin) into decoded objects, each with its location (file, document
index, `items[i]` of a List), before any object is interpreted."""

from __future__ import annotations

import json
import sys
from typing import Any

import orjson
import yaml

from apportion.errors import InputError

try:  # the C loader is ~8x faster on large kubectl dumps
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


def read_documents(paths: list[str]) -> list[tuple[str, Any]]:
    """(location, object) for every object in the files; `-` reads stdin. Lists are flattened."""
    out: list[tuple[str, Any]] = []
    for path in paths:
        try:
            if path == "-":
                text = sys.stdin.read()
            else:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", where=path) from None
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", where=path) from None
        name = "<stdin>" if path == "-" else path
        out.extend(parse_documents(text, name))
    return out


def parse_documents(text: str, name: str) -> list[tuple[str, Any]]:
    """(location, object) for every object in a kubectl dump: YAML documents, or JSON (`kubectl get -o
    json`: one object or List, or several objects one after another)."""
    out: list[tuple[str, Any]] = []
    if text.lstrip()[:1] in ("{", "["):
        docs = json_documents(text, name)
    else:
        try:
            docs = list(yaml.load_all(text, Loader=_Loader))
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            loc = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise InputError(f"malformed YAML{loc}: {problem}", where=name) from None
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



def json_documents(text: str, name: str) -> list[Any]:
    """The JSON values in text: one (orjson, the fast path) or several one after another."""
    try:
        return [orjson.loads(text)]
    except orjson.JSONDecodeError:
        pass
    docs: list[Any] = []
    dec = json.JSONDecoder()
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
        docs.append(doc)
