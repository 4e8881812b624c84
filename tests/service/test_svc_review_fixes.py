"""Regression tests for the service review (notes/review.md A1-A3, E1-E3), in process: the application
on a SQLite database with the loop off (each test drives the ticks), through Starlette's test client."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from svc_helpers import submission

from apportion.service.app import create_app
from apportion.service.core import Service, ServiceConfig

U = {"user.name": "admin"}
CONF_KEY = "volcano-scheduler.conf"


def _configmap(conf: str, name: str = "volcano-scheduler-configmap", namespace: str = "kube-system") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {CONF_KEY: conf}}


GOOD_CONF = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: proportion\n"


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    """A service on a fresh SQLite database, its loop not running."""
    s = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'a.db'}", loop=False))
    yield s
    s.close()


@pytest.fixture
def client(svc: Service) -> TestClient:
    """The service's application (no lifespan: the loop stays off)."""
    return TestClient(create_app(service=svc))


def _configmaps(client: TestClient) -> list[str]:
    items = client.get("/api/v1/configmaps").json()["items"]
    return [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in items]


# -- A1: the scheduler conf is checked as `cycle` checks it ------------------------------------------
@pytest.mark.parametrize("conf", ['actions: "nope"', "actions: [allocate]", "tiers: {", "- a list"])
def test_a_scheduler_conf_that_does_not_parse_is_refused_on_every_write_route(client: TestClient, conf: str) -> None:
    cm = _configmap(conf)
    answers = [
        client.post("/api/v1/apply", params=U, json=cm),
        client.post("/api/v1/configmaps", params=U, json=cm),
        client.put("/api/v1/configmaps/kube-system/volcano-scheduler-configmap", params=U, json=cm),
    ]
    for r in answers:
        assert r.status_code == 400, r.text
        assert f"data.{CONF_KEY}" in r.json()["error"] and "Traceback" not in r.text, r.text
    assert _configmaps(client) == []


def test_a_namespaced_configmap_can_be_read_replaced_and_deleted(client: TestClient, svc: Service) -> None:
    assert client.post("/api/v1/apply", params=U, json=_configmap(GOOD_CONF)).status_code == 200
    path = "/api/v1/configmaps/kube-system/volcano-scheduler-configmap"
    assert client.get(path).json()["data"][CONF_KEY] == GOOD_CONF
    r = client.put(path, params=U, json=_configmap(GOOD_CONF.replace("enqueue, ", "")))
    assert r.status_code == 200, r.text
    # a bad replacement leaves the good one in place
    r = client.put(path, params=U, json=_configmap('actions: "nope"'))
    assert r.status_code == 400 and client.get(path).json()["data"][CONF_KEY].startswith('actions: "allocate"')
    # the name in the path must be the object's
    r = client.put("/api/v1/configmaps/other/volcano-scheduler-configmap", params=U, json=_configmap(GOOD_CONF))
    assert r.status_code == 400 and "metadata" in r.json()["error"]
    # a cluster-scoped kind has no namespace
    assert client.delete("/api/v1/queues/x/batch", params=U).status_code == 400
    r = client.delete(path, params=U)
    assert r.status_code == 200, r.text
    assert client.get(path).status_code == 404 and _configmaps(client) == []
    assert client.delete(path, params=U).status_code == 404
    # a namespaced object named without a namespace is in "default", as kubectl has it
    assert client.post("/api/v1/apply", params=U, json=_configmap(GOOD_CONF, namespace="default")).status_code == 200
    assert client.delete("/api/v1/configmaps/volcano-scheduler-configmap", params=U).status_code == 200
    svc.loop.tick()
    assert svc.loop.last_error is None


def test_a_stored_bad_conf_loads_fails_ticks_once_in_the_log_and_is_reported(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    first = Service(ServiceConfig(db_url=url, loop=False))
    # as a database written before the conf was checked holds it
    with first.engine.begin() as conn:
        first.store.put_objects(conn, [(("ConfigMap", "kube-system", "cm"), _configmap('actions: "nope"', "cm"),
                                        first.objects.version + 1)])
    first.close()
    svc = Service(ServiceConfig(db_url=url, loop=False, schedule_period=0.01))
    try:
        client = TestClient(create_app(service=svc))

        async def some_ticks() -> None:
            task = asyncio.create_task(svc.loop.run_forever())
            await asyncio.sleep(0.5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        with caplog.at_level(logging.INFO, logger="apportion.service.loop"):
            asyncio.run(some_ticks())
        failed = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(failed) == 1, [r.getMessage() for r in caplog.records]
        assert failed[0].exc_info is None and "\n" not in failed[0].getMessage()
        assert f"data.{CONF_KEY}" in failed[0].getMessage()
        status = client.get("/api/v1/status").json()
        assert f"data.{CONF_KEY}" in status["tickError"] and status["ticks"] == 0
        # the fix: delete it through the API, and the next tick succeeds
        assert client.delete("/api/v1/configmaps/kube-system/cm", params=U).status_code == 200
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="apportion.service.loop"):
            asyncio.run(some_ticks())
        assert "succeed again" in caplog.text
        status = client.get("/api/v1/status").json()
        assert status["tickError"] is None and status["ticks"] > 0
    finally:
        svc.close()


# -- A2: `serve` refuses a port it cannot listen on before it says "serving on" --------------------------
def _serve(tmp_path: Path, *args: str) -> tuple[int, str]:
    from click.testing import CliRunner

    from apportion.cli import main

    r = CliRunner().invoke(main, ["serve", "--db", f"sqlite:///{tmp_path / 's.db'}", *args])
    return r.exit_code, r.output


def test_serve_refuses_a_port_out_of_range_in_use_or_a_host_that_does_not_resolve(tmp_path: Path) -> None:
    code, out = _serve(tmp_path, "--port", "99999")
    assert code == 2 and "--port" in out and "Traceback" not in out, out
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out = _serve(tmp_path, "--port", str(port))
    assert code == 2 and out.count("\n") == 1 and "--port" in out, out
    assert "serving on" not in out
    code, out = _serve(tmp_path, "--host", "host name with spaces", "--port", "0")
    assert code == 2 and out.count("\n") == 1 and "--host" in out and "serving on" not in out, out


# -- A3: with --acls, reading reservations follows YARN's list ACL ---------------------------------------
LISTED = {"kind": "Queue", "metadata": {"name": "dedicated", "annotations": {
    "apportion.io/reservable": "true", "apportion.io/acl-submit-reservations": "alice",
    "apportion.io/acl-list-reservations": "alice,carol", "apportion.io/acl-administer-reservations": "dave"}},
    "spec": {"guarantee": {"resource": {"cpu": "32", "memory": "128Gi"}}, "capability": {"cpu": "64", "memory": "256Gi"}}}


def _as(client: TestClient, method: str, path: str, user: str | None, **kw: Any) -> Any:
    client.cookies.clear()  # each call names its caller itself
    return client.request(method, path, params={"user.name": user} if user else None, **kw)


def test_reservation_reads_follow_the_list_acl(tmp_path: Path) -> None:
    svc = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'acl.db'}", loop=False, acls=True, admins=("root",)))
    try:
        client = TestClient(create_app(service=svc))
        assert _as(client, "POST", "/api/v1/apply", "root", json=LISTED).status_code == 200
        rid = _as(client, "POST", "/ws/v1/cluster/reservation/new-reservation", "alice").json()["reservation-id"]
        r = _as(client, "POST", "/ws/v1/cluster/reservation/submit", "alice", json=submission(rid))
        assert r.status_code == 202, r.text
        # what YARN's own list answers, which the other reads follow
        for user, status in [("alice", 200), ("carol", 200), ("dave", 200), ("mallory", 403)]:
            client.cookies.clear()
            r = client.get("/ws/v1/cluster/reservation/list", params={"user.name": user, "queue": "dedicated"})
            assert r.status_code == status, r.text
        for user, sees in [("alice", True), ("carol", True), ("dave", True), ("root", True), ("mallory", False)]:
            got = _as(client, "GET", "/api/v1/reservations", user)
            assert got.status_code == 200, got.text
            assert [x["reservation-id"] for x in got.json()["reservations"]] == ([rid] if sees else []), user
            page = _as(client, "GET", "/reservations", user)
            assert page.status_code == 200 and (rid in page.text) == sees, user
            # the delete page shows one reservation's details: the same list ACL decides
            confirm = _as(client, "GET", f"/reservations/{rid}/delete", user)
            assert (confirm.status_code == 200) == sees and (rid in confirm.text or not sees), user
        assert _as(client, "GET", "/api/v1/reservations", None).status_code == 401
        page = _as(client, "GET", "/reservations", None)
        assert page.status_code == 200 and rid not in page.text
    finally:
        svc.close()


def test_reservation_reads_are_open_without_acls(client: TestClient, svc: Service) -> None:
    rid = _as(client, "POST", "/ws/v1/cluster/reservation/new-reservation", "alice").json()["reservation-id"]
    assert _as(client, "POST", "/ws/v1/cluster/reservation/submit", "alice", json=submission(rid)).status_code == 202
    got = _as(client, "GET", "/api/v1/reservations", None)
    assert [x["reservation-id"] for x in got.json()["reservations"]] == [rid]
    assert rid in _as(client, "GET", "/reservations", None).text


# -- E1-E3: bad input on the write paths ---------------------------------------------------------------
@pytest.mark.parametrize(("method", "path"), [("POST", "/api/v1/apply"), ("POST", "/api/v1/jobs"),
                                              ("POST", "/api/v1/queues"), ("PUT", "/api/v1/queues/batch"),
                                              ("PUT", "/api/v1/configmaps/kube-system/cm")])
def test_a_write_without_a_caller_is_refused_before_its_body_is_read(client: TestClient, method: str, path: str) -> None:
    r = _as(client, method, path, None, content=b"{not: [yaml")
    assert r.status_code == 401, r.text
    assert _as(client, method, path, "admin", content=b"{not: [yaml").status_code == 400


def test_a_rejected_dashboard_form_takes_no_reservation_id(client: TestClient) -> None:
    form = {"user": "alice", "queue": "dedicated", "interpreter": "R_ALL", "arrival": "10", "deadline": "5",
            "stage-0-memory": "1024", "stage-0-vcores": "1", "stage-0-containers": "1",
            "stage-0-concurrency": "1", "stage-0-duration": "1"}
    for _ in range(3):
        r = _as(client, "POST", "/reservations", "alice", data=form)
        assert r.status_code == 200 and "the deadline must be after the arrival" in r.text, r.text
    rid = _as(client, "POST", "/ws/v1/cluster/reservation/new-reservation", "alice").json()["reservation-id"]
    assert rid.endswith("_0001"), rid


def test_token_create_refuses_an_empty_user(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from apportion.cli import main

    for user in ("", "  "):
        r = CliRunner().invoke(main, ["token", "create", user, "--db", f"sqlite:///{tmp_path / 't.db'}"])
        assert r.exit_code == 2 and r.output.count("\n") == 1 and "USER" in r.output, r.output


# -- C2: the service's StatusUpdater and the cache's merge a podgroup's status in one place ---------------
def test_service_and_cache_status_updaters_merge_podgroup_conditions_alike() -> None:
    from apportion.service.loop import ObjectBackend
    from apportion.state.cache import SchedulerCache
    from apportion.state.decisions import Condition
    from apportion.state.events import ADDED, WatchEvent
    from apportion.state.memory import CacheStatusUpdater, pod_group_status

    old = [{"type": "Scheduled", "status": "True", "reason": "", "message": "", "transitionID": "s0"},
           {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": "m", "transitionID": "s0"}]
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "j", "namespace": "t"}, "spec": {"queue": "default", "minMember": 1},
          "status": {"phase": "Pending", "conditions": old}}
    new = [Condition("Unschedulable", "True", "NotEnoughResources", "still", "s1")]
    cache = SchedulerCache()
    cache.apply(WatchEvent(ADDED, pg, "test"))
    CacheStatusUpdater(cache).update_pod_group("t/j", "Inqueue", new)
    backend = ObjectBackend({("PodGroup", "t", "j"): pg}, 0)
    backend.update_pod_group("t/j", "Inqueue", new)
    cached = (cache.get("PodGroup", "t/j") or {})["status"]
    assert backend.changed[("PodGroup", "t", "j")]["status"] == cached == pod_group_status(pg, "Inqueue", new)
    assert [c["transitionID"] for c in cached["conditions"]] == ["s0", "s1"]
    # nothing to change: no edit, no event
    assert pod_group_status({"status": cached}, "Inqueue", new) is None
