"""enqueue's lean session set-up (docs/semantics.md K43; tests/actions/test_enqueue_lean.py) over a tree that
changes: jobs of several minResources submitted to leaves under parents with limits, finished and
deleted, a parent's capability changed, a leaf closed and opened, a leaf added (a new tree, so the
drain's kept shape and the plans are worked out again), in sessions with and without why-pending texts.
With every K43 switch on and off the sessions decide the same, and explain the same where they make the
texts, under the self-check."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_capacity_carried_plans import CONFS, _base, a_step

from apportion.actions import enqueue
from apportion.plugins.capacity.admission import Admission
from apportion.plugins.capacity.drain_subset import DrainPicker
from apportion.state import check
from session_steps import play_texts


def _sessions(steps: list, on: bool, conf: Any, texts: list[bool], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setattr(enqueue, "bare_refusals", on)
    monkeypatch.setattr(Admission, "lazy_texts", on)
    monkeypatch.setattr(enqueue, "lean_backlog", on)
    monkeypatch.setattr(DrainPicker, "carry_shape", on)
    return play_texts(steps, _base, conf, texts)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(a_step(), min_size=1, max_size=50), st.sampled_from(CONFS), st.lists(st.booleans(), min_size=1,
                                                                                     max_size=4))
def test_lean_enqueue_over_a_changing_tree_decides_as_the_plain_one(monkeypatch: pytest.MonkeyPatch, steps: list,
                                                                    conf: Any, texts: list[bool]) -> None:
    monkeypatch.setenv(check.ENV, "1")
    assert (_sessions(steps, True, conf, texts, monkeypatch)
            == _sessions(steps, False, conf, texts, monkeypatch))
