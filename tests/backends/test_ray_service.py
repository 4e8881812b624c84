"""The Ray backend under the service's scheduling loop: reclaim cancels real Ray tasks that later run
again, a lost node's tasks restart elsewhere, and a job in an active reservation runs in its queue."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import ray
from ray import cloudpickle
from svc_ray import RECLAIM_CONF, RayCluster, phases, pods, ray_service, submission, submit, tick_until

from apportion.backends.ray_backend import RayBackend
from apportion.backends.ray_jobs import function_payload
from apportion.service.core import Service

cloudpickle.register_pickle_by_value(sys.modules[__name__])

DEDICATED = """
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: dedicated
  annotations: {apportion.io/reservable: "true"}
spec:
  weight: 1
  guarantee: {resource: {cpu: '4', memory: 8Gi}}
"""


def nap(seconds: float) -> str:
    """A task body: sleep, then say which Ray node ran it."""
    time.sleep(seconds)
    return str(ray.get_runtime_context().get_node_id())


def stop_all(backend: RayBackend, svc: Service) -> None:
    for pod in sorted(backend.running):
        backend._stop(pod)
    svc.close()


@pytest.mark.slow
def test_reclaim_cancels_the_victims_ray_task_and_it_runs_again(ray_cluster: RayCluster, tmp_path: Path) -> None:
    backend = RayBackend()
    svc = ray_service(tmp_path, backend, conf=RECLAIM_CONF)
    try:
        # queue a takes the whole cluster (3 workers x 2 CPUs) with long tasks
        submit(svc, "big", "a", 6, 1, {"cpu": "1"}, function_payload(nap, (30.0,)))
        tick_until(svc, lambda: phases(svc, "big") == ["Running"] * 6)
        refs = {p: s.ref for p, s in backend.running.items() if p.startswith("t/big-")}
        # queue b, deserved half of it, asks for a gang of two CPUs: reclaim evicts two of a's tasks
        submit(svc, "small", "b", 2, 2, {"cpu": "1"}, function_payload(nap, (0.3,)))
        tick_until(svc, lambda: phases(svc, "small") == ["Running"] * 2)
        evicted = sorted(p for p in refs if p not in backend.running)
        assert len(evicted) == 2
        for pod in evicted:
            assert svc.objects.objects[("Pod", "t", pod.split("/")[1])]["status"]["phase"] in ("Pending", "Running")
            with pytest.raises(ray.exceptions.TaskCancelledError):
                ray.get(refs[pod], timeout=30)
        # b's tasks end; a's evicted tasks are bound again and really run on Ray
        tick_until(svc, lambda: phases(svc, "small") == ["Succeeded"] * 2 and phases(svc, "big") == ["Running"] * 6)
        for pod in evicted:
            assert backend.running[pod].ref is not None and backend.running[pod].ref != refs[pod]
    finally:
        stop_all(backend, svc)


@pytest.mark.slow
def test_a_lost_nodes_task_goes_back_to_pending_and_restarts_elsewhere(ray_cluster: RayCluster,
                                                                       tmp_path: Path) -> None:
    extra = {n: ray_cluster.cluster.add_node(num_cpus=1, resources={"spare": 1, n: 1}) for n in ("s1", "s2")}
    ray_cluster.cluster.wait_for_nodes()
    backend = RayBackend()
    svc = ray_service(tmp_path, backend)
    try:
        submit(svc, "lone", "default", 1, 1, {"cpu": "1", "ray.io/spare": "1"}, function_payload(nap, (60.0,)))
        tick_until(svc, lambda: phases(svc, "lone") == ["Running"])
        first = pods(svc, "lone")["lone-0"]["spec"]["nodeName"]
        first_id = backend.node_ids[first]
        victim = next(n for n in extra if ray_cluster.node_id(n) == first_id)
        ray_cluster.cluster.remove_node(extra.pop(victim))
        tick_until(svc, lambda: ("Node", "", first) not in svc.objects.objects)
        tick_until(svc, lambda: phases(svc, "lone") == ["Running"]
                   and pods(svc, "lone")["lone-0"]["spec"]["nodeName"] != first)
        assert backend.node_ids[pods(svc, "lone")["lone-0"]["spec"]["nodeName"]] == ray_cluster.node_id(next(iter(extra)))
    finally:
        stop_all(backend, svc)
        for node in extra.values():
            ray_cluster.cluster.remove_node(node)


def test_a_job_in_an_active_reservation_runs_in_its_queue(ray_cluster: RayCluster, tmp_path: Path) -> None:
    backend = RayBackend()
    svc = ray_service(tmp_path, backend, extra=DEDICATED)
    try:
        # the Ray nodes arrive at the first tick, and the plan's capacity follows them
        svc.loop.tick()
        assert svc.reservations.plans["dedicated"].plan.capacity[1] == 4
        svc.set_now(svc.clock())
        rid = svc.reservations.new_reservation("alice")[1]["reservation-id"]
        status, _ = svc.committed(lambda: svc.reservations.submit(
            "alice", submission(rid, memory=1024, vcores=1, containers=2)))
        assert status == 202
        submit(svc, "inres", "dedicated", 2, 2, {"cpu": "1"}, function_payload(nap, (0.2,)), reservation=rid)
        tick_until(svc, lambda: phases(svc, "inres") == ["Running"] * 2)
        assert svc.live.cache.get("PodGroup", "t/inres")["spec"]["queue"] == rid
        assert svc.loop.last_parents[rid] == "dedicated"
        tick_until(svc, lambda: phases(svc, "inres") == ["Succeeded"] * 2)
    finally:
        stop_all(backend, svc)
