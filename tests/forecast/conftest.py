"""Fixtures shared by the forecast's tests."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def passes() -> Iterator[list[int]]:
    """The generations of the collections Python runs meanwhile."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)
