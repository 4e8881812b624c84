"""enqueue's backlog test (Dispatch.enqueue_admissible, capacity's admissible_enqueues): a session whose
backlog capacity refuses whole, or refuses whole once the jobs admissible at open have been voted, decides,
explains and reports exactly what the votes job by job in queue order decide (and the votes with each level's verdict kept while no accounting moves decide as the
votes that work every level out), over random trees, limits, closed queues, jobs in parent queues and jobs without
minResources; and the shortcut is taken where it should be."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.actions import enqueue
from apportion.framework.session import Session
from apportion.plugins.capacity.admission import Admission
from spying import record_calls

from k8s import cycle, node, pod, podgroup, queue

TIERS = """
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity%s}, {name: nodeorder}]
"""
CONFS = ['actions: "enqueue, allocate, backfill"' + TIERS % ", enableHierarchy: true",
         'actions: "enqueue, allocate, backfill"' + TIERS % "",
         'actions: "enqueue, allocate, reclaim, backfill"' + TIERS % ", enableHierarchy: true",
         # votes after allocations: the levels' verdicts kept from the first enqueue must not be used
         'actions: "enqueue, allocate, enqueue, allocate"' + TIERS % ", enableHierarchy: true"]


@st.composite
def backlogs(draw: Any) -> list[dict]:
    objs: list[dict] = [node(f"n{i}", cpu=8, memory="32Gi", scalars={"nvidia.com/gpu": "2"})
                        for i in range(draw(st.integers(1, 3)))]
    objs.append(queue("root"))
    leaves: list[str] = []
    parents: list[str] = []
    for p in range(draw(st.integers(1, 3))):
        pname = f"p{p}"
        spec: dict[str, Any] = {"parent": "root"}
        if draw(st.booleans()):
            spec["capability"] = {"cpu": draw(st.sampled_from(["2", "4", "8"]))}
        if draw(st.booleans()):
            spec["deserved"] = {"cpu": draw(st.sampled_from(["2", "4"]))}
        objs.append(queue(pname, **spec))
        parents.append(pname)
        for c in range(draw(st.integers(1, 3))):
            cname = f"{pname}-l{c}"
            cspec: dict[str, Any] = {"parent": pname}
            if draw(st.integers(0, 2)) == 0:
                cspec["capability"] = {"cpu": draw(st.sampled_from(["1", "2", "3"])),
                                       "nvidia.com/gpu": draw(st.sampled_from(["1", "2"]))}
            if draw(st.integers(0, 5)) == 0:
                cspec["state"] = "Closed"
            if draw(st.integers(0, 3)) == 0:
                cspec["guarantee"] = {"cpu": "1"}
            objs.append(queue(cname, **cspec))
            leaves.append(cname)
    # mostly leaves; now and then a job in a parent queue (every queue decision is refused then)
    targets = leaves + (parents if draw(st.integers(0, 5)) == 0 else [])
    for g in range(draw(st.integers(1, 14))):
        q = draw(st.sampled_from(targets))
        size = draw(st.integers(1, 3))
        cpu = draw(st.sampled_from(["1", "2", "500m"]))
        gpu = draw(st.sampled_from([None, "1"]))
        phase = draw(st.sampled_from(["Pending", "Pending", "Inqueue", "Running"]))
        minres: dict[str, str] | None = {"cpu": str(size) if cpu != "500m" else f"{500 * size}m"}
        if gpu and minres is not None:
            minres["nvidia.com/gpu"] = str(size)
        if draw(st.integers(0, 9)) == 0:
            minres = None
        objs.append(podgroup(f"g{g:02d}", queue=q, min_member=size, phase=phase, min_resources=minres))
        running = phase == "Running"
        for t in range(size):
            extra: dict[str, Any] = {"scalars": {"nvidia.com/gpu": gpu}} if gpu else {}
            objs.append(pod(f"g{g:02d}-{t}", f"g{g:02d}", cpu=cpu, memory="1Gi",
                            node_name=f"n{t % 1}" if running else "", **extra))
    return objs


def _both(objs: list[dict], conf: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    monkeypatch.setattr(Session, "fast_enqueue_refusals", True)
    fast = cycle(objs, conf).to_json()
    monkeypatch.setattr(Session, "fast_enqueue_refusals", False)
    return fast, cycle(objs, conf).to_json()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=backlogs(), conf=st.sampled_from(CONFS))
def test_backlog_refusal_decides_as_the_votes(objs: list[dict], conf: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, votes = _both(objs, conf, monkeypatch)
    assert fast == votes


def _count_votes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The uids of the jobs capacity's JobEnqueueable vote is cast on, in order (every vote cast: none
    answered from the answers, K51, which tests/actions/test_enqueue_answered_votes.py covers)."""
    monkeypatch.setattr(enqueue, "answer_votes", False)
    return record_calls(monkeypatch, Admission, "job_enqueueable", lambda self, job: job.uid)


def test_a_full_cluster_refuses_the_backlog_without_votes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pending jobs that the root cannot admit (the cluster is taken): the shortcut refuses both,
    with the messages the votes give, and no vote is taken."""
    objs = [node("n0", cpu=4, memory="16Gi"), queue("root"), queue("a", parent="root"),
            queue("a1", parent="a"), queue("a2", parent="a"),
            podgroup("run", queue="a1", phase="Running", min_resources={"cpu": "4"}),
            pod("run-0", "run", cpu=4, node_name="n0"),
            podgroup("w1", queue="a1", phase="Pending", min_resources={"cpu": "1"}), pod("w1-0", "w1", cpu=1),
            podgroup("w2", queue="a2", phase="Pending", min_resources={"cpu": "2"}), pod("w2-0", "w2", cpu=2)]
    conf = CONFS[0]
    votes = _count_votes(monkeypatch)
    fast, slow = _both(objs, conf, monkeypatch)
    assert fast == slow
    assert votes == ["ns/w1", "ns/w2"]  # the votes: the second run only
    events = {e["object"]: e["message"] for e in fast["events"]}
    assert events["ns/w1"] == ("queue a1: queue resource quota insufficient (minResources + allocated + inqueue "
                               "- elastic): cpu 5 > realCapability 4 (short by 1)")
    assert events["ns/w2"].startswith("queue a (parent of a2): queue resource quota insufficient")
    assert "cpu 6 > realCapability 4 (short by 2)" in events["ns/w2"]


def test_the_rest_is_refused_once_the_admissible_job_is_voted(monkeypatch: pytest.MonkeyPatch) -> None:
    """One job fits as the session opens: it is voted (and admitted) in queue order; the job after it,
    refused at open and so after the admission too, is refused without its vote, with the message its
    vote gives (the admission counted)."""
    objs = [node("n0", cpu=4, memory="16Gi"), queue("root"), queue("a", parent="root"),
            queue("a1", parent="a"), queue("a2", parent="a"), queue("a3", parent="a"),
            podgroup("run", queue="a1", phase="Running", min_resources={"cpu": "2"}),
            pod("run-0", "run", cpu=2, node_name="n0"),
            podgroup("w1", queue="a2", phase="Pending", min_resources={"cpu": "1"}), pod("w1-0", "w1", cpu=1),
            podgroup("w2", queue="a3", phase="Pending", min_resources={"cpu": "3"}), pod("w2-0", "w2", cpu=3)]
    votes = _count_votes(monkeypatch)
    fast, slow = _both(objs, CONFS[0], monkeypatch)
    assert fast == slow
    assert votes == ["ns/w1", "ns/w1", "ns/w2"]  # the fast run votes w1 only
    assert fast["podgroups"]["ns/w1"] != "Pending"
    events = {e["object"]: e["message"] for e in fast["events"]}
    assert "cpu 6 > realCapability 4 (short by 2)" in events["ns/w2"]  # 2 running + 1 admitted + 3


def test_an_admission_moves_its_levels_verdicts() -> None:
    """Two jobs that each fit their parent as the session opens, but not both: the parent's verdict for
    their minResources, kept from the backlog test, is worked out again after the first admission."""
    objs = [node("n0", cpu=8, memory="16Gi"), queue("root"), queue("a", parent="root", capability={"cpu": "2"}),
            queue("a1", parent="a"), queue("a2", parent="a"),
            podgroup("w1", queue="a1", phase="Pending", min_resources={"cpu": "2"}), pod("w1-0", "w1", cpu=2),
            podgroup("w2", queue="a2", phase="Pending", min_resources={"cpu": "2"}), pod("w2-0", "w2", cpu=2)]
    fast = cycle(objs, CONFS[0]).to_json()
    assert fast["podgroups"]["ns/w1"] != "Pending"
    assert fast["podgroups"]["ns/w2"] == "Pending"
    events = {e["object"]: e["message"] for e in fast["events"]}
    assert events["ns/w2"].startswith("queue a (parent of a2): queue resource quota insufficient")
