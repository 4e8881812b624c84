"""The simulator's report and the dashboard draw with one chart code path (apportion.web.charts): for
the same numbers they write the same chart config, the report inlines the very scripts and style sheets
the dashboard serves, and it stays one file that needs nothing else."""

from __future__ import annotations

import html as htmllib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from workload import busy_cluster

from apportion.service.app import create_app
from apportion.service.core import ServiceConfig
from apportion.simulation.engine import simulate
from apportion.simulation.metrics import summarize
from apportion.simulation.report import render_html
from apportion.simulation.report_charts import queue_charts
from apportion.simulation.result import SimulationResult
from apportion.simulation.scenario import parse_scenario
from apportion.web import PALETTE, static_text

U = {"user.name": "admin"}

#: a queue named as one of the dashboard's busy cluster, on cpu only (no GPUs: the report's charts
#: then show cpu, as the dashboard's first chart does)
SCENARIO = """
cluster:
  generate:
  - count: 2
    allocatable: {cpu: 8, memory: 32Gi}
queues:
- kind: Queue
  metadata: {name: batch}
  spec: {weight: 1, deserved: {cpu: 6, memory: 24Gi}}
- kind: Queue
  metadata: {name: other}
  spec: {weight: 1}
workload:
  jobs:
  - {name: a, queue: batch, arrival: 0, duration: 300, tasks: 4, resources: {cpu: 2, memory: 1Gi}}
  - {name: b, queue: other, arrival: 60, duration: 200, tasks: 2, resources: {cpu: 2, memory: 1Gi}}
  - {name: c, queue: batch, arrival: 120, duration: 100, tasks: 2, resources: {cpu: 1, memory: 1Gi}}
"""


@pytest.fixture(scope="module")
def run() -> tuple[SimulationResult, dict[str, Any]]:
    """A small simulated run and its summary."""
    res = simulate(parse_scenario(SCENARIO, source="shared.yaml"))
    return res, summarize(res)


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[Any, TestClient]]:
    """The dashboard with the busy cluster applied and no session run yet: the page's queue history
    then holds exactly the samples a test gives it."""
    app = create_app(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'a.db'}", loop=False))
    with TestClient(app) as c:
        r = c.post("/api/v1/apply", params=U, content=json.dumps({"kind": "List", "apiVersion": "v1",
                                                                   "items": busy_cluster()}))
        assert r.status_code == 200, r.text
        yield app, c


def _config(page: str, figure_id: str) -> dict[str, Any]:
    m = re.search(rf'<figure class="chart" id="{re.escape(figure_id)}".*?data-config=\'([^\']*)\'', page, re.S)
    assert m, f"no chart {figure_id}"
    return json.loads(htmllib.unescape(m.group(1)))


def test_a_queue_over_time_is_the_same_chart_in_the_report_and_on_the_dashboard(
        run: tuple[SimulationResult, dict[str, Any]], fresh: tuple[Any, TestClient]) -> None:
    res, summary = run
    report = render_html(res, summary)
    in_report = _config(report, "queue-batch")
    assert in_report == queue_charts(res)[0].config()
    # the dashboard, given the run's samples of batch (its time: seconds since the epoch)
    app, client = fresh
    samples = app.state.dashboard_samples
    for t, a, d in zip(in_report["x"], in_report["series"][0]["values"], in_report["series"][1]["values"]):
        samples.add("batch", round(t * 1000), {"cpu": (a, d), "memory": (0.0, 0.0)})
    page = client.get("/queues/batch").text
    on_dashboard = _config(page, "history-cpu")
    # the same numbers, lines, colours, dashes, axis label and size; only the time axis differs (wall
    # clock on the dashboard, the run's own time in the report) and the report adds what jobs wait for
    assert on_dashboard["x"] == in_report["x"] and len(in_report["x"]) >= 4
    assert [s["label"] for s in in_report["series"]] == ["allocated", "deserved", "pending"]
    assert on_dashboard["series"] == in_report["series"][:2]
    assert {k: v for k, v in on_dashboard.items() if k not in ("x", "series", "time", "xUnit", "xScale")} == {
        k: v for k, v in in_report.items() if k not in ("x", "series", "time", "xUnit", "xScale")}
    assert (on_dashboard["time"], in_report["time"], in_report["xUnit"]) == (True, False, "minutes")
    # both with the same markup around it: the caption, the canvas' label and the table of the numbers
    for html, fid in ((page, "history-cpu"), (report, "queue-batch")):
        fig = html[html.index(f'<figure class="chart" id="{fid}"'):]
        fig = fig[:fig.index("</figure>")]
        assert f'aria-labelledby="{fid}-cap"' in fig and 'role="img" aria-label="batch, cpu: allocated' in fig
        assert f'<details class="chart-table" id="{fid}-table">' in fig and "<table class=\"data\">" in fig


def test_the_report_inlines_the_files_the_dashboard_serves(run: tuple[SimulationResult, dict[str, Any]],
                                                           fresh: tuple[Any, TestClient]) -> None:
    res, summary = run
    report = render_html(res, summary)
    _app, client = fresh
    page = client.get("/queues/batch").text
    served = {}
    for url in re.findall(r'(?:src|href)="(/static/web/[^"]+\.(?:js|css))"', page):
        served[url.rsplit("/", 1)[1]] = client.get(url).text
    assert set(served) >= {"apportion.css", "charts.js", "uPlot.iife.min.js", "uPlot.min.css"}
    for name in ("apportion.css", "charts.js", "uPlot.iife.min.js", "uPlot.min.css"):
        assert served[name] in report, name  # byte for byte: one look, one chart code
    # one self-contained file: nothing fetched, no pictures of charts (they are drawn)
    assert not re.search(r'<(?:script|img)[^>]+src=|<link[^>]+rel="stylesheet"', report)
    assert "data:image/png" not in report
    assert f"--c-allocated:{PALETTE['allocated']}" in report and f"--c-allocated:{PALETTE['allocated']}" in page
    assert static_text("charts.js") in report


def test_the_report_reads_without_javascript(run: tuple[SimulationResult, dict[str, Any]]) -> None:
    res, summary = run
    report = render_html(res, summary)
    # every line chart has a caption, an accessible label and its numbers in a table
    figures = re.findall(r'<figure class="chart" id="([^"]+)"', report)
    assert len(figures) >= 4
    for fid in figures:
        fig = report[report.index(f'<figure class="chart" id="{fid}"'):]
        fig = fig[:fig.index("</figure>")]
        assert "aria-label" in fig or "aria-labelledby" in fig
        assert "<table" in fig, fid
    # the queue bars: the time averages of the summary, on the cluster's scale
    bars = dict(((q, d), (a, dv)) for q, d, a, dv in re.findall(
        r'<div class="bar" data-queue="([^"]+)" data-resource="([^"]+)"\s+data-allocated="([^"]*)" '
        r'data-deserved="([^"]*)"', report))
    ta = summary["queues"]["batch"]["timeAverage"]
    assert float(bars[("batch", "cpu")][0]) == pytest.approx(ta["allocated"]["cpu"])
    assert float(bars[("batch", "cpu")][1]) == pytest.approx(ta["deserved"]["cpu"])
    assert 'role="img" aria-label="batch cpu: allocated ' in report
    # the waits as SVG box plots with a table
    assert '<svg class="boxes"' in report and "<title id=\"waits-title\">" in report
