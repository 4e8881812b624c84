"""A reservable queue's plan capacity is the same rule in the service and in the simulator: what the
tree promises the queue (its guarantee, else its deserved), for a queue promised nothing its
capability, else the whole cluster; never more than the cluster."""

from __future__ import annotations

import pytest

from apportion.cluster.model import QueueInfo
from apportion.resources import Resource
from apportion.service.core import plan_capacities
from apportion.service.reservations import PlanSettings, to_plan_vector
from apportion.simulation.reservations import plan_capacity

GIB = 2**30
NODES = [Resource.from_natural({"cpu": 16, "memory": 64 * GIB}) for _ in range(4)]
CLUSTER = Resource.from_natural({"cpu": 64, "memory": 256 * GIB})


def _r(cpu: float, mem_gib: float) -> Resource:
    return Resource.from_natural({"cpu": cpu, "memory": mem_gib * GIB})


@pytest.mark.parametrize(("spec", "want"), [
    ({"guarantee": _r(8, 32), "deserved": _r(16, 64), "capability": _r(32, 128)}, (32 * 1024, 8)),
    ({"deserved": _r(16, 64), "capability": _r(32, 128)}, (64 * 1024, 16)),
    ({"capability": _r(32, 128)}, (128 * 1024, 32)),
    ({}, (256 * 1024, 64)),
    ({"deserved": _r(100, 500)}, (256 * 1024, 64)),  # capped by the cluster
])
def test_the_service_and_the_simulator_give_a_plan_the_same_capacity(spec, want):
    q = QueueInfo("dedicated", capability_set="capability" in spec, deserved_set="deserved" in spec, **spec)
    _settings, cap, dims = plan_capacities(NODES, {"dedicated": q}, {"dedicated": PlanSettings()})["dedicated"]
    assert cap == want
    assert to_plan_vector(plan_capacity(q, CLUSTER), dims) == want
