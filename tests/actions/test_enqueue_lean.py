"""enqueue's lean session set-up (docs/semantics.md K43): in a session that makes no why-pending texts, the
answers asked by bucket carry no refusal's explanation (`enqueue.bare_refusals`; capacity walks the
levels root first, plugins/capacity/bare_answers.py); a level's verdict keeps its shortfall's text
unmade until a message needs it (`Admission.lazy_texts`); the backlog is taken in one pass over the
visited jobs and the votes' answers split by slices (`enqueue.lean_backlog`); the drain's survey takes
the queues' places in the tree from the memo (`DrainPicker.carry_shape`). Over random events and
sessions on one cache, with and without texts, the sessions decide the same with all these switches on
and off, and explain the same where they make the texts, under the self-check (which compares every
bare answer with its vote's reference, the backlog with the pass over every job, the survey with the
one worked out afresh). tests/plugins/capacity/test_capacity_lean_enqueue.py plays the same over a
tree that changes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_enqueue_by_bucket import a_crowd
from test_enqueue_carried import CONF, _base, a_step

from apportion.actions import enqueue
from apportion.plugins.capacity.admission import Admission
from apportion.plugins.capacity.drain_subset import DrainPicker
from apportion.state import check
from session_steps import play_texts


def lean(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """Every K43 switch on or off."""
    monkeypatch.setattr(enqueue, "bare_refusals", on)
    monkeypatch.setattr(Admission, "lazy_texts", on)
    monkeypatch.setattr(enqueue, "lean_backlog", on)
    monkeypatch.setattr(DrainPicker, "carry_shape", on)


def _sessions(steps: list, fast: bool, monkeypatch: pytest.MonkeyPatch, texts: list[bool]) -> list[Any]:
    lean(monkeypatch, fast)
    return play_texts(steps, _base, CONF, texts)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(a_step(), a_crowd()), min_size=1, max_size=60),
       st.lists(st.booleans(), min_size=1, max_size=4))
def test_lean_enqueue_decides_as_the_plain_one(monkeypatch: pytest.MonkeyPatch, steps: list,
                                                texts: list[bool]) -> None:
    monkeypatch.setenv(check.ENV, "1")
    assert _sessions(steps, True, monkeypatch, texts) == _sessions(steps, False, monkeypatch, texts)
