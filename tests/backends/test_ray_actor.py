"""A job submitted as an actor class: the backend notices when the actor ends, and its pod completes
(the actor ended itself) or fails (killed by someone else, crashed, or its constructor raised)."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import ray
from ray import cloudpickle
from svc_ray import RayCluster, phases, ray_service, submit

from apportion.backends.ray_backend import RayBackend
from apportion.backends.ray_jobs import function_payload

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class Worker:
    """An actor job: it works in a thread for a while, then ends as asked ("exit" or "crash")."""

    def __init__(self, end: str, seconds: float) -> None:
        def work() -> None:
            time.sleep(seconds)
            if end == "exit":
                ray.actor.exit_actor()
            elif end == "crash":
                os._exit(3)

        threading.Thread(target=work, daemon=True).start()


class Broken:
    """An actor whose constructor raises."""

    def __init__(self) -> None:
        raise ValueError("no")


def test_an_actors_end_completes_or_fails_its_pod(ray_cluster: RayCluster, tmp_path: Path) -> None:
    backend = RayBackend()
    svc = ray_service(tmp_path, backend)
    try:
        submit(svc, "done", "default", 1, 1, {"cpu": "1"}, function_payload(Worker, ("exit", 1.0)))
        submit(svc, "crash", "default", 1, 1, {"cpu": "1"}, function_payload(Worker, ("crash", 1.0)))
        submit(svc, "kill", "default", 1, 1, {"cpu": "1"}, function_payload(Worker, ("never", 0.0)))
        submit(svc, "broken", "default", 1, 1, {"cpu": "1"}, function_payload(Broken))
        svc.loop.tick()
        assert [phases(svc, j) for j in ("done", "crash", "kill", "broken")] == [["Running"]] * 4
        assert all(s.actor is not None for s in backend.running.values())
        # the actors live: a tick leaves the long-lived one running
        svc.loop.tick()
        assert phases(svc, "kill") == ["Running"]
        # someone other than the scheduler kills it
        ray.kill(backend.running["t/kill-0"].actor)
        want = {"done": ["Succeeded"], "crash": ["Failed"], "kill": ["Failed"], "broken": ["Failed"]}
        # a wait, not a timing: Ray's owner notices a killed or crashed actor within seconds when
        # idle, but it took over 60 s once at load average 22
        deadline = time.monotonic() + 180
        while {j: phases(svc, j) for j in want} != want and time.monotonic() < deadline:
            time.sleep(0.2)
            svc.loop.tick()
        assert {j: phases(svc, j) for j in want} == want
        assert not backend.running
        # each end reached the cache as an event: the live state holds the pods' final phases
        for job, (phase,) in want.items():
            assert svc.live.cache.get("Pod", f"t/{job}-0")["status"]["phase"] == phase
    finally:
        for pod in sorted(backend.running):
            backend._stop(pod)
        svc.close()
