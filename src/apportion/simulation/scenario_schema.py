"""The scenario file's JSON Schema and the check against it, with errors that name the deepest failing field.

The first of the scenario loader's three steps (simulation/scenario.py); the schema is package data,
`scenario.schema.json`, documented in docs/scenario.md.
"""

from __future__ import annotations

import json
from typing import Any

from apportion.errors import InputError

_SCHEMA: dict[str, Any] | None = None


def schema() -> dict[str, Any]:
    """The scenario JSON Schema (package data, loaded once)."""
    global _SCHEMA
    if _SCHEMA is None:
        from importlib import resources as ires  # (here: only a scenario file is checked)

        text = ires.files("apportion.simulation").joinpath("scenario.schema.json").read_text("utf-8")
        _SCHEMA = json.loads(text)
    return _SCHEMA


def field_path(parts: Any) -> str:
    """`['workload', 'jobs', 2, 'duration']` -> `workload.jobs[2].duration`."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "(top level)"


def validate_document(data: Any, source: str) -> None:
    """Check the document against the schema; raise InputError naming the deepest failing field."""
    # imported here: jsonschema is a tenth of a command's start, and only a scenario file is checked
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    errors = list(validator.iter_errors(data))
    if not errors:
        return
    err = jsonschema.exceptions.best_match(errors)
    # best_match prefers shallow errors of a oneOf; descend to the most specific context
    while err.context:
        if err.validator in ("oneOf", "anyOf") and isinstance(err.instance, dict) and _branch_keys(err):
            branch = _keyed_branch(err)
            if branch is None:
                # no alternative's key is present (`{exponentail: 10}`): "not a number" (the
                # first alternative) would mislead; list what the field accepts instead
                keys = _branch_keys(err)
                got = ", ".join(map(str, err.instance)) or "none"
                raise InputError(f"expected {''.join(f'a {t} or ' for t in _scalar_types(err))}a mapping with one of "
                                 f"{', '.join(keys)}; got key(s) {got}",
                                 where=f"{source}: {field_path(err.absolute_path)}")
            err = jsonschema.exceptions.best_match(branch)
            continue
        err = jsonschema.exceptions.best_match(err.context)
    msg = err.message
    if err.validator == "additionalProperties":
        msg = msg.replace("Additional properties are not allowed", "unknown field(s)")
    raise InputError(msg, where=f"{source}: {field_path(err.absolute_path)}")


def _alternatives(err: Any) -> list[dict[str, Any]]:
    alts = err.schema.get(err.validator) if isinstance(err.schema, dict) else None
    return [a for a in alts if isinstance(a, dict)] if isinstance(alts, list) else []


def _branch_keys(err: Any) -> list[str]:
    return [k for a in _alternatives(err) for k in a.get("required", [])[:1]]


def _scalar_types(err: Any) -> list[str]:
    return [str(a["type"]) for a in _alternatives(err) if a.get("type") in ("number", "integer", "string")]


def _keyed_branch(err: Any) -> list[Any] | None:
    """The errors of the oneOf alternative whose required key the mapping has (None: no such one)."""
    for i, alt in enumerate(_alternatives(err)):
        req = alt.get("required") or []
        if req and all(k in err.instance for k in req):
            sub = [c for c in err.context if c.relative_schema_path and c.relative_schema_path[0] == i]
            if sub:
                return sub
    return None
