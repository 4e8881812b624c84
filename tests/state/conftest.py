"""The state tests run with the self-check on: every session over a cache is compared with a rebuild."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _check_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPORTION_CHECK_STATE", "1")
