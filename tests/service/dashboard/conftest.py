"""Dashboard test fixtures: a real `apportion serve` on a free loopback port with a scenario playing
(`--scenario --speed 60`) and a busy cluster applied through `/api/v1/apply`,
and Debian's Chromium driven by Playwright (`make chromium` installs it; Playwright's own browser
download does not work here, so the system executable is launched)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from dash_helpers import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    SCENARIO,
    Dashboard,
    Watched,
    wait_for,
)
from svc_server import LiveServer  # noqa: E402
from workload import busy_cluster  # noqa: E402

from apportion.service.core import default_cluster_path  # noqa: E402


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    """A running server with the busy cluster applied and one session run on it."""
    d = tmp_path_factory.mktemp("dash")
    (d / "scenario.yaml").write_text(SCENARIO)
    # the built-in cluster, named: a played scenario would otherwise seed the database with its own
    args = ["--schedule-period", "0.5", "--scenario", str(d / "scenario.yaml"), "--speed", "60",
            "--cluster", default_cluster_path()]
    server = LiveServer(f"sqlite:///{d / 'apportion.db'}", d, args).start()
    client = httpx.Client(base_url=server.url, timeout=30)
    dash = Dashboard(server, client)
    try:
        dash.apply(busy_cluster())
        wait_for(lambda: client.get("/api/v1/jobs/team/serving").json().get("phase") == "Running")
        yield dash
    finally:
        client.close()
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless; the run FAILS (not skips) without it: `make chromium` installs it."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: run `make chromium` (make test-browser does)", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def watched(browser: Any) -> Iterator[Any]:
    """Make pages that record console errors, page errors, failed requests and 4xx/5xx answers."""
    contexts = []

    def make(width: int = 1280, height: int = 900) -> Watched:
        ctx = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(ctx)
        page = ctx.new_page()
        problems: list[str] = []
        page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}"))
        page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
        return Watched(page, problems)

    yield make
    for c in contexts:
        c.close()
