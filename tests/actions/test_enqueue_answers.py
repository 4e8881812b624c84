"""enqueue with the votes' answers known (Dispatch.enqueue_answers, capacity's enqueue_answers and its
buckets kept in the memo): a job the answers refuse is refused with their explanation without its vote
until a vote admits, and the sessions decide, explain and report what the votes job by job decide,
session after session over a cache whose jobs change queue and minResources; the answers are each
job's own vote's, and the shortcut is taken."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.actions import enqueue
from apportion.framework.conf import parse_conf
from apportion.framework.session import Session
from apportion.plugins.capacity.admission import Admission
from apportion.plugins.capacity.buckets import Buckets
from apportion.resources import Resource
from apportion.state import check
from apportion.state.cache import SchedulerCache
from framework.test_closing import START, decided_session, step, twin_sessions
from plugins.capacity.test_capacity_backlog import CONFS as CYCLE_CONFS
from plugins.capacity.test_capacity_backlog import _both, _count_votes, backlogs

import k8s

GANG = ["priority", "gang", "conformance"]
CONFS = {
    "tree": k8s.conf("enqueue, allocate, backfill", GANG,
                     ["drf", "predicates", {"name": "capacity", "enableHierarchy": True}, "nodeorder"]),
    "flat": k8s.conf("enqueue, allocate, backfill", GANG, ["drf", "predicates", "capacity", "nodeorder"]),
    "tree, enqueue twice": k8s.conf("enqueue, allocate, enqueue, backfill", GANG,
                                    ["drf", "predicates", {"name": "capacity", "enableHierarchy": True},
                                     "nodeorder"]),
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(conf=st.sampled_from(sorted(CONFS)), steps=st.lists(step, min_size=1, max_size=30))
def test_sessions_with_the_answers_decide_as_the_votes(conf: str, steps: list,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Twin caches, one session after another: the answers (their buckets kept in the memo while jobs
    change queue, minResources and phase) against the votes job by job, with the self-check on."""
    monkeypatch.setenv(check.ENV, "1")

    def session(fast: bool, cache: SchedulerCache, sid: str, _: Any) -> Any:
        monkeypatch.setattr(Session, "fast_enqueue_refusals", fast)
        return decided_session(cache, CONFS[conf], sid)

    twin_sessions(START, steps, session, sort_keys=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objs=backlogs(), conf=st.sampled_from(CYCLE_CONFS), seed=st.randoms(use_true_random=False))
def test_the_answers_are_each_jobs_vote(objs: list[dict], conf: str, seed: Any) -> None:
    """Over one opened session, the answers for the backlog (in any order, asked twice: the second
    time from the buckets kept) are, job by job, what capacity's vote answers and explains."""
    ssn = k8s.session(objs, parse_conf(conf))
    try:
        plugin = next(p for _, p in ssn.plugins if isinstance(p, Admission))
        jobs = [j for j in ssn.jobs.values() if j.is_pending()]
        seed.shuffle(jobs)
        for _ in range(2):
            answers = plugin.enqueue_answers(jobs)
            for job, why in zip(jobs, answers, strict=True):
                ssn.explanations.clear()
                ssn.fast_enqueue_refusals = False
                try:
                    voted = plugin.job_enqueueable(job)
                finally:
                    del ssn.fast_enqueue_refusals
                assert (why is None) == (voted >= 0)
                assert ssn.explanations.get(job.uid, []) == ([] if why is None else [why])
    finally:
        ssn.release()


def test_a_refusal_after_an_admission_is_voted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two candidates with a refused job between them in queue order (the last leaf runs a job, so it
    comes last), and no asking again until the
    candidates run out: the refused job, voted after the first admission moved its parent, is voted
    (its answer's explanation no longer holds) and says what its vote says."""
    objs = [k8s.node("n0", cpu=8, memory="32Gi"), k8s.queue("root"), k8s.queue("a", parent="root", capability={"cpu": "4"}),
            k8s.queue("a1", parent="a"), k8s.queue("a2", parent="a"), k8s.queue("a3", parent="a"),
            k8s.podgroup("x", queue="a1", phase="Pending", min_resources={"cpu": "1"}), k8s.pod("x-0", "x", cpu=1),
            k8s.podgroup("z", queue="a2", phase="Pending", min_resources={"cpu": "3"}), k8s.pod("z-0", "z", cpu=3),
            k8s.podgroup("y", queue="a3", phase="Pending", min_resources={"cpu": "1"}), k8s.pod("y-0", "y", cpu=1),
            k8s.podgroup("r", queue="a3", phase="Running", min_resources={"cpu": "2"}),
            k8s.pod("r-0", "r", cpu=2, node_name="n0")]
    monkeypatch.setattr(enqueue._Votes, "ask_again_share", 0.0)
    votes = _count_votes(monkeypatch)
    fast, slow = _both(objs, CYCLE_CONFS[0], monkeypatch)
    assert fast == slow
    assert votes[-3:] == ["ns/x", "ns/z", "ns/y"]  # the run job by job: the queue order
    assert votes[:-3] == ["ns/x", "ns/z", "ns/y"]
    events = {e["object"]: e["message"] for e in fast["events"]}
    assert events["ns/z"].startswith("queue a (parent of a2)")
    assert "cpu 6 > realCapability 4 (short by 2)" in events["ns/z"]  # x's admission counted


def test_jobs_refused_before_the_admission_are_not_voted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three leaves in queue order: the first two's jobs do not fit their leaf, the third's does. The
    votes go to the third leaf's job only; the two refused before it are refused with their answers'
    explanations, which are their votes' (the run job by job says the same)."""
    objs = [k8s.node("n0", cpu=8, memory="32Gi"), k8s.queue("root"),
            k8s.queue("a", parent="root"),
            k8s.queue("a1", parent="a", capability={"cpu": "1"}), k8s.queue("a2", parent="a", capability={"cpu": "1"}),
            k8s.queue("a3", parent="a"),
            k8s.podgroup("w1", queue="a1", phase="Pending", min_resources={"cpu": "2"}), k8s.pod("w1-0", "w1", cpu=2),
            k8s.podgroup("w2", queue="a2", phase="Pending", min_resources={"cpu": "2"}), k8s.pod("w2-0", "w2", cpu=2),
            k8s.podgroup("w3", queue="a3", phase="Pending", min_resources={"cpu": "2"}), k8s.pod("w3-0", "w3", cpu=2)]
    votes = _count_votes(monkeypatch)
    fast, slow = _both(objs, CYCLE_CONFS[0], monkeypatch)
    assert fast == slow
    assert votes[-3:] == ["ns/w1", "ns/w2", "ns/w3"]  # the run job by job: the queue order
    assert votes[:-3] == ["ns/w3"]  # the run with the answers
    assert fast["podgroups"]["ns/w3"] != "Pending"
    events = {e["object"]: e["message"] for e in fast["events"]}
    assert events["ns/w1"].startswith("queue a1: queue resource quota insufficient")
    assert events["ns/w2"].startswith("queue a2: queue resource quota insufficient")


def test_a_job_is_put_in_its_bucket_again_when_it_changes() -> None:
    """A bucket is a queue and a minResources by value; a job whose minResources object is replaced
    (even by an equal one) or whose queue moves is looked up again, and what is kept is dropped once
    it far outgrows the session's jobs."""
    b = Buckets()
    one, same, other = Resource(cpu=1000.0), Resource(cpu=1000.0), Resource(cpu=2000.0)
    assert b.bucket("a", one) == b.bucket("a", same) == 0
    assert b.bucket("a", other) == 1 and b.bucket("b", one) == 2 and b.bucket("a", None) == 3
    assert b.info[0][:2] == ("a", (1000.0, 0.0, ())) and b.info[0][2] is not one
    b.of_job["j"] = (one, "a", 0)
    b.forget_gone(jobs=10)
    assert b.of_job
    for i in range(2000):
        b.bucket(f"q{i}", one)
    b.forget_gone(jobs=10)
    assert not b.of_job and not b.ids and not b.info
