"""Counting calls in tests: a method wrapped so that each call is noted before the real one runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


def record_calls(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str,
                 note: Callable[..., Any]) -> list[Any]:
    """Replace `owner.name` (for the test) by a wrapper that appends `note(*args)` to the list it
    returns, in call order, and then calls the real one with the same arguments."""
    seen: list[Any] = []
    real = getattr(owner, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(note(*args, **kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return seen
