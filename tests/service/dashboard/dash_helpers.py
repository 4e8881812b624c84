"""What the dashboard's browser tests share: the browser's command line, the scenario, the server
under test, waiting, screenshots."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from svc_helpers import wait_for  # noqa: F401 - the dashboard tests import it from here
from svc_server import LiveServer

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: screenshots for people to look at (git-ignored)
SHOTS = Path(__file__).parents[3] / "out" / "dashboard-screenshots"
ADMIN = {"user.name": "admin"}

SCENARIO = """
apiVersion: apportion.io/v1
kind: Scenario
name: dashboard-busy
cluster:
  generate:
  - count: 1
    namePrefix: unused
    allocatable: {cpu: 1, memory: 1Gi, pods: 110}
queues:
- kind: Queue
  metadata: {name: batch}
  spec: {weight: 1}
workload:
  jobs:
  - {name: sweep-1, queue: batch, arrival: 0, duration: 3600, tasks: 2, resources: {cpu: 2, memory: 4Gi}}
  - {name: sweep-2, queue: default, arrival: 60, duration: 3600, tasks: 1, resources: {cpu: 2, memory: 4Gi}}
"""


@dataclass
class Dashboard:
    """The server under test and an HTTP client on it."""

    server: LiveServer
    client: httpx.Client

    @property
    def url(self) -> str:
        """Its base URL."""
        return self.server.url

    def apply(self, docs: list[dict[str, Any]]) -> None:
        """Apply objects through the API (all or none)."""
        r = self.client.post("/api/v1/apply", params=ADMIN,
                             content=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
        assert r.status_code == 200, r.text




@dataclass
class Watched:
    """A page and everything that went wrong while it was open."""

    page: Any
    problems: list[str]


def shot(page: Any, name: str) -> Path:
    """Save a full-page screenshot for people to look at."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
