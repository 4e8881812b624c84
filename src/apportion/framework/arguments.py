"""A plugin's arguments with Volcano's typed getters (`framework/arguments.go`)."""

from __future__ import annotations

from typing import Any

from apportion.errors import shown


class Arguments:
    """Plugin arguments with Volcano's typed getters: a value of the wrong type is ignored with a warning."""

    def __init__(self, raw: dict[str, Any], *, owner: str, warnings: list[str] | None = None) -> None:
        self.raw = raw
        self.owner = owner
        self.warnings = warnings if warnings is not None else []

    def _warn(self, key: str, value: Any, want: str) -> None:
        self.warnings.append(f"{self.owner}: argument {key}={shown(value)} is not {want}; default kept")

    def get_int(self, key: str, default: int) -> int:
        """GetInt: the integer under `key`, else `default`."""
        if key not in self.raw:
            return default
        v = self.raw[key]
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        self._warn(key, v, "an integer")
        return default

    def get_float(self, key: str, default: float) -> float:
        """GetFloat64: the number under `key`, else `default`."""
        if key not in self.raw:
            return default
        v = self.raw[key]
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        self._warn(key, v, "a number")
        return default

    def get_bool(self, key: str, default: bool) -> bool:
        """GetBool: the boolean under `key` (or a string Go's ParseBool reads), else `default`."""
        if key not in self.raw:
            return default
        v = self.raw[key]
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.strip().lower() in ("true", "false", "1", "0", "t", "f"):
            return v.strip().lower() in ("true", "1", "t")
        self._warn(key, v, "a boolean")
        return default

    def get_str(self, key: str, default: str) -> str:
        """GetString: the string under `key`, else `default`."""
        if key not in self.raw:
            return default
        v = self.raw[key]
        if isinstance(v, str):
            return v
        self._warn(key, v, "a string")
        return default
