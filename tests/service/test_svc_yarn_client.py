"""yarn-api-client 1.0.3, unchanged, drives the reservation API of a real server (both databases),
and the reservations are still there, with the same allocation, after a restart."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from svc_helpers import definition, now_ms, submission
from svc_server import LiveServer
from yarn_api_client.auth import SimpleAuth
from yarn_api_client.errors import APIError
from yarn_api_client.resource_manager import ResourceManager


def _rm(server: LiveServer, user: str = "alice") -> ResourceManager:
    return ResourceManager(service_endpoints=[server.url + "/ws/v1"], auth=SimpleAuth(user), timeout=30)


def test_yarn_api_client_round_trip_and_restart(server_factory: Callable[..., LiveServer]) -> None:
    server = server_factory()
    rm = _rm(server)
    assert rm.cluster_information().data["clusterInfo"]["haState"] == "ACTIVE"
    rid = rm.cluster_new_reservation().data["reservation-id"]
    assert rid.startswith("reservation_")
    rm.cluster_submit_reservation(submission(rid))
    listed = rm.cluster_reservations(queue="dedicated", reservation_id=rid,
                                     include_resource_allocations="true").data["reservations"]
    assert [r["reservation-id"] for r in listed] == [rid]
    assert listed[0]["user"] == "alice"
    alloc = listed[0]["resource-allocations"]
    assert alloc and alloc[0]["resource"] == {"memory": 16384, "vCores": 8}

    t = now_ms()
    rm.cluster_update_reservation({"reservation-id": rid, "reservation-definition": definition(
        t, t + 600_000, memory=2048, vcores=1, containers=2)})
    after = rm.cluster_reservations(queue="dedicated", include_resource_allocations="true").data["reservations"]
    assert after[0]["resource-allocations"][0]["resource"] == {"memory": 4096, "vCores": 2}

    # a refused submit is a 400 with YARN's body; the client raises APIError
    with pytest.raises(APIError, match="not managed by reservation system"):
        rm.cluster_submit_reservation(submission(rm.cluster_new_reservation().data["reservation-id"], queue="batch"))

    # restart: RM recovery puts the same allocation back without asking the policy
    server.stop()
    server.start()
    rm = _rm(server)
    recovered = rm.cluster_reservations(queue="root.dedicated", include_resource_allocations="true").data
    assert recovered["reservations"] == after
    rm.cluster_delete_reservation(rid)
    assert rm.cluster_reservations(queue="dedicated").data["reservations"] == []
    with pytest.raises(APIError, match="does not exist in the plan"):
        rm.cluster_delete_reservation(rid)
    server.stop()
    server.start()
    assert httpx.get(server.url + "/ws/v1/cluster/reservation/list",
                     params={"queue": "dedicated", "user.name": "bob"}).json() == {"reservations": []}
