"""collector_off: the collector off inside, back as it was after (also after an error), and what was
allocated inside aged into the oldest generation, not left in the youngest."""

from __future__ import annotations

import gc

import pytest

from apportion.cli.collector import collector_off


def test_off_inside_and_back_on_after() -> None:
    assert gc.isenabled()
    with collector_off():
        assert not gc.isenabled()
        kept = [[i] for i in range(10_000)]
        with collector_off():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    # the lists made inside were moved out of the youngest generation without a collection
    assert gc.get_count()[0] < len(kept)
    assert gc.is_tracked(kept[0])


def test_an_error_inside_turns_it_back_on() -> None:
    with pytest.raises(RuntimeError), collector_off():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_left_off_when_it_was_off() -> None:
    gc.disable()
    try:
        with collector_off():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
