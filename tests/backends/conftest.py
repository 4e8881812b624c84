"""A real local Ray cluster for the backend tests: a head and three workers, each worker with its own
custom resource (`w1`, `w2`, `w3`) so the tests can tell them apart. One cluster for the whole run (its
start is most of the cost); it is shut down after, and no Ray process is left running."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
import ray
from ray.cluster_utils import Cluster
from svc_ray import RayCluster, descendants

WORKERS = ("w1", "w2", "w3")


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "resources": {"head": 1}})
    workers = {w: cluster.add_node(num_cpus=2, resources={w: 1}) for w in WORKERS}
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield RayCluster(cluster, workers)
    finally:
        # every process the cluster started descends from this one (gcs, raylets, their workers)
        started = descendants(os.getpid())
        ray.shutdown()
        cluster.shutdown()
        deadline = time.monotonic() + 15
        while (left := started & descendants(os.getpid())) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not left, f"Ray processes left running after the cluster shut down: {sorted(left)}"
