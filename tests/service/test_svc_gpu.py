"""GPU reservations through a real `apportion serve`: the plans carry every resource type of the
cluster's nodes, so a `yarn.io/gpu` ask is planned (accepted while GPUs are free, refused when only
GPUs are short), listed with its `resourceInformations`, honoured by the live capacity tree (a GPU job
submitted to the reservation runs) and recovered after a restart with the same allocations."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources as ires
from pathlib import Path
from typing import Any

import httpx
import yaml
from svc_helpers import definition, now_ms, wait_for
from svc_server import LiveServer

U = {"user.name": "admin"}


def _gpu_cluster(tmp_path: Path) -> str:
    """The default cluster with 2 GPUs on each of its four nodes, and 4 of them guaranteed to the
    reservable queue `dedicated` (its plan: 128 GB, 32 vCores, 4 GPUs)."""
    docs = list(yaml.safe_load_all(ires.files("apportion.service").joinpath("default-cluster.yaml").read_text()))
    for d in docs:
        if d["kind"] == "Node":
            d["status"]["allocatable"]["nvidia.com/gpu"] = "2"
        if d["kind"] == "Queue" and d["metadata"]["name"] == "dedicated":
            d["spec"]["guarantee"]["resource"]["nvidia.com/gpu"] = "4"
            d["spec"]["capability"]["nvidia.com/gpu"] = "8"
    path = tmp_path / "gpu-cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def _gpu_submission(rid: str, gpus: int, containers: int, memory: int = 4096, vcores: int = 2) -> dict[str, Any]:
    t = now_ms()
    d = definition(t, t + 600_000, memory=memory, vcores=vcores, containers=containers, duration=600_000)
    d["reservation-requests"]["reservation-request"][0]["capability"]["resourceInformations"] = {
        "resourceInformation": [{"name": "yarn.io/gpu", "value": gpus, "units": ""}]}
    return {"queue": "dedicated", "reservation-id": rid, "reservation-definition": d}


def _gpu_job(name: str, rid: str, pods: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "t", "annotations": {"apportion.io/reservation": rid}},
        "spec": {"queue": "dedicated", "minMember": pods}}]
    for i in range(pods):
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": f"{name}-{i}", "namespace": "t", "annotations": {"scheduling.k8s.io/group-name": name}},
            "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": {
                "cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Pending"}})
    return out



def _gpus(resource: dict[str, Any]) -> int:
    infos = resource["resourceInformations"]["resourceInformation"]
    return sum(i["value"] for i in infos if i["name"] == "yarn.io/gpu")


def _refused_overcommit(r: httpx.Response) -> bool:
    """YARN's refusal of a booking the plan cannot hold (a PlanningException inside a 400)."""
    body = r.json().get("RemoteException") or {}
    return r.status_code == 400 and body.get("exception") == "BadRequestException" and \
        "ResourceOverCommitException" in body.get("message", "")


def _listed(c: httpx.Client) -> list[dict[str, Any]]:
    r = c.get("/ws/v1/cluster/reservation/list", params={**U, "queue": "dedicated", "include-resource-allocations": "true"})
    assert r.status_code == 200, r.text
    return sorted(r.json()["reservations"], key=lambda x: x["reservation-id"])


def test_gpu_reservation_planned_listed_followed_and_recovered(
        server_factory: Callable[..., LiveServer], tmp_path: Path) -> None:
    server = server_factory("--cluster", _gpu_cluster(tmp_path), "--schedule-period", "0.3")
    c = httpx.Client(base_url=server.url, timeout=30)

    def new_id() -> str:
        return str(c.post("/ws/v1/cluster/reservation/new-reservation", params=U).json()["reservation-id"])

    # 4 containers of 1 GPU: every GPU of the plan for ten minutes
    rid = new_id()
    r = c.post("/ws/v1/cluster/reservation/submit", params=U, json=_gpu_submission(rid, gpus=1, containers=4))
    assert r.status_code == 202, r.text
    # one more GPU: memory and vCores are plentiful (16 GB and 8 of 128 GB and 32 used), GPUs are not
    r = c.post("/ws/v1/cluster/reservation/submit", params=U,
               json=_gpu_submission(new_id(), gpus=1, containers=1, memory=1024, vcores=1))
    assert _refused_overcommit(r), r.text
    # the same without a GPU fits
    r = c.post("/ws/v1/cluster/reservation/submit", params=U,
               json=_gpu_submission(new_id(), gpus=0, containers=1, memory=1024, vcores=1))
    assert r.status_code == 202, r.text

    listed = _listed(c)
    gpu = next(x for x in listed if x["reservation-id"] == rid)
    cap = gpu["reservation-definition"]["reservation-requests"]["reservation-request"][0]["capability"]
    assert cap["memory"] == 4096 and cap["vCores"] == 2 and _gpus(cap) == 1
    assert [_gpus(a["resource"]) for a in gpu["resource-allocations"]] == [4]
    assert gpu["resource-allocations"][0]["resource"]["memory"] == 16384
    # /api/v1/reservations and the dashboard's plan page read the same plan
    mine = [x for x in c.get("/api/v1/reservations", params=U).json()["reservations"] if x["reservation-id"] == rid]
    assert [_gpus(a["resource"]) for a in mine[0]["resource-allocations"]] == [4]
    page = c.get("/reservations", params=U)
    assert page.status_code == 200 and rid in page.text

    # the reservation's queue gets the GPUs, and a GPU job submitted to it runs
    body = yaml.safe_dump_all(_gpu_job("train", rid, 4))
    assert c.post("/api/v1/apply", params=U, content=body).status_code == 200
    wait_for(lambda: all(p["status"]["phase"] == "Running" for p in c.get("/api/v1/jobs/t/train").json()["pods"]), 30.0)

    # a restart recovers the same reservations and allocations from the database
    server.stop()
    server.start()
    c.close()
    c = httpx.Client(base_url=server.url, timeout=30)
    assert _listed(c) == listed
    # recovered, the plan still knows its GPUs are taken
    r = c.post("/ws/v1/cluster/reservation/submit", params=U,
               json=_gpu_submission(new_id(), gpus=1, containers=1, memory=1024, vcores=1))
    assert _refused_overcommit(r), r.text
    c.close()


def _gpu_node(name: str, gpus: str) -> tuple[str, dict[str, Any]]:
    return (f"node {name}", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {
        "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": gpus}}})


def test_reservation_queue_gets_the_gpus_and_plans_keep_their_types(tmp_path: Path) -> None:
    """In process: the follower's queue of a GPU reservation is guaranteed its GPUs; a plan gains the
    type when GPU nodes join (its reservations kept) and keeps it, at capacity 0, when they leave."""
    from apportion.service.core import Service, ServiceConfig

    svc = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'a.db'}", loop=False))
    try:
        svc.set_now(svc.clock())
        plan = svc.reservations.plans["dedicated"].plan
        assert plan.dims == ("memory-mb", "vcores") and plan.capacity == (131072, 32)
        rid0 = svc.reservations.new_reservation("alice")[1]["reservation-id"]
        body = _gpu_submission(rid0, gpus=0, containers=2)
        assert svc.committed(lambda: svc.reservations.submit("alice", body))[0] == 202

        # GPU nodes join: the plan gains the type (capacity 0: the guarantee names no GPU), the
        # memory/vCores reservation is kept with 0 GPUs
        svc._apply_now([_gpu_node("gpu-1", "4"), _gpu_node("gpu-2", "4"), ("q", {
            "kind": "Queue", "metadata": {"name": "dedicated", "annotations": {"apportion.io/reservable": "true"}},
            "spec": {"weight": 1, "guarantee": {"resource": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "6"}},
                     "capability": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "8"}}})], [])
        plan = svc.reservations.plans["dedicated"].plan
        assert plan.dims == ("memory-mb", "vcores", "nvidia.com/gpu") and plan.capacity == (131072, 32, 6)
        assert [v for _, _, v in plan.reservations[next(iter(plan.reservations))].intervals] == [(8192, 4, 0)]

        rid = svc.reservations.new_reservation("alice")[1]["reservation-id"]
        body = _gpu_submission(rid, gpus=2, containers=3)
        assert svc.committed(lambda: svc.reservations.submit("alice", body))[0] == 202
        svc.loop.tick()
        q = svc.live.cache.get("Queue", rid)
        assert q["spec"]["guarantee"]["resource"] == {"cpu": "6", "memory": "12288Mi", "nvidia.com/gpu": "6"}
        assert q["spec"]["deserved"]["nvidia.com/gpu"] == "6"
        rest = svc.live.cache.get("Queue", "dedicated-default")["spec"]["deserved"]
        assert "nvidia.com/gpu" not in rest and rest["memory"] == f"{131072 - 12288 - 8192}Mi"

        # the GPU nodes leave: the plan keeps the type (capacity 0) and its reservations whole
        svc._apply_now([], [("Node", "", "gpu-1"), ("Node", "", "gpu-2")])
        plan = svc.reservations.plans["dedicated"].plan
        assert plan.dims == ("memory-mb", "vcores", "nvidia.com/gpu") and plan.capacity[2] == 0
        held = {str(r.id): [v for _, _, v in r.intervals] for r in plan.reservations.values()}
        assert held[rid] == [(12288, 6, 6)]
    finally:
        svc.close()

    # a restart on a memory/CPU cluster reads the stored GPU vectors whole (the plan gets the type)
    svc = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'a.db'}", loop=False))
    try:
        plan = svc.reservations.plans["dedicated"].plan
        assert plan.dims == ("memory-mb", "vcores", "nvidia.com/gpu")
        assert {str(r.id): [v for _, _, v in r.intervals] for r in plan.reservations.values()} == held
    finally:
        svc.close()
