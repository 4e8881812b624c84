"""End to end through HTTP, as a user drives it: a real `apportion serve --backend ray --ray-address`
process against the local Ray cluster, jobs sent with `apportion submit` into two queues, `apportion
get jobs` and the dashboard's jobs page. Queue b, under its deserved share, reclaims from a, which
took the whole cluster: two of a's processes are really killed, and run again once b's job is done.
When the server stops, nothing it started is left running."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from svc_ray import QUEUES, RECLAIM_CONF, RayCluster, descendants

APPORTION = str(Path(sys.executable).parent / "apportion")

# a task's command: leave a file named after its pid in DIR (so the test can tell which processes ran
# and whether they still live), then run until DIR/done exists (the test ends the task when it has
# looked at it, however slow the machine) or for at most SECONDS
TASK = """import os, sys, time
folder, seconds = sys.argv[1], float(sys.argv[2])
open(os.path.join(folder, str(os.getpid())), "w").close()
end = time.monotonic() + seconds
while time.monotonic() < end and not os.path.exists(os.path.join(folder, "done")):
    time.sleep(0.1)
"""


def cli(*argv: str) -> str:
    """Run `apportion ARGV`; its stdout (a non-zero exit fails the test with its output)."""
    r = subprocess.run([APPORTION, *argv], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (argv, r.stdout, r.stderr)
    return r.stdout


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def started(folder: Path) -> list[int]:
    """The pids of the tasks that started, from their files."""
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def wait_for(what: Callable[[], bool], timeout_s: float = 60.0, why: Callable[[], Any] = lambda: "") -> None:
    deadline = time.monotonic() + timeout_s
    while not what():
        assert time.monotonic() < deadline, f"timed out: {why()}"
        time.sleep(0.2)


class Server:
    """`apportion serve --backend ray` on a free port, joined to the test cluster."""

    def __init__(self, cluster: RayCluster, tmp_path: Path) -> None:
        (tmp_path / "queues.yaml").write_text(QUEUES)
        (tmp_path / "conf.yaml").write_text(RECLAIM_CONF)
        self.log_path = tmp_path / "serve.log"
        self.log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [APPORTION, "serve", "--backend", "ray", "--ray-address", cluster.cluster.address, "--port", "0",
             "--db", f"sqlite:///{tmp_path / 'svc.db'}", "--cluster", str(tmp_path / "queues.yaml"),
             "--conf", str(tmp_path / "conf.yaml"), "--schedule-period", "0.2"],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.url = ""
        self.processes: set[int] = set()
        wait_for(self._up, 60, self.log_path.read_text)

    def _up(self) -> bool:
        assert self.proc.poll() is None, self.log_path.read_text()
        m = re.search(r"serving on (http://\S+)", self.log_path.read_text())
        if m is None:
            return False
        self.url = m.group(1)
        try:
            return httpx.get(f"{self.url}/api/v1/nodes", params={"user.name": "t"}).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        """SIGTERM, as a user's Ctrl-C or a service manager does; wait until every process it started is gone."""
        if self.proc.returncode is not None:
            return
        self.processes |= descendants(self.proc.pid) | {self.proc.pid}
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
            raise
        finally:
            self.log.close()
        # stopped by SIGTERM after a graceful shutdown, as a shell reports it
        assert self.proc.returncode == 143, self.log_path.read_text()
        assert "Unhandled error" not in self.log_path.read_text()
        wait_for(lambda: not [p for p in self.processes if alive(p)], 15,
                 lambda: [p for p in self.processes if alive(p)])


@pytest.fixture
def server(ray_cluster: RayCluster, tmp_path: Path) -> Iterator[Server]:
    """A running server, stopped after the test if the test did not stop it."""
    srv = Server(ray_cluster, tmp_path)
    try:
        yield srv
    finally:
        srv.stop()


def jobs(url: str) -> dict[str, dict[str, Any]]:
    """GET /api/v1/jobs (what `apportion get jobs -o json` prints), by job name; polled, so over HTTP
    here rather than a new `apportion` process each time."""
    out = httpx.get(f"{url}/api/v1/jobs", params={"user.name": "t"}).json()
    return {j["podgroup"]["metadata"]["name"]: j for j in out["items"]}


def dashboard_rows(url: str) -> dict[str, str]:
    """The dashboard's jobs page (GET /jobs, HTML): each job's table row, by namespace/name."""
    html = httpx.get(f"{url}/jobs", params={"user.name": "t"}).text
    return {m.group(1): m.group(2) for m in re.finditer(r'<tr data-job="([^"]+)">(.*?)</tr>', html, re.S)}


def pod_phases(job: dict[str, Any]) -> list[str]:
    return sorted(p["status"]["phase"] for p in job["pods"])


def test_deserved_shares_on_real_tasks_through_http(server: Server, tmp_path: Path) -> None:
    url = server.url
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir()
    b_dir.mkdir()
    # the Ray cluster's nodes, as the service sees them: the head and three workers
    nodes = cli("get", "nodes", "--server", url, "--user", "t")
    assert len(re.findall(r"^ray-[0-9a-f]{12}\s", nodes, re.M)) == 4, nodes

    # a job for a queue the service does not have is refused, not left waiting forever
    r = subprocess.run([APPORTION, "submit", "--server", url, "--user", "t", "--queue", "nope", "--", "true"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--queue" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "nope" not in {j["podgroup"]["spec"]["queue"] for j in jobs(url).values()}

    # queue a takes the whole cluster: 6 tasks of one CPU on 3 workers of two
    assert cli("submit", "--server", url, "--user", "t", "--queue", "a", "--tasks", "6", "--min-member", "1",
               "--resources", "cpu=1", "--name", "big", "--", sys.executable, "-c", TASK, str(a_dir), "60"
               ).strip() == "default/big"
    wait_for(lambda: len(started(a_dir)) == 6, 60, lambda: jobs(url))
    first = started(a_dir)
    big = jobs(url)["big"]
    assert big["phase"] == "Running" and pod_phases(big) == ["Running"] * 6

    # queue b, under its deserved share (half of the cluster, as a and b weigh the same), asks for a
    # gang of two: reclaim evicts two of a's tasks, and their processes really end
    cli("submit", "--server", url, "--user", "t", "--queue", "b", "--tasks", "2", "--resources", "cpu=1",
        "--name", "small", "--", sys.executable, "-c", TASK, str(b_dir), "120")
    wait_for(lambda: len(started(b_dir)) == 2, 60, lambda: jobs(url))
    wait_for(lambda: sum(alive(p) for p in first) == 4, 30, lambda: (first, jobs(url)))
    now = jobs(url)
    assert now["small"]["phase"] == "Running" and pod_phases(now["small"]) == ["Running"] * 2
    assert pod_phases(now["big"]) == ["Pending"] * 2 + ["Running"] * 4

    listed = json.loads(cli("get", "jobs", "-o", "json", "--server", url, "--user", "t"))["items"]
    assert [(j["podgroup"]["metadata"]["name"], j["podgroup"]["spec"]["queue"]) for j in listed] == [
        ("big", "a"), ("small", "b")]
    table = cli("get", "jobs", "--server", url, "--user", "t")
    rows = {line.split()[0]: line.split() for line in table.splitlines()[1:]}
    # JOB QUEUE PHASE RUNNING NODES: Volcano's phases and where the tasks run
    assert rows["default/big"][1:4] == ["a", "Running", "4/6"]
    assert rows["default/small"][1:4] == ["b", "Running", "2/2"]
    assert re.fullmatch(r"ray-[0-9a-f]{12}(,ray-[0-9a-f]{12})*", rows["default/small"][4])

    # the dashboard's jobs page shows both jobs, their queues, phases and tasks (running / pending / done),
    # and a job's page the nodes its tasks run on
    row = dashboard_rows(url)
    assert 'href="/queues/a"' in row["default/big"] and "Running" in row["default/big"]
    assert "4 / 2 / 0" in row["default/big"]
    assert 'href="/queues/b"' in row["default/small"] and "2 / 0 / 0" in row["default/small"]
    page = httpx.get(f"{url}/jobs/default/small", params={"user.name": "t"}).text
    assert set(rows["default/small"][4].split(",")) <= set(re.findall(r"ray-[0-9a-f]{12}", page))

    # b's tasks end; a's two evicted tasks are bound again and really run (new processes)
    (b_dir / "done").touch()
    wait_for(lambda: jobs(url)["small"]["phase"] == "Completed", 60, lambda: jobs(url))
    wait_for(lambda: len(started(a_dir)) == 8, 60, lambda: jobs(url))
    again = [p for p in started(a_dir) if p not in first]
    assert len(again) == 2 and all(alive(p) for p in again)
    wait_for(lambda: pod_phases(jobs(url)["big"]) == ["Running"] * 6, 30, lambda: jobs(url))
    row = dashboard_rows(url)
    assert "Completed" in row["default/small"] and "0 / 0 / 2" in row["default/small"]
    assert "6 / 0 / 0" in row["default/big"]

    # the server stops: it cancels what it started, and a's processes end with their Ray tasks
    server.processes |= descendants(server.proc.pid)
    running = [p for p in started(a_dir) if alive(p)]
    assert len(running) == 6
    server.stop()
    wait_for(lambda: not [p for p in running if alive(p)], 15, lambda: [p for p in running if alive(p)])
