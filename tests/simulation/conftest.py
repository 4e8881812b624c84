"""The simulator tests run with the state self-check on: after every session the simulator's cache is
compared with one rebuilt from scratch from the same objects."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _check_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPORTION_CHECK_STATE", "1")
