"""`GET /api/v1/jobs/{ns}/{name}/forecast` on a real server: the live cache's forecast of a waiting job
(started pods carry their start time, so their `apportion.io/duration` counts from it), the errors
(unknown job 404, running job 409, bad parameters 400, none with a stack trace), and the gate that
keeps forecasts from piling up."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import yaml
from svc_helpers import wait_for
from svc_server import LiveServer

from apportion.service.forecasts import ForecastGate

U = {"user.name": "admin"}


def _job(name: str, pods: int, cpu: str, duration: str | None = None) -> list[dict[str, Any]]:
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": name, "namespace": "t"}, "spec": {"queue": "batch", "minMember": pods}}
    ann = {"scheduling.k8s.io/group-name": name} | ({"apportion.io/duration": duration} if duration else {})
    return [pg] + [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-{i}", "namespace": "t",
                                                                    "annotations": dict(ann)},
                    "spec": {"schedulerName": "volcano", "containers": [
                        {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
                    "status": {"phase": "Pending"}} for i in range(pods)]


def test_forecast_of_a_waiting_job(server_factory: Callable[..., LiveServer]) -> None:
    server = server_factory("--schedule-period", "0.3")
    c = httpx.Client(base_url=server.url, timeout=120)
    body = yaml.safe_dump_all(_job("big", 2, "15", duration="3600"))
    assert c.post("/api/v1/apply", params=U, content=body).status_code == 200
    wait_for(lambda: all(p["status"]["phase"] == "Running" for p in c.get("/api/v1/jobs/t/big").json()["pods"]))
    pod = c.get("/api/v1/jobs/t/big").json()["pods"][0]
    assert pod["status"]["startTime"].endswith("Z")  # as the kubelet writes it
    body = yaml.safe_dump_all(_job("next", 1, "15", duration="60"))
    assert c.post("/api/v1/apply", params=U, content=body).status_code == 200
    wait_for(lambda: "waiting" in c.get("/api/v1/jobs/t/next").json())

    r = c.get("/api/v1/jobs/t/next/forecast")
    assert r.status_code == 200, r.text
    got = r.json()
    [job] = got["jobs"]
    assert job["job"] == "t/next" and got["estimate"] is True
    # it starts when `big` ends: an hour after its start, counted from the startTime the bind wrote
    assert 3500 <= job["startIn"] <= 3600, job
    assert job["fits"], job  # e.g. freeing t/big, checked by running the session

    assert c.get("/api/v1/jobs/t/nope/forecast").status_code == 404
    r = c.get("/api/v1/jobs/t/big/forecast")
    assert r.status_code == 409 and "not pending" in r.json()["error"], r.text
    for params, field in (({"period": "0"}, "period"), ({"runs": "0"}, "runs"), ({"horizon": "soon"}, "horizon"),
                          ({"assumeRuntime": "{nope: 1}"}, "assumeRuntime")):
        r = c.get("/api/v1/jobs/t/next/forecast", params=params)
        assert r.status_code == 400 and field in r.json()["error"] and "Traceback" not in r.text, (params, r.text)
    c.close()


def test_the_gate_queues_a_few_and_refuses_more() -> None:
    gate = ForecastGate(waiting=2)
    assert [gate.enter() for _ in range(4)] == [True, True, True, False]
    gate.leave()
    assert gate.enter() and not gate.enter()
    with gate.turn:
        assert not gate.turn.acquire(blocking=False)  # one forecast runs at a time
