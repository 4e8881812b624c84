"""A touched row that gained entries at session open (docs/semantics.md K53): its task map made with a
cursor on the last row (`row_tasks_more`, framework/open_rows.py) is the map made from the row, for any
last row (keys repeated or not) and any row now (entries kept, replaced by a task of the same key or
another, taken out, new ones inserted anywhere, keys met twice); `row_tasks` with `GROWN_ROWS` on and
off; and sessions opened with `GROWN_ROWS` and `SKIP_UNSWAPPED` (framework/open_state.py: a row that
lost no entry keeps its base entries as they are) off against the same with them on, each compared
with a full open."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_open_state import _run as run_open_steps
from test_open_state import _same_either_way
from test_open_state import step as open_steps

from apportion.cluster.model import TaskInfo, TaskStatus
from apportion.framework import open_rows
from apportion.framework.open_rows import row_tasks, row_tasks_more, tasks_map
from apportion.resources import Resource

NAMES = ["a", "b", "c", "d", "e", "f", "g"]


def _task(name: str) -> TaskInfo:
    return TaskInfo(uid=f"uid-{name}-{id(object())}", name=name, namespace="ns", job="j", resreq=Resource(),
                    status=TaskStatus.RUNNING)


@st.composite
def a_grown_row(draw: st.DrawFn) -> tuple[list, list]:
    """(a row's last entries, its entries now): each last entry kept, replaced (same key or another) or
    taken out, new entries (keys new or among the last ones) inserted at any place; the last keys
    distinct or not, an entry kept twice now and then."""
    names = draw(st.lists(st.sampled_from(NAMES), max_size=7, unique=draw(st.booleans())))
    old = [(0, _task(n), "used", None, "j", i) for i, n in enumerate(names)]
    now: list = []
    for e in old:
        what = draw(st.sampled_from(["keep", "keep", "keep", "same-key", "other-key", "drop", "twice"]))
        if what in ("keep", "twice"):
            now.append(e)
            if what == "twice":
                now.append(e)
        elif what == "same-key":
            now.append((0, _task(e[1].name), "used", None, "j", e[5]))
        elif what == "other-key":
            now.append((0, _task(draw(st.sampled_from(["x", "y"]))), "used", None, "j", e[5]))
    for i, n in enumerate(draw(st.lists(st.sampled_from(["a", "d", "x", "z", "w", "v"]), max_size=5))):
        now.insert(draw(st.integers(0, len(now))), (0, _task(n), "used", None, "k", i))
    return old, now


def _pairs(m: dict[str, TaskInfo]) -> list[tuple[str, int]]:
    return [(k, id(t)) for k, t in m.items()]


@settings(max_examples=150, deadline=None)
@given(a_grown_row())
def test_a_grown_row_has_the_map_made_from_the_row(rows: tuple[list, list]) -> None:
    old, now = rows
    assert _pairs(row_tasks_more(now, old, tasks_map(old))) == _pairs(tasks_map(now))


@settings(max_examples=100, deadline=None)
@given(a_grown_row())
def test_row_tasks_is_the_same_with_grown_rows_on_and_off(rows: tuple[list, list]) -> None:
    old, now = rows
    got = row_tasks(now, old, tasks_map(old))
    with mock.patch.object(open_rows, "GROWN_ROWS", False):
        want = row_tasks(now, old, tasks_map(old))
    assert _pairs(got) == _pairs(want) == _pairs(tasks_map(now))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(open_steps, min_size=1, max_size=30))
def test_opens_without_skipping_unswapped_rows_are_the_same(monkeypatch: pytest.MonkeyPatch, steps: list) -> None:
    """K53's `SKIP_UNSWAPPED` off (every touched row's entries looked up in the swaps) takes out, puts in
    and replaces what the opens with it on do, and both are full opens (`_run` compares each with one,
    under the self-check)."""
    _same_either_way(monkeypatch, "SKIP_UNSWAPPED", steps)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(open_steps, min_size=1, max_size=30))
def test_opens_with_grown_rows_made_in_full_are_full_opens(monkeypatch: pytest.MonkeyPatch, steps: list) -> None:
    """K53's `GROWN_ROWS` off (every grown row's map made from the row): the opens are full ones as
    with it on (`_run` compares each with one, under the self-check, task maps in order)."""
    monkeypatch.setattr(open_rows, "GROWN_ROWS", False)
    run_open_steps(steps, monkeypatch)
