"""enqueue starts from the visited jobs (actions/enqueue.py `backlog_of`): on random backlogs, flat and as
a tree, before or after allocate has moved tasks, the queues it hands its picker (in order), each queue's
pending jobs and the backlog are those of the pass over every job (`backlog_reference`), and the whole
session decides and explains the same."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_job_visits_actions import _decide

from apportion.actions import enqueue
from apportion.framework.job_visits import JobVisits
from apportion.framework.session import Session

import k8s

GANG = ["priority", "gang", "conformance"]


def _conf(order: str, hierarchical: bool) -> Any:
    cap: dict[str, Any] = {"name": "capacity", "arguments": {"enableHierarchy": True}} if hierarchical else {
        "name": "capacity"}
    return k8s.conf(order, GANG, ["drf", "predicates", cap, "nodeorder"])


@st.composite
def backlogs(draw: Any) -> tuple[list[dict], bool]:
    """Queues (some jobs naming one that does not exist) holding running, admitted and Pending jobs whose
    names interleave across the queues, so a queue's first job is not its first Pending one."""
    hierarchical = draw(st.booleans())
    objs: list[dict] = [k8s.node(f"n{i}", cpu=8, memory="32Gi") for i in range(draw(st.integers(1, 3)))]
    names = [f"q{i}" for i in range(draw(st.integers(1, 5)))]
    if hierarchical:
        objs += [k8s.queue("root"), k8s.queue("pa", parent="root", deserved={"cpu": "8"}),
                 k8s.queue("pb", parent="root", deserved={"cpu": "8"})]
    for i, q in enumerate(names):
        spec: dict[str, Any] = {"deserved": {"cpu": draw(st.sampled_from(["2", "4", "8"]))}}
        if draw(st.integers(0, 3)) == 0:
            spec["capability"] = {"cpu": draw(st.sampled_from(["2", "6"]))}
        if hierarchical:
            spec["parent"] = "pa" if i % 2 else "pb"
        objs.append(k8s.queue(q, **spec))
    busy = [0] * 8
    for g in range(draw(st.integers(1, 14))):
        q = draw(st.sampled_from([*names, *names, "missing"]))
        size = draw(st.integers(1, 3))
        cpu = draw(st.sampled_from([1, 2, 4]))
        phase = draw(st.sampled_from(["Pending", "Pending", "Inqueue", "Running"]))
        name = f"g{draw(st.integers(0, 99)):02d}-{g}"
        mins = None if draw(st.integers(0, 5)) == 0 else {"cpu": str(size * cpu)}
        objs.append(k8s.podgroup(name, queue=q, min_member=size, phase=phase, min_resources=mins))
        for t in range(size):
            node = ""
            if phase == "Running" and busy[0] + cpu <= 8:
                busy[0] += cpu
                node = "n0"
            objs.append(k8s.pod(f"{name}-{t}", name, cpu=cpu, memory="1Gi", node_name=node))
    return objs, hierarchical


def _names(backlog: Any) -> tuple[list[str], list[tuple[str, list[str]]], list[str]]:
    """The backlog by name, taken when it is handed out (enqueue pops the pending lists)."""
    queues, pending, jobs = backlog
    return [q.name for q in queues], [(q, [j.uid for j in js]) for q, js in pending.items()], [j.uid for j in jobs]


ORDERS = ["enqueue, allocate, backfill", "allocate, enqueue, backfill", "enqueue, allocate, reclaim, backfill"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(case=backlogs(), order=st.sampled_from(ORDERS))
def test_the_backlog_from_the_visited_jobs_is_the_pass_over_every_job(
        case: tuple[list[dict], bool], order: str, monkeypatch: pytest.MonkeyPatch) -> None:
    objs, hierarchical = case
    conf = _conf(order, hierarchical)
    seen: list[tuple[Any, Any]] = []
    real = enqueue.backlog_of

    def both(ssn: Session) -> Any:
        fast = real(ssn)
        seen.append((_names(fast), _names(enqueue.backlog_reference(ssn))))
        return fast

    monkeypatch.setattr(enqueue, "backlog_of", both)
    monkeypatch.setattr(JobVisits, "enabled", True)
    fast = _decide(objs, conf, monkeypatch)
    assert len(seen) == 1
    assert seen[0][0] == seen[0][1]
    monkeypatch.setattr(JobVisits, "enabled", False)
    full = _decide(objs, conf, monkeypatch)
    assert fast == full


def test_a_queue_whose_first_job_is_quiet_keeps_its_place() -> None:
    """q1's first job (a) runs whole, quiet, and is not visited; q0's first job (b) waits. The queues go
    to the picker as the pass over every job orders them: q1 (job a) before q0 (job b)."""
    objs = [k8s.node("n0", cpu=8), k8s.queue("q0", deserved={"cpu": "4"}), k8s.queue("q1", deserved={"cpu": "4"}),
            k8s.podgroup("a", queue="q1", phase="Running"), k8s.pod("a-0", "a", cpu=1, node_name="n0"),
            k8s.podgroup("b", queue="q0", phase="Pending", min_resources={"cpu": "1"}), k8s.pod("b-0", "b", cpu=1),
            k8s.podgroup("c", queue="q1", phase="Pending", min_resources={"cpu": "1"}), k8s.pod("c-0", "c", cpu=1)]
    ssn = k8s.session(objs, _conf("enqueue, allocate", False))
    assert ssn.visits.active and "ns/a" not in ssn.visits.visit()
    queues, pending, backlog = enqueue.backlog_of(ssn)
    assert [q.name for q in queues] == ["q1", "q0"]
    assert {q: [j.name for j in js] for q, js in pending.items()} == {"q1": ["c"], "q0": ["b"]}
    assert [j.name for j in backlog] == ["b", "c"]
