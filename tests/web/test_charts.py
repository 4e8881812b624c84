"""apportion.web.charts: the numbers and geometry every page's charts are drawn from."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.resources import CPU, GPU, MEMORY
from apportion.web import PALETTE, environment
from apportion.web.charts import (
    RESOURCE_WORDS,
    Bar,
    BoxRow,
    Lane,
    Line,
    Piece,
    allocated_vs_deserved,
    boxes,
    gantt,
    line_chart,
    number,
    quantile,
)


def test_numbers_read_the_same_everywhere() -> None:
    assert [number(v) for v in (None, math.inf, math.nan, 3.0, 1234567.0, 2.5, 21.3333, 0.001)] == [
        "-", "∞", "-", "3", "1,234,567", "2.5", "21.33", "0"]
    # the resource names are apportion.resources' own
    assert set(RESOURCE_WORDS) == {CPU, MEMORY, GPU}


def test_a_line_charts_config_is_strict_json_with_gaps_for_non_numbers() -> None:
    c = line_chart("f", "fairness", [0, 10, 20], [Line("Jain", "fairness", [math.nan, 0.5, math.inf])], "Jain",
                   time=False, end_s=20)
    text = json.dumps(c.config(), allow_nan=False)  # JSON.parse in the page rejects NaN
    assert json.loads(text)["series"][0]["values"] == [None, 0.5, None]
    assert (c.x_unit, c.x_scale) == ("seconds", 1.0)
    assert line_chart("g", "", [0, 7200], [], "", time=False).x_unit == "minutes"
    assert all(s.colour in PALETTE for s in allocated_vs_deserved("q", "q", "cpu", "cores", [0, 1], [1, 2], [2, 2],
                                                                   pending=[0, 1], other=[1, 1]).lines)


def test_the_fallback_table_shows_the_newest_rows_live_and_spreads_them_over_a_run() -> None:
    x = list(range(100))
    live = line_chart("a", "", x, [Line("v", "allocated", [float(i) for i in x])], "", table_rows=5)
    assert [r[1][0] for r in live.table()] == ["99", "98", "97", "96", "95"]
    run = line_chart("b", "", x, [Line("v", "allocated", [float(i) for i in x])], "", time=False, table_rows=5,
                     table_latest=False)
    assert [r[1][0] for r in run.table()] == ["0", "25", "50", "74", "99"]  # first and last included
    html = environment().from_string('{% import "charts.html" as charts %}{{ charts.line_chart(c) }}').render(c=run)
    assert "5 of 100 points, spread over the run" in html and html.count("<tr><th scope=\"row\">") == 5


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=40), st.floats(0, 1))
def test_quantiles_are_numpys(xs: list[float], q: float) -> None:
    assert quantile(sorted(xs), q) == pytest.approx(float(np.quantile(xs, q)), rel=1e-9, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 150), st.integers(1, 80), st.integers(0, 9)), max_size=8))
def test_gantt_bars_stay_in_the_plot_and_are_as_tall_as_their_amount(pieces: list[tuple[int, int, int]]) -> None:
    lanes = [Lane(id=f"r{i}", label=f"r{i}", pieces=[Piece(a, a + n, v, "")]) for i, (a, n, v) in enumerate(pieces)]
    g = gantt("g", "t", lanes, 0, 100, str, now=40)
    assert g.now_x is not None and g.left < g.now_x < g.width
    biggest = max([v for _, _, v in pieces] + [0])
    for lane, (a, n, v) in zip(g.lanes, pieces):
        if a + n <= 0 or a >= 100:
            assert lane["bars"] == []  # wholly outside the chart's span
            continue
        (b,) = lane["bars"]
        assert g.left <= b["x"] and b["x"] + b["w"] <= g.width - 10 + 1.5
        assert lane["y"] <= b["y"] and b["y"] + b["h"] <= lane["y"] + 44
        if v and v == biggest:
            assert b["h"] == 44 - 10


def test_box_plots_order_their_marks_and_keep_empty_rows() -> None:
    b = boxes("w", "waits", [BoxRow("q1", "A", "allocated", [60, 120, 180, 600]), BoxRow("q2", "A", "allocated", [])],
              "minutes", 60)
    r1, r2 = b.rows
    assert r1["x_min"] <= r1["x_q1"] <= r1["x_med"] <= r1["x_q3"] <= r1["x_max"] <= b.width
    assert r1["stats"]["median"] == "2.5" and r1["stats"]["max"] == "10"
    assert "x_min" not in r2 and r2["stats"]["n"] == 0
    assert b.ticks[0][1] == "0" and b.ticks[-1][0] <= b.width


def test_a_bar_says_what_it_draws() -> None:
    b = Bar("batch", MEMORY, "memory", "GiB", 64 * 2**30, {"allocated": 16 * 2**30, "deserved": 32 * 2**30},
            divisor=2**30)
    assert (b.pct("allocated"), b.pct("deserved"), b.pct("guarantee")) == (25.0, 50.0, None)
    assert b.aria() == "batch memory: allocated 16, deserved 32 GiB of 64"
    html = environment().from_string('{% import "charts.html" as charts %}{{ charts.bars([b]) }}').render(b=b)
    assert f'data-allocated="{16 * 2**30}"' in html and "guar." not in html  # only what it has
