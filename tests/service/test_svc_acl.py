"""YARN's ACLs behind `--acls`: every endpoint tried as an allowed and a refused user (403 with a
RemoteException naming the ACL on /ws routes), bearer tokens from `apportion token create`, and 401
without a caller."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import httpx
from svc_helpers import definition, now_ms, submission
from svc_server import LiveServer

ADMIN = {"user.name": "root"}

QUEUES = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: dedicated
  annotations:
    apportion.io/reservable: "true"
    apportion.io/acl-submit-reservations: alice
    apportion.io/acl-list-reservations: alice,carol
    apportion.io/acl-administer-reservations: dave
spec:
  guarantee: {resource: {cpu: '32', memory: 128Gi}}
  capability: {cpu: '64', memory: 256Gi}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: batch
  annotations:
    apportion.io/acl-submit-applications: alice
    apportion.io/acl-administer-queue: erin
spec: {weight: 2}
"""


def _pg(name: str) -> dict[str, object]:
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": "acl"}, "spec": {"queue": "batch"}}


class _Fresh(httpx.Client):
    """A client that sends no cookie: each call names its caller itself."""

    def request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.cookies.clear()
        return super().request(*args, **kwargs)


def _refused(r: httpx.Response, acl: str) -> None:
    assert r.status_code == 403, r.text
    body = r.json()
    text = body["RemoteException"]["message"] if "RemoteException" in body else body["error"]
    assert acl in text, text


def test_every_endpoint_allowed_and_refused(server_factory: Callable[..., LiveServer]) -> None:
    server = server_factory("--acls", "--admin", "root")
    c = _Fresh(base_url=server.url, timeout=30)
    assert c.post("/api/v1/apply", params=ADMIN, content=QUEUES).status_code == 200

    def as_(user: str) -> dict[str, str]:
        return {"user.name": user}

    # new-reservation: any authenticated user (YARN checks no ACL there); none -> 401
    assert c.post("/ws/v1/cluster/reservation/new-reservation").status_code == 401
    rid = c.post("/ws/v1/cluster/reservation/new-reservation", params=as_("bob")).json()["reservation-id"]
    # submit
    _refused(c.post("/ws/v1/cluster/reservation/submit", params=as_("bob"), json=submission(rid)),
             "acl_submit_reservations")
    assert c.post("/ws/v1/cluster/reservation/submit", params=as_("alice"), json=submission(rid)).status_code == 202
    # list
    _refused(c.get("/ws/v1/cluster/reservation/list", params={**as_("bob"), "queue": "dedicated"}),
             "acl_list_reservations")
    assert c.get("/ws/v1/cluster/reservation/list", params={**as_("carol"), "queue": "dedicated"}).status_code == 200
    # update: the owner (with the submit ACL) or an administrator of reservations
    t = now_ms()
    upd = {"reservation-id": rid, "reservation-definition": definition(t, t + 600_000, containers=2)}
    _refused(c.post("/ws/v1/cluster/reservation/update", params=as_("bob"), json=upd), "acl_administer_reservations")
    assert c.post("/ws/v1/cluster/reservation/update", params=as_("alice"), json=upd).status_code == 200
    # dave passes the ACL; the agent then refuses to move alice's reservation to him, as YARN's does
    r = c.post("/ws/v1/cluster/reservation/update", params=as_("dave"), json=upd)
    assert r.status_code == 400 and "MismatchedUserException" in r.text, r.text
    # delete
    _refused(c.post("/ws/v1/cluster/reservation/delete", params=as_("carol"), json={"reservation-id": rid}),
             "acl_administer_reservations")
    assert c.post("/ws/v1/cluster/reservation/delete", params=as_("dave"), json={"reservation-id": rid}).status_code == 200

    # /api/v1: jobs need acl_submit_applications on their queue, queues acl_administer_queue,
    # cluster-wide objects an administrator; writes without a caller are 401
    assert c.post("/api/v1/apply", json=_pg("anon")).status_code == 401
    _refused(c.post("/api/v1/apply", params=as_("bob"), json=_pg("j1")), "acl_submit_applications")
    assert c.post("/api/v1/apply", params=as_("alice"), json=_pg("j1")).status_code == 200
    _refused(c.delete("/api/v1/jobs/acl/j1", params=as_("bob")), "acl_submit_applications")
    assert c.delete("/api/v1/jobs/acl/j1", params=as_("erin")).status_code == 200
    batch = c.get("/api/v1/queues/batch").json()
    _refused(c.put("/api/v1/queues/batch", params=as_("alice"), json=batch), "acl_administer_queue")
    assert c.put("/api/v1/queues/batch", params=as_("erin"), json=batch).status_code == 200
    node = {"kind": "Node", "metadata": {"name": "extra"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}
    _refused(c.post("/api/v1/nodes", params=as_("alice"), json=node), "yarn.admin.acl")
    assert c.post("/api/v1/nodes", params=ADMIN, json=node).status_code == 200
    # reads stay open
    assert c.get("/ws/v1/cluster/scheduler").status_code == 200
    assert c.get("/api/v1/queues").status_code == 200

    # a bearer token made with `apportion token create` names its user; a wrong one names nobody
    tok = subprocess.run([sys.executable, "-c", "from apportion.cli import main; main()", "token", "create", "alice",
                          "--db", server.db_url], capture_output=True, text=True, check=True).stdout.strip()
    auth = {"Authorization": f"Bearer {tok}"}
    assert c.post("/api/v1/apply", headers=auth, json=_pg("j2")).status_code == 200
    assert c.post("/api/v1/apply", headers={"Authorization": "Bearer nope"}, json=_pg("j3")).status_code == 401
    rid2 = c.post("/ws/v1/cluster/reservation/new-reservation", headers=auth).json()["reservation-id"]
    assert c.post("/ws/v1/cluster/reservation/submit", headers=auth, json=submission(rid2)).status_code == 202
    c.close()
