"""Carried placement answers keep the rows whose state is the last session's (framework/placement_carry.py
`same_rows`, docs/semantics.md K54): over random events and sessions on one cache (test_placement_carry's
rounds: gangs of a few shapes and constraints, pods ending or moved, groups deleted, a node relabelled),
under both confs (predicates and nodeorder; with binpack), sessions that keep those rows decide, explain,
bind, pipeline, evict and record unresolvable nodes as sessions that work every pending row out again,
with the self-check (carried answers against fresh ones at every first use) on; a gang bound by one
session and back through the next open keeps its rows; and a row state changed behind the cache's back
is caught by the self-check."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_placement_carry import CONFS, _base, _observe, rounds

from apportion.framework import placement_carry
from apportion.framework.session import Session
from apportion.state import check
from apportion.state.events import ADDED
from session_steps import play

import k8s

_SAME_ROWS = placement_carry.same_rows


def _sessions(steps: list, skip: bool, conf: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setattr(placement_carry, "SKIP_SAME_ROWS", skip)
    return play(steps, _base, conf, _observe)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(rounds(), st.sampled_from(CONFS))
def test_rows_kept_by_state_decide_as_rows_worked_out_again(monkeypatch: pytest.MonkeyPatch, steps: list,
                                                          conf: Any) -> None:
    monkeypatch.setenv(check.ENV, "1")
    assert _sessions(steps, True, conf, monkeypatch) == _sessions(steps, False, conf, monkeypatch)


def _gang_steps() -> list[tuple[str, list[tuple[str, dict]]]]:
    """Three sessions, each placing a new gang of one shape: the second and third carry the last one's
    answers, with the rows its binds reached pending."""
    steps: list[tuple[str, list[tuple[str, dict]]]] = []
    for g in range(3):
        group = f"w{g}"
        steps.append(("submit", [(ADDED, k8s.podgroup(group, queue="qa", min_member=2))]
                      + [(ADDED, k8s.pod(f"{group}-{t}", group, cpu=1)) for t in range(2)]))
        steps.append(("SESSION", []))
    return steps


def test_rows_a_bound_gang_reached_keep_their_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")
    kept: list[int] = []

    def counted(*args: Any) -> set[int]:
        got = _SAME_ROWS(*args)
        kept.append(len(got))
        return got

    monkeypatch.setattr("apportion.framework.placement.same_rows", counted)
    with_skip = play(_gang_steps(), _base, CONFS[1], _observe)
    assert sum(kept) > 0
    monkeypatch.setattr(placement_carry, "SKIP_SAME_ROWS", False)
    assert with_skip == play(_gang_steps(), _base, CONFS[1], _observe)


def test_a_row_state_changed_behind_the_cache_fails_the_self_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last session's node view is spoiled where its binds went back to it: the rows compare equal
    to the spoiled state no more, but a row whose answers were wrongly kept would be caught; here the
    current view is spoiled instead, so a kept row's answers differ from fresh ones."""
    monkeypatch.setenv(check.ENV, "1")
    spoiled: list[bool] = []

    def before(i: int, ssn: Session) -> None:
        since = ssn.placement.since
        if spoiled or since is None:
            return
        for got in ssn.placement.answers.values():
            rows = sorted(got.maybe)
            if rows:
                # the same change in both sessions' views: the row compares equal, its state is not
                # the one the answers were worked out for
                for states in (ssn.placement.row_states, since[1]):
                    states["nodeorder"][0][rows[0]] += 10.0**9
                spoiled.append(True)
                return

    with pytest.raises(check.StateCheckError, match="carried from the last session"):
        play(_gang_steps(), _base, CONFS[0], _observe, before)
    assert spoiled
