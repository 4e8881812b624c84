"""The Ray backend binds on exactly the chosen nodes, and a gang starts all of its tasks or none."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import ray
from ray import cloudpickle
from svc_ray import RECLAIM_CONF, RayCluster, phases, pods, ray_service, submit, tick_until

from apportion.backends.ray_backend import RayBackend
from apportion.backends.ray_jobs import function_payload
from apportion.backends.ray_nodes import NODE_ID_KEY

# the workers cannot import this test module: its functions travel by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def where(seconds: float) -> str:
    """A task body: wait, then say which Ray node ran it."""
    time.sleep(seconds)
    return str(ray.get_runtime_context().get_node_id())


def test_gang_of_two_runs_on_the_chosen_nodes_or_not_at_all(ray_cluster: RayCluster, tmp_path: Path) -> None:
    backend = RayBackend(gang_timeout_s=1.0)
    svc = ray_service(tmp_path, backend)
    try:
        svc.loop.tick()
        nodes = {n: o for (k, _, n), o in svc.objects.objects.items() if k == "Node"}
        assert len(nodes) == 4  # the head and three workers, no other node
        worker_ids = {ray_cluster.node_id(w) for w in ("w1", "w2", "w3")}
        assert worker_ids <= {o["metadata"]["annotations"][NODE_ID_KEY] for o in nodes.values()}

        # two tasks of 2 CPUs each: the session must spread them over two workers
        submit(svc, "g", "default", 2, 2, {"cpu": "2"}, function_payload(where, (0.5,)))
        svc.loop.tick()
        assert phases(svc, "g") == ["Running", "Running"]
        chosen = {name: o["spec"]["nodeName"] for name, o in pods(svc, "g").items()}
        assert len(set(chosen.values())) == 2
        ran = {pod.split("/")[1]: ray.get(s.ref, timeout=30) for pod, s in sorted(backend.running.items())}
        assert ran == {name: nodes[node]["metadata"]["annotations"][NODE_ID_KEY] for name, node in chosen.items()}
        svc.loop.tick()
        assert phases(svc, "g") == ["Succeeded", "Succeeded"]

        # a Ray task apportion does not know of holds w3's CPUs: the session still thinks w3 is free
        # and places the gang across two of the three workers; if w3 is among them the group cannot be
        # placed and neither task starts, otherwise both run
        blocker = ray.remote(num_cpus=2, resources={"w3": 1})(lambda: time.sleep(20)).remote()
        submit(svc, "h", "default", 3, 3, {"cpu": "2"}, function_payload(where, (0.2,)))
        svc.loop.tick()
        # three tasks of 2 CPUs need all three workers, w3 among them: none starts
        assert phases(svc, "h") == ["Pending", "Pending", "Pending"]
        assert not [p for p in backend.running if p.startswith("t/h-")]
        assert "could not be placed" in svc.loop.waiting["t/h-0"]
        ray.cancel(blocker, force=True)
        # wait for the blocker's worker to be gone: a gang task leased to that worker while it is being
        # killed would fail, and the test with it
        with pytest.raises((ray.exceptions.TaskCancelledError, ray.exceptions.WorkerCrashedError)):
            ray.get(blocker, timeout=30)
        deadline = time.monotonic() + 30
        while phases(svc, "h") != ["Running"] * 3 and time.monotonic() < deadline:
            svc.loop.tick()
        assert phases(svc, "h") == ["Running"] * 3
        got = sorted(ray.get([s.ref for p, s in backend.running.items() if p.startswith("t/h-")], timeout=30))
        assert got == sorted(ray_cluster.node_id(w) for w in ("w1", "w2", "w3"))
    finally:
        for pod in sorted(backend.running):
            backend._stop(pod)
        svc.close()


def test_reclaiming_from_a_gang_in_its_placement_group_frees_its_nodes(ray_cluster: RayCluster,
                                                                        tmp_path: Path) -> None:
    # a placement group cannot shrink: had only the chosen victim's task been cancelled, its CPU would
    # stay reserved inside the group and the reclaimer, "Running" for the scheduler, would wait in Ray
    backend = RayBackend()
    svc = ray_service(tmp_path, backend, conf=RECLAIM_CONF)
    try:
        # queue a's gang of 6 fills the three workers, in one placement group
        submit(svc, "big", "a", 6, 6, {"cpu": "1"}, function_payload(where, (30.0,)))
        tick_until(svc, lambda: phases(svc, "big") == ["Running"] * 6)
        first = {p: s.ref for p, s in backend.running.items() if p.startswith("t/big-")}
        assert "t/big" in backend.groups
        # queue b, under its deserved share, reclaims: the gang's group goes whole, and b really runs
        submit(svc, "small", "b", 2, 2, {"cpu": "1"}, function_payload(where, (0.5,)))
        tick_until(svc, lambda: phases(svc, "small") == ["Running"] * 2)
        assert phases(svc, "big") == ["Pending"] * 6 and "t/big" not in backend.groups
        small = [s.ref for p, s in backend.running.items() if p.startswith("t/small-")]
        assert len(ray.get(small, timeout=30)) == 2
        for ref in first.values():
            with pytest.raises(ray.exceptions.RayError):
                ray.get(ref, timeout=30)
        # once b is done, the gang runs again, all of it
        tick_until(svc, lambda: phases(svc, "small") == ["Succeeded"] * 2 and phases(svc, "big") == ["Running"] * 6)
        assert all(backend.running[p].ref != ref for p, ref in first.items())
    finally:
        for pod in sorted(backend.running):
            backend._stop(pod)
        svc.close()
