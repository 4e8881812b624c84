"""/api/v1 on a real server: all-or-none apply with `cycle`'s validation, the snapshot `cycle` reads,
why a job waits, the CLI verbs, the scheduling loop (binds, durations, reservation queues), the body
limit and YARN-shaped errors without stack traces."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families
from svc_helpers import run_cli as _cli
from svc_helpers import submission
from svc_helpers import wait_for as _wait
from svc_server import LiveServer

from apportion.engine import cycle_files

U = {"user.name": "admin"}


def _job(name: str, queue: str, pods: int, cpu: str = "1", annotations: dict[str, str] | None = None,
         pod_annotations: dict[str, str] | None = None) -> list[dict[str, Any]]:
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": name, "namespace": "t", "annotations": annotations or {}},
          "spec": {"queue": queue, "minMember": pods}}
    out = [pg]
    for i in range(pods):
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"{name}-{i}", "namespace": "t",
            "annotations": {"scheduling.k8s.io/group-name": name, **(pod_annotations or {})}},
            "spec": {"schedulerName": "volcano", "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
            "status": {"phase": "Pending"}})
    return out




def test_apply_snapshot_cli_and_errors(server_factory: Callable[..., LiveServer], tmp_path: Path) -> None:
    server = server_factory("--schedule-period", "0.3")
    c = httpx.Client(base_url=server.url, timeout=30)
    # all or none: the bad queue names its field, and the good one is not stored either
    bad = [{"kind": "Queue", "metadata": {"name": "good"}, "spec": {"weight": 1}},
           {"kind": "Queue", "metadata": {"name": "bad"}, "spec": {"weight": -1}}]
    r = c.post("/api/v1/apply", params=U, content=yaml.safe_dump_all(bad))
    assert r.status_code == 400 and "spec.weight" in r.json()["error"], r.text
    assert "good" not in {q["metadata"]["name"] for q in c.get("/api/v1/queues").json()["items"]}
    r = c.post("/api/v1/apply", params=U, json={"kind": "Queue", "metadata": {"name": "r"}, "spec": {},
                                                  "x": 1, "apiVersion": "v1"} | {"metadata": {"name": "r", "annotations": {
                                                      "apportion.io/reservable": "true", "apportion.io/plan": "{\"agent\": \"nope\"}"}}})
    assert r.status_code == 400 and "apportion.io/plan.agent" in r.json()["error"], r.text

    # the CLI verbs on the same API
    f = tmp_path / "jobs.yaml"
    f.write_text(yaml.safe_dump_all(_job("small", "batch", 2) + _job("huge", "batch", 1, cpu="500")))
    out = _cli("apply", "-f", str(f), "--server", server.url, "--user", "admin")
    assert out.returncode == 0 and "podgroup/t/small applied" in out.stdout, out.stderr
    got = json.loads(_cli("get", "jobs", "-o", "json", "--server", server.url).stdout)
    assert {j["podgroup"]["metadata"]["name"] for j in got["items"]} == {"small", "huge"}
    assert "dedicated" in _cli("get", "queues", "--server", server.url).stdout
    assert yaml.safe_load(_cli("get", "nodes", "-o", "yaml", "--server", server.url).stdout)["items"]

    # the loop binds the small job; the huge one waits and says why
    def small_running() -> bool:
        pods = c.get("/api/v1/jobs/t/small").json()["pods"]
        return all(p["status"]["phase"] == "Running" and p["spec"].get("nodeName") for p in pods)

    _wait(small_running)
    _wait(lambda: "waiting" in c.get("/api/v1/jobs/t/huge").json())
    assert c.get("/api/v1/jobs/t/nope").status_code == 404

    # the snapshot is a kubectl List that `apportion cycle` reads
    snap = c.get("/api/v1/snapshot").json()
    assert snap["kind"] == "List"
    p = tmp_path / "snap.json"
    p.write_text(json.dumps(snap))
    result = cycle_files([str(p)])
    assert "t/small-0" not in result.binds  # already bound: the snapshot carries the node

    out = _cli("delete", "job", "t/huge", "--server", server.url, "--user", "admin")
    assert out.returncode == 0, out.stderr
    assert c.get("/api/v1/jobs/t/huge").status_code == 404
    out = _cli("delete", "queue", "nope", "--server", server.url, "--user", "admin")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "404" in out.stderr, out.stderr
    assert c.delete("/api/v1/nodes/nope", params=U).status_code == 404

    # 1 MiB body limit, and YARN's error body (no stack trace) on /ws routes
    r = c.post("/ws/v1/cluster/reservation/submit", params=U, content=b"x" * (1024 * 1024 + 1))
    assert r.status_code == 413 and "RemoteException" in r.json()
    r = c.get("/ws/v1/cluster/nope")
    assert r.status_code == 404 and r.json()["RemoteException"]["exception"] == "NotFoundException"
    r = c.get("/ws/v1/cluster/reservation/submit")
    assert r.status_code == 405 and "Traceback" not in r.text
    r = c.post("/ws/v1/cluster/reservation/submit", params=U, content=b"{not json")
    assert r.status_code == 400 and "RemoteException" in r.json()
    assert "volcano_e2e_scheduling_latency_milliseconds" in c.get("/metrics").text
    assert "/api/v1/apply" in c.get("/openapi.json").json()["paths"] and c.get("/docs").status_code == 200
    c.close()


def test_loop_reservation_queue_and_durations(server_factory: Callable[..., LiveServer]) -> None:
    server = server_factory("--schedule-period", "0.3")
    c = httpx.Client(base_url=server.url, timeout=30)
    rid = c.post("/ws/v1/cluster/reservation/new-reservation", params=U).json()["reservation-id"]
    assert c.post("/ws/v1/cluster/reservation/submit", params=U, json=submission(
        rid, memory=4096, vcores=2, containers=4, duration=600_000)).status_code == 202

    def queues() -> dict[str, Any]:
        info = c.get("/ws/v1/cluster/scheduler").json()["scheduler"]["schedulerInfo"]
        out: dict[str, Any] = {}

        def walk(q: dict[str, Any]) -> None:
            out[q["queueName"]] = q
            for k in (q.get("queues") or {}).get("queue", []):
                walk(k)

        walk(info)
        return out

    # the plan follower makes the active reservation a child queue of its reservable queue
    _wait(lambda: rid in queues())
    assert queues()["dedicated"]["queues"]["queue"]
    # a job submitted to the reservation runs in it; a job with a duration completes
    body = yaml.safe_dump_all(_job("inres", "dedicated", 2, annotations={"apportion.io/reservation": rid})
                              + _job("quick", "batch", 1, pod_annotations={"apportion.io/duration": "1"}))
    assert c.post("/api/v1/apply", params=U, content=body).status_code == 200
    _wait(lambda: all(p["status"]["phase"] == "Running" for p in c.get("/api/v1/jobs/t/inres").json()["pods"]))
    _wait(lambda: queues()[rid]["numApplications"] == 1)
    _wait(lambda: c.get("/api/v1/jobs/t/quick").json()["pods"][0]["status"]["phase"] == "Succeeded")
    # a job naming a reservation that is not active waits, and says so
    body = yaml.safe_dump_all(_job("late", "dedicated", 1, annotations={"apportion.io/reservation": "reservation_1_0001"}))
    assert c.post("/api/v1/apply", params=U, content=body).status_code == 200
    _wait(lambda: "not currently active" in c.get("/api/v1/jobs/t/late").json().get("waiting", ""))
    metrics = c.get("/metrics").text
    assert 'apportion_plan_reservations{queue="dedicated"} 1.0' in metrics
    # Volcano's queue gauges carry the session's numbers in its units: the reservation's queue runs
    # inres's two pods of 1 cpu and 1Gi (the quick job of batch has completed)
    samples = {(s.name, s.labels.get("queue_name") or s.labels.get("queue")): s.value
               for fam in text_string_to_metric_families(metrics) for s in fam.samples}
    assert samples[("volcano_queue_allocated_milli_cpu", rid)] == 2000
    assert samples[("volcano_queue_allocated_memory_bytes", rid)] == 2 * 1024**3
    c.close()


SCENARIO = """
apiVersion: apportion.io/v1
kind: Scenario
name: tiny
cluster:
  generate:
  - count: 1
    namePrefix: n
    allocatable: {cpu: 8, memory: 32Gi, pods: 110}
queues:
- kind: Queue
  metadata: {name: batch}
  spec: {weight: 1}
workload:
  jobs:
  - {name: first, queue: batch, arrival: 0, duration: 5, tasks: 2, resources: {cpu: 1, memory: 1Gi}}
  - {name: second, queue: batch, arrival: 10, duration: 5, tasks: 1, resources: {cpu: 1, memory: 1Gi}}
"""


def test_scenario_workload_played_against_the_service(server_factory: Callable[..., LiveServer],
                                                       tmp_path: Path) -> None:
    f = tmp_path / "tiny.yaml"
    f.write_text(SCENARIO)
    server = server_factory("--scenario", str(f), "--speed", "10", "--schedule-period", "0.2")
    c = httpx.Client(base_url=server.url, timeout=30)

    def phases(name: str) -> list[str]:
        r = c.get(f"/api/v1/jobs/scenario/{name}")
        return [p["status"]["phase"] for p in r.json()["pods"]] if r.status_code == 200 else []

    # 'second' arrives 1 s after 'first' (10 s at speed 10); each runs 0.5 s, then completes
    _wait(lambda: phases("first") == ["Succeeded", "Succeeded"])
    _wait(lambda: phases("second") == ["Succeeded"])
    c.close()
