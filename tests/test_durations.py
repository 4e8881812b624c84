"""One duration grammar for every reader (reclaim's minRuntime, forecast's runtimes and horizons)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apportion.durations import newest, parse_duration, parse_time, try_time
from apportion.errors import InputError


@pytest.mark.parametrize(("text", "seconds"), [
    ("90", 90.0), (90, 90.0), ("1.5", 1.5), ("1h30m", 5400.0), ("500ms", 0.5), ("10m", 600.0), ("2h", 7200.0),
])
def test_parse_duration_accepts_seconds_and_go_durations(text: object, seconds: float) -> None:
    assert parse_duration(text, "f") == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "1x", "-5", "inf", "nan", "m10", True, None, [1]])
def test_parse_duration_names_the_field_on_bad_input(bad: object) -> None:
    with pytest.raises(InputError, match="f"):
        parse_duration(bad, "f")


@given(st.integers(0, 99), st.integers(0, 59), st.integers(0, 59))
def test_go_duration_sums_its_parts(h: int, m: int, s: int) -> None:
    assert parse_duration(f"{h}h{m}m{s}s", "f") == h * 3600 + m * 60 + s


def test_times() -> None:
    assert try_time("not a time") is None and try_time("") is None
    assert parse_time("2026-01-01T00:00:00Z", "f") == parse_time("2026-01-01T00:00:00+00:00", "f")
    with pytest.raises(InputError):
        parse_time("yesterday", "f")
    assert newest(["", "2026-01-02T00:00:00Z", "junk", "2026-01-01T00:00:00Z"]) == parse_time("2026-01-02T00:00:00Z", "f")
    assert newest(["junk"]) is None
