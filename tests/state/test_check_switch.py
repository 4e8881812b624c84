"""The self-check's switch follows APPORTION_CHECK_STATE as os.environ holds it, set and unset at run time."""

from __future__ import annotations

import os

import pytest

from apportion.state import check


@pytest.mark.parametrize(("value", "on"), [("1", True), ("yes", True), ("0", False), ("", False), (None, False)])
def test_enabled_reads_the_variable_as_set_now(monkeypatch: pytest.MonkeyPatch, value: str | None, on: bool) -> None:
    monkeypatch.setenv(check.ENV, "1")
    assert check.enabled()
    if value is None:
        monkeypatch.delenv(check.ENV)
    else:
        monkeypatch.setenv(check.ENV, value)
    assert check.enabled() is on
    # the plain reading, which the direct one stands for
    assert on is (os.environ.get(check.ENV, "") not in ("", "0"))
