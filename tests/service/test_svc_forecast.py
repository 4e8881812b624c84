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
    for params, field in (({"period": "0"}, "period"), ({"period": "1e-9"}, "period"), ({"period": "1e300"}, "period"),
                          ({"runs": "0"}, "runs"), ({"runs": "21"}, "runs"), ({"seed": "-1"}, "seed"),
                          ({"horizon": "soon"}, "horizon"), ({"assumeRuntime": "{nope: 1}"}, "assumeRuntime")):
        r = c.get("/api/v1/jobs/t/next/forecast", params=params)
        assert r.status_code == 400 and field in r.json()["error"] and "Traceback" not in r.text, (params, r.text)
    # a job held out of the scheduler (its reservation is not active) is forecast to join it when its
    # reservation starts: this one names a reservation that does not exist, so never
    late = _job("late", 1, "1")
    late[0]["spec"]["queue"] = "dedicated"
    late[0]["metadata"]["annotations"] = {"apportion.io/reservation": "reservation_1_0001"}
    assert c.post("/api/v1/apply", params=U, content=yaml.safe_dump_all(late)).status_code == 200
    wait_for(lambda: "not currently active" in c.get("/api/v1/jobs/t/late").json().get("waiting", ""))
    r = c.get("/api/v1/jobs/t/late/forecast")
    assert r.status_code == 200, r.text
    [job] = r.json()["jobs"]
    assert job["start"] is None and job["heldFor"] == "reservation_1_0001", job
    assert "held out of the scheduler until its reservation reservation_1_0001 is active" in job["reason"], job
    assert job["fits"] == []  # nothing makes it start in the next session: it waits for its reservation
    c.close()


def test_an_absurd_duration_is_an_error_naming_the_pod() -> None:
    """A running pod's typo must not break every forecast with a server error."""
    from datetime import UTC, datetime

    from apportion.errors import InputError
    from apportion.forecast.api import forecast_snapshot
    from apportion.kube import build_snapshot

    objs = _job("big", 1, "15", duration="300000000000") + _job("next", 1, "15")
    objs[1]["spec"]["nodeName"] = "n1"
    objs[1]["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}}
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "batch"},
             "spec": {"weight": 1}}
    snap = build_snapshot([("t", o) for o in [node, queue, *objs]])
    try:
        forecast_snapshot(snap, ["t/next"], now=datetime(2026, 1, 1, 1, tzinfo=UTC), fits=False)
    except InputError as e:
        assert "t/big-0" in str(e) and "apportion.io/duration" in str(e) and "100 years" in str(e)
    else:
        raise AssertionError("an absurd duration was taken")


def test_the_gate_queues_a_few_and_refuses_more() -> None:
    gate = ForecastGate(waiting=2)
    assert [gate.enter() for _ in range(4)] == [True, True, True, False]
    gate.leave()
    assert gate.enter() and not gate.enter()
    # one forecast runs at a time, on the gate's own thread (not the server's readers' pool)
    assert gate.executor._max_workers == 1
    gate.executor.shutdown()
