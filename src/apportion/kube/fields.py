"""Typed field access on a decoded Kubernetes object: every getter names the object and the field path
in the InputError it raises for a value of the wrong type."""

from __future__ import annotations

import re
from typing import Any

from apportion.errors import InputError, QuantityError, shown
from apportion.resources import Resource

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
#: an integer written as a string: ASCII digits only, short enough to convert
_INT = re.compile(r"[-+]?[0-9]{1,20}")
#: dotted paths split once: parsers name the same few dozen paths for every object
_PATHS: dict[str, tuple[str, ...]] = {}


class Fields:
    """A mapping with its location, for field access that names the field on error."""

    __slots__ = ("data", "where", "prefix")

    def __init__(self, data: Any, where: str, prefix: str = "") -> None:
        self.data = data
        self.where = where
        #: the path of `data` inside the object it belongs to (`spec.`), for `sub` views; "" at the top
        self.prefix = prefix

    def fail(self, path: str, msg: str) -> InputError:
        """An InputError naming the object and the field path."""
        path = self.prefix + path if path else self.prefix[:-1]
        return InputError(msg, where=f"{self.where}: {path}" if path else self.where)

    def sub(self, name: str) -> Fields:
        """The mapping under `name` as a view of its own, read with paths relative to it; its errors name
        the whole path, exactly as reading through this object would. A parser that reads many fields of
        `spec` saves a dictionary walk per field."""
        d = self.data
        if type(d) is dict:
            v = d.get(name)
            if v is None or type(v) is dict:
                return Fields(v, self.where, f"{self.prefix}{name}.")
        return _Through(self, name)

    def get(self, path: str, default: Any = None) -> Any:
        """The value at a dotted path, or `default` where the path stops."""
        cur = self.data
        parts = _PATHS.get(path)
        if parts is None:
            parts = tuple(path.split("."))
            if len(_PATHS) < 4096:  # bounded, should a caller ever build paths from data
                _PATHS[path] = parts
        for part in parts:
            # decoded documents hold plain dicts: the exact type test is the common case, and cheap
            if type(cur) is dict or isinstance(cur, dict):
                cur = cur.get(part)
            elif cur is None:
                return default
            else:
                raise self.fail(path, f"expected a mapping at {shown(part)}, got {type(cur).__name__}")
        return default if cur is None else cur

    def _at(self, path: str) -> Any:
        """`get(path)`, with a plain dictionary read for a one-step path (most reads through a view)."""
        d = self.data
        if type(d) is dict and "." not in path:
            return d.get(path)
        return self.get(path)

    def str_(self, path: str, default: str | None = None, *, required: bool = False) -> str:
        """A string field (numbers accepted as their text); missing gives `default`, or an error when
        required."""
        d = self.data
        v = d.get(path) if type(d) is dict and "." not in path else self.get(path)  # `_at`, inlined
        if type(v) is str:  # the common case: what str(v) below returns
            return v
        if v is None:
            if required:
                raise self.fail(path, "required field is missing")
            return default or ""
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise self.fail(path, f"expected a string, got {type(v).__name__}")
        return str(v)

    def int_(self, path: str, default: int) -> int:
        """An integer field (a string of digits too), within int32 as every such Kubernetes field is."""
        v = self._at(path)
        if v is None:
            return default
        if isinstance(v, str) and _INT.fullmatch(v.strip()):
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(path, f"expected an integer, got {shown(v)}")
        return self.int32(path, v)

    def int32(self, path: str, v: int) -> int:
        """`v` when it fits an int32 (the type of every integer field apportion reads), else InputError."""
        if not INT32_MIN <= v <= INT32_MAX:
            raise self.fail(path, f"out of range: {shown(v)} (an int32: {INT32_MIN} to {INT32_MAX})")
        return v

    def bool_(self, path: str, default: bool) -> bool:
        """A boolean field (`"true"`/`"false"` accepted); missing gives `default`."""
        v = self._at(path)
        if v is None:
            return default
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.lower() in ("true", "false"):
            return v.lower() == "true"
        raise self.fail(path, f"expected a boolean, got {shown(v)}")

    def map_(self, path: str) -> dict[str, Any]:
        """A mapping field; missing gives an empty one."""
        v = self._at(path)
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise self.fail(path, f"expected a mapping, got {type(v).__name__}")
        return v

    def str_map(self, path: str) -> dict[str, str]:
        """A mapping of strings (labels, annotations): scalars become their text; nested values are errors."""
        m = self.map_(path)
        out = {}
        for k, v in m.items():
            if type(v) is str and type(k) is str:  # the common case: what the conversions below give
                out[k] = v
                continue
            if isinstance(v, (dict, list)):
                raise self.fail(f"{path}.{k}", f"expected a string, got {type(v).__name__}")
            out[str(k)] = "" if v is None else (str(v).lower() if isinstance(v, bool) else str(v))
        return out

    def list_(self, path: str) -> list[Any]:
        """A list field; missing gives an empty one."""
        v = self._at(path)
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(path, f"expected a list, got {type(v).__name__}")
        return v

    def resource(self, path: str) -> Resource | None:
        """A resource list (`{cpu: 500m, memory: 1Gi}`) as a Resource; None when missing."""
        v = self._at(path)
        if v is None:
            return None
        if not isinstance(v, dict):
            raise self.fail(path, f"expected a resource list mapping, got {type(v).__name__}")
        try:
            return Resource.from_resource_list(v)
        except QuantityError as e:
            raise self.fail(f"{path}.{e.bare.split(':', 1)[0]}", e.bare.split(": ", 1)[-1]) from None


class _Through(Fields):
    """A `sub` view of something that is not a plain mapping: every read goes through the parent, so
    its errors (and defaults) are those of the whole path."""

    __slots__ = ("parent", "lead")

    def __init__(self, parent: Fields, name: str) -> None:
        super().__init__(None, parent.where, f"{parent.prefix}{name}.")
        self.parent = parent
        self.lead = f"{name}."

    def get(self, path: str, default: Any = None) -> Any:
        """The value at the path below this view's name, read through the parent."""
        return self.parent.get(self.lead + path, default)


def plain_strs(m: Any) -> dict[str, str] | None:
    """`Fields.str_map` of a value that is missing or a mapping of plain strings; None for anything
    else (which the reference converts, or reports)."""
    if m is None:
        return {}
    if type(m) is not dict:
        return None
    for k, v in m.items():
        if type(k) is not str or type(v) is not str:
            return None
    return dict(m)


def parse_bool_loose(v: str) -> bool | None:
    """strconv.ParseBool's spellings; None for anything else."""
    if v in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if v in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None


def check_name(o: Fields, path: str = "metadata.name") -> str:
    """The object's name: required and not empty."""
    name = o.str_(path, required=True)
    if not name:
        raise o.fail(path, "must not be empty")
    return name
