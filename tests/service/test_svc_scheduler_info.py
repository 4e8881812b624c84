"""`/ws/v1/cluster/scheduler` on the built-in default cluster, in process (loop off, ticks driven by
the test): an idle queue shows its configured capacity, the reservable queue its own guarantee
(which a flat session hands to its children), and every queue its full dotted path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from apportion.service.app import create_app
from apportion.service.core import Service, ServiceConfig

U = {"user.name": "admin"}


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    """A service on a fresh SQLite database with the default cluster, its loop not running."""
    s = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'a.db'}", loop=False))
    yield s
    s.close()


def _queues(client: TestClient) -> dict[str, dict[str, Any]]:
    info = client.get("/ws/v1/cluster/scheduler").json()["scheduler"]["schedulerInfo"]
    out: dict[str, dict[str, Any]] = {}

    def walk(q: dict[str, Any]) -> None:
        out[q["queueName"]] = q
        for k in (q.get("queues") or {}).get("queue", []):
            walk(k)

    walk(info)
    return out


def test_idle_queues_show_their_configuration_and_full_paths(svc: Service) -> None:
    client = TestClient(create_app(service=svc))
    # before the first tick (a dry session) and after it, the same configured view
    for tick in (False, True):
        if tick:
            svc.loop.tick()
            assert svc.loop.last_error is None
        q = _queues(client)
        # the default cluster: 4 x 64 GiB; `dedicated` is guaranteed 128 GiB and capped at 256 GiB
        assert q["dedicated"]["capacity"] == 50.0 and q["dedicated"]["absoluteCapacity"] == 50.0
        assert q["dedicated"]["maxCapacity"] == 100.0
        assert q["dedicated"]["queuePath"] == "root.dedicated"
        # weight-only queues have no configured share: YARN's capacity 0 with the whole cluster as maximum
        assert q["batch"]["capacity"] == 0.0 and q["batch"]["absoluteMaxCapacity"] == 100.0
    # the plan's default queue is the reservable queue's child, named by its full path
    assert q["dedicated-default"]["queuePath"] == "root.dedicated.dedicated-default"
    assert q["dedicated-default"]["absoluteCapacity"] == 50.0


def test_a_queue_with_work_shows_the_session_and_a_capped_queue_its_maximum(svc: Service) -> None:
    client = TestClient(create_app(service=svc))
    docs = [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "small"},
         "spec": {"weight": 1, "guarantee": {"resource": {"cpu": "8", "memory": "32Gi"}},
                  "capability": {"cpu": "16", "memory": "64Gi"}}},
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
         "metadata": {"name": "pg", "namespace": "t"}, "spec": {"queue": "batch", "minMember": 1}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "pg-0", "namespace": "t", "annotations": {"scheduling.k8s.io/group-name": "pg"}},
         "spec": {"schedulerName": "volcano", "containers": [
             {"name": "c", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}]}},
    ]
    assert client.post("/api/v1/apply", params=U, content=yaml.safe_dump_all(docs)).status_code == 200
    svc.loop.tick()
    assert svc.loop.last_error is None
    q = _queues(client)
    # idle but configured: guaranteed an eighth of 256 GiB, capped at a quarter
    assert q["small"]["capacity"] == 12.5 and q["small"]["maxCapacity"] == 25.0
    # proportion gives the busy queue what it asks (4 GiB of 256) and it uses all of it
    assert q["batch"]["absoluteCapacity"] == 1.5625 and q["batch"]["usedCapacity"] == 100.0
    assert q["batch"]["resourcesUsed"] == {"memory": 4096, "vCores": 2}
    assert q["batch"]["numApplications"] == 1
