"""The early quiet test's sums of a held record's charged amounts (forecast/quiet_held.py `_watched`,
`WATCHED_AT_ONCE`; semantics F16): written out, they are `_delta`'s from no amounts (the reference),
the same integers with the scalars in the same order, or None for a scalar named cpu or memory."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_quiet_lean_step import _charged

from apportion.forecast import quiet_held
from apportion.forecast.quiet_held import _Held, _watched
from apportion.state.check import ENV, StateCheckError


def _both(amounts: tuple[Any, ...], checking: bool) -> tuple[Any, Any, Any, Any]:
    """`_watched` written out and through `_delta`, each on its own record (answer, kept sums)."""
    fast, reference = _Held("q", amounts, {}), _Held("q", amounts, {})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(quiet_held, "WATCHED_AT_ONCE", True)
        got = _watched(fast, checking)
        mp.setattr(quiet_held, "WATCHED_AT_ONCE", False)
        want = _watched(reference, checking)
    return got, want, fast.watched, reference.watched


@settings(max_examples=100, deadline=None)
@given(_charged(), st.booleans())
def test_watched_written_out_is_the_delta_from_nothing(amounts: tuple[Any, ...], checking: bool) -> None:
    """Random charged amounts (inqueue and elastic at times None, scalars in any order, cpu among
    them at times): the same sums, the scalars' keys in the same order, kept alike on the record."""
    got, want, kept, kept_ref = _both(amounts, checking)
    assert got == want and kept == kept_ref
    if got is not None:
        assert list(got[2]) == list(want[2])
        assert kept is got


def test_the_self_check_fails_loudly_on_a_wrong_written_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reference that disagrees: the written-out sums are refused under the self-check."""
    monkeypatch.setenv(ENV, "1")
    monkeypatch.setattr(quiet_held, "_watched_reference", lambda held: (0, 0, {}))
    held = _Held("q", ((4, 8, (("pods", 1),)), (4, 8, (("pods", 1),)), None, None), {})
    with pytest.raises(StateCheckError, match="written out"):
        _watched(held, True)
