"""The dashboard in a real browser (Debian's Chromium via Playwright) against a real `apportion serve`."""

from __future__ import annotations

import re
from typing import Any

import pytest
from dash_helpers import ADMIN, Dashboard, shot, wait_for
from workload import NS, job

pytestmark = pytest.mark.browser

PAGES = [("queues", "/"), ("queue-batch", "/queues/batch"), ("queue-dedicated", "/queues/dedicated"),
         ("jobs", "/jobs"), ("job-waiting", f"/jobs/{NS}/huge"), ("job-running", f"/jobs/{NS}/serving"),
         ("reservations", "/reservations"), ("nodes", "/nodes"), ("nodes-grouped", "/nodes?group=example.com/pool&sort=idle&desc=true")]


def _metric(text: str, name: str, queue: str) -> float | None:
    m = re.search(rf'^{name}{{queue_name="{re.escape(queue)}"}} (\S+)$', text, re.M)
    return float(m.group(1)) if m else None


def test_every_page_loads_without_errors(dashboard: Dashboard, watched: Any) -> None:
    for width, suffix in ((1280, ""), (390, "-phone")):
        w = watched(width, 900 if width > 500 else 844)
        for name, path in PAGES:
            w.page.goto(dashboard.url + path, wait_until="networkidle")
            assert w.page.locator("h1").count() == 1, path
            assert w.page.locator("#updated").inner_text().endswith("UTC")
            shot(w.page, name + suffix)
            if width < 500:
                # phone width: the page itself never scrolls sideways (wide tables scroll in their box)
                overflow = w.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 1, f"{path} is {overflow}px wider than the phone screen"
        assert w.problems == [], w.problems


def test_queue_bars_equal_the_api(dashboard: Dashboard, watched: Any) -> None:
    w = watched()
    for _ in range(20):  # a session may land between the two reads: compare a quiet moment
        before = dashboard.client.get("/metrics").text
        w.page.goto(dashboard.url + "/", wait_until="domcontentloaded")
        bars = w.page.eval_on_selector_all(
            "#queues-table .bar", "els => els.map(e => [e.dataset.queue, e.dataset.resource, e.dataset.allocated,"
            " e.dataset.deserved])")
        shares = dict(w.page.eval_on_selector_all(
            "#queues-table tr[data-queue]", "els => els.map(e => [e.dataset.queue,"
            " e.querySelector('[data-share]').dataset.share])"))
        after = dashboard.client.get("/metrics").text
        if before == after:
            break
    checked = 0
    for queue, res, alloc, des in bars:
        if res == "cpu":
            api_alloc = _metric(after, "volcano_queue_allocated_milli_cpu", queue)
            api_des = _metric(after, "volcano_queue_deserved_milli_cpu", queue)
            scale = 1000.0
        elif res == "memory":
            api_alloc = _metric(after, "volcano_queue_allocated_memory_bytes", queue)
            api_des = _metric(after, "volcano_queue_deserved_memory_bytes", queue)
            scale = 1.0
        else:
            continue
        if api_alloc is None:
            continue  # a queue the capacity report leaves out (root): the page shows no number either
        assert float(alloc or 0) * scale == pytest.approx(api_alloc), (queue, res)
        assert float(des or 0) * scale == pytest.approx(api_des), (queue, res)
        share = _metric(after, "volcano_queue_share", queue)
        if share is not None and res == "cpu":
            assert float(shares[queue]) == pytest.approx(share)
        checked += 1
    assert checked >= 4, bars
    # the visible text says the same as the data attributes: serving's 8 cores in dedicated's children
    allocated_text = w.page.locator('#queues-table .bar[data-resource="cpu"] .v-allocated').all_inner_texts()
    assert any(t != "0" for t in allocated_text)


def _reservations(dashboard: Dashboard) -> list[dict[str, Any]]:
    r = dashboard.client.get("/ws/v1/cluster/reservation/list",
                             params={"queue": "dedicated", "include-resource-allocations": "true", **ADMIN})
    assert r.status_code == 200, r.text
    return r.json().get("reservations") or []


def test_reservation_form_gantt_and_list(dashboard: Dashboard, watched: Any) -> None:
    w = watched()
    p = w.page
    p.goto(dashboard.url + "/reservations", wait_until="networkidle")
    before = {r["reservation-id"] for r in _reservations(dashboard)}
    # invalid: the deadline before the arrival; the error is next to the field and nothing is stored
    p.fill("#r-name", "bad-one")
    p.fill("#r-arrival", "30")
    p.fill("#r-deadline", "10")
    p.click("text=Submit reservation")
    p.wait_for_load_state("networkidle")
    err = p.locator("#err-deadline")
    assert err.is_visible() and "after the arrival" in err.inner_text()
    assert p.locator("#r-deadline").get_attribute("aria-invalid") == "true"
    assert p.locator("#r-deadline").input_value() == "10"  # what was typed is kept
    shot(p, "reservations-invalid")
    assert {r["reservation-id"] for r in _reservations(dashboard)} == before
    # refused by YARN's own validator (the gang exceeds the plan): its message lands by the stage
    p.fill("#r-deadline", "90")
    p.fill("#r-stage-0-memory", "10000000")
    p.click("text=Submit reservation")
    p.wait_for_load_state("networkidle")
    assert "largest gang" in p.locator("#err-stage-0-concurrency").inner_text()
    assert {r["reservation-id"] for r in _reservations(dashboard)} == before
    # valid: R_ORDER, two stages
    p.fill("#r-name", "nightly-train")
    p.select_option("#r-interpreter", "R_ORDER")
    p.fill("#r-arrival", "2")
    p.fill("#r-deadline", "120")
    p.fill("#r-stage-0-memory", "8192")
    for k, v in (("memory", "4096"), ("vcores", "1"), ("containers", "2"), ("concurrency", "1"), ("duration", "20")):
        p.fill(f"#r-stage-1-{k}", v)
    p.click("text=Submit reservation")
    p.wait_for_load_state("networkidle")
    status = p.locator("p.ok").inner_text()
    rid = re.search(r"reservation_\d+_\d+", status).group(0)  # type: ignore[union-attr]
    listed = {r["reservation-id"]: r for r in _reservations(dashboard)}
    assert rid in listed and listed[rid]["reservation-definition"]["reservation-name"] == "nightly-train"
    assert p.locator(f'svg.gantt g[data-reservation="{rid}"] rect').count() >= 1
    assert p.locator(f'#res-dedicated tr[data-reservation="{rid}"]').count() == 1
    shot(p, "reservations-accepted")
    # delete, with a confirmation page first
    p.click(f"#del-{rid}")
    p.wait_for_load_state("networkidle")
    assert "Delete reservation" in p.locator("h1").inner_text()
    assert rid in {r["reservation-id"] for r in _reservations(dashboard)}  # asking deletes nothing
    shot(p, "reservation-delete-confirm")
    p.click(f"text=Delete {rid}")
    p.wait_for_load_state("networkidle")
    assert rid not in {r["reservation-id"] for r in _reservations(dashboard)}
    assert p.locator(f'svg.gantt g[data-reservation="{rid}"]').count() == 0
    assert w.problems == [], w.problems


def test_waiting_job_page_names_the_api_reason(dashboard: Dashboard, watched: Any) -> None:
    w = watched()
    api = dashboard.client.get(f"/api/v1/jobs/{NS}/huge").json()
    assert api["waiting"]
    w.page.goto(dashboard.url + f"/jobs/{NS}/huge", wait_until="networkidle")
    assert w.page.locator("#job-reason").inner_text() == dashboard.client.get(f"/api/v1/jobs/{NS}/huge").json()[
        "waiting"]
    # and the jobs list puts it first, waiting jobs before running ones
    w.page.goto(dashboard.url + "/jobs", wait_until="networkidle")
    states = w.page.locator("#jobs-table tbody td .badge").all_inner_texts()
    assert states and states.index("Running") > max(i for i, s in enumerate(states) if s in ("Pending", "Inqueue"))
    assert w.problems == [], w.problems


def test_live_update_shows_an_applied_job_without_reload(dashboard: Dashboard, watched: Any) -> None:
    w = watched()
    p = w.page
    p.goto(dashboard.url + "/jobs", wait_until="networkidle")
    p.evaluate("window.__notReloaded = true")
    first = p.locator("#updated").get_attribute("datetime")
    assert p.locator(f'tr[data-job="{NS}/late-arrival"]').count() == 0
    dashboard.apply(job("late-arrival", "default", 1, cpu="1", memory="1Gi"))
    p.locator(f'tr[data-job="{NS}/late-arrival"]').wait_for(timeout=15_000)
    assert p.evaluate("window.__notReloaded") is True
    wait_for(lambda: p.locator("#updated").get_attribute("datetime") != first, 10)
    assert w.problems == [], w.problems


def test_keyboard_reaches_the_navigation_and_tables(dashboard: Dashboard, watched: Any) -> None:
    w = watched()
    p = w.page
    p.goto(dashboard.url + "/", wait_until="networkidle")
    p.keyboard.press("Tab")
    assert p.evaluate("document.activeElement.className") == "skip"
    p.keyboard.press("Tab")
    assert p.evaluate("document.activeElement.textContent") == "Queues"
    p.keyboard.press("Tab")
    p.keyboard.press("Enter")
    p.wait_for_url(re.compile(r"/jobs$"))
    # sortable node headers are links: Enter on one sorts
    p.goto(dashboard.url + "/nodes", wait_until="networkidle")
    p.focus("#sort-idle")
    p.keyboard.press("Enter")
    p.wait_for_url(re.compile(r"sort=idle"))
    assert p.locator('th[aria-sort="descending"], th[aria-sort="ascending"]').count() >= 1
    assert w.problems == [], w.problems


def test_an_opened_table_stays_open_across_live_refreshes(dashboard: Dashboard, watched: Any) -> None:
    w = watched()
    p = w.page
    p.goto(dashboard.url + "/reservations", wait_until="networkidle")
    p.click("#tables-dedicated summary")
    first = p.locator("#updated").get_attribute("datetime")
    wait_for(lambda: p.locator("#updated").get_attribute("datetime") != first, 10)
    p.wait_for_timeout(300)
    assert p.evaluate("document.getElementById('tables-dedicated').open") is True
    assert w.problems == [], w.problems


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    """`apportion simulate --out` on the built-in scenario (queues, reservations, a rejected one): the
    report's file URL."""
    from click.testing import CliRunner

    from apportion.cli import main

    out = tmp_path_factory.mktemp("report")
    r = CliRunner().invoke(main, ["simulate", "--out", str(out)])
    assert r.exit_code == 0, r.output
    return (out / "report.html").as_uri()


def test_the_report_opens_offline_with_its_charts_drawn(report: str, watched: Any) -> None:
    for width, suffix in ((1280, ""), (390, "-phone")):
        w = watched(width, 900 if width > 500 else 844)
        w.page.goto(report, wait_until="load")
        plots = w.page.locator(".chart-plot").count()
        assert plots >= 4
        # uPlot drew every line chart (the same charts.js and uPlot the dashboard serves)
        w.page.wait_for_function(f"document.querySelectorAll('.chart-plot .uplot canvas').length >= {plots}")
        assert w.page.locator("svg.gantt g[data-reservation]").count() >= 2
        shot(w.page, "report" + suffix)
        if width < 500:
            overflow = w.page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"the report is {overflow}px wider than the phone screen"
        assert w.problems == [], w.problems


def test_the_report_reads_without_javascript(report: str, browser: Any) -> None:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    try:
        p = ctx.new_page()
        p.goto(report, wait_until="load")
        assert p.locator(".uplot").count() == 0
        # the tables carry the numbers: the queues, a chart's table opened from the keyboard
        assert p.locator("#queues-table tbody tr").count() >= 4
        p.focus("details.chart-table summary")
        p.keyboard.press("Enter")
        assert p.locator("details.chart-table table").first.is_visible()
        assert (p.locator("svg.gantt title").first.text_content() or "").startswith("Gantt chart of the")
    finally:
        ctx.close()
