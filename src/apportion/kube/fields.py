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


class Fields:
    """A mapping with its location, for field access that names the field on error."""

    def __init__(self, data: Any, where: str) -> None:
        self.data = data
        self.where = where

    def fail(self, path: str, msg: str) -> InputError:
        """An InputError naming the object and the field path."""
        return InputError(msg, where=f"{self.where}: {path}" if path else self.where)

    def get(self, path: str, default: Any = None) -> Any:
        """The value at a dotted path, or `default` where the path stops."""
        cur = self.data
        for part in path.split("."):
            if cur is None:
                return default
            if not isinstance(cur, dict):
                raise self.fail(path, f"expected a mapping at {shown(part)}, got {type(cur).__name__}")
            cur = cur.get(part)
        return default if cur is None else cur

    def str_(self, path: str, default: str | None = None, *, required: bool = False) -> str:
        """A string field (numbers accepted as their text); missing gives `default`, or an error when
        required."""
        v = self.get(path)
        if v is None:
            if required:
                raise self.fail(path, "required field is missing")
            return default or ""
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise self.fail(path, f"expected a string, got {type(v).__name__}")
        return str(v)

    def int_(self, path: str, default: int) -> int:
        """An integer field (a string of digits too), within int32 as every such Kubernetes field is."""
        v = self.get(path)
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
        v = self.get(path)
        if v is None:
            return default
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.lower() in ("true", "false"):
            return v.lower() == "true"
        raise self.fail(path, f"expected a boolean, got {shown(v)}")

    def map_(self, path: str) -> dict[str, Any]:
        """A mapping field; missing gives an empty one."""
        v = self.get(path)
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
            if isinstance(v, (dict, list)):
                raise self.fail(f"{path}.{k}", f"expected a string, got {type(v).__name__}")
            out[str(k)] = "" if v is None else (str(v).lower() if isinstance(v, bool) else str(v))
        return out

    def list_(self, path: str) -> list[Any]:
        """A list field; missing gives an empty one."""
        v = self.get(path)
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(path, f"expected a list, got {type(v).__name__}")
        return v

    def resource(self, path: str) -> Resource | None:
        """A resource list (`{cpu: 500m, memory: 1Gi}`) as a Resource; None when missing."""
        v = self.get(path)
        if v is None:
            return None
        if not isinstance(v, dict):
            raise self.fail(path, f"expected a resource list mapping, got {type(v).__name__}")
        try:
            return Resource.from_resource_list(v)
        except QuantityError as e:
            raise self.fail(f"{path}.{e.bare.split(':', 1)[0]}", e.bare.split(": ", 1)[-1]) from None


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
