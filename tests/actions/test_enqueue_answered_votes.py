"""enqueue answers a vote from the votes' answers where they give it (docs/semantics.md K51,
`enqueue.answer_votes`): a candidate of answers no admission moved since is admitted without its vote;
in a session that makes no why-pending texts, a job voted after an admission is answered by its
bucket's answer asked then (`BucketAnswers.admits`), and the answers asked again after an admission
are taken over the queues with a candidate only (`enqueue.hot_queues`). Whole cycles over capacity's random backlogs (with
the texts: every explanation compared) and random events and sessions on one cache, with and without
texts, decide the same with the switch on and off, under the self-check (which compares every answered
vote with the answers of `enqueue_answers`)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_enqueue_by_bucket import a_crowd
from test_enqueue_carried import CONF, _base, a_step

from apportion.actions import enqueue
from apportion.plugins.capacity.admission import Admission
from apportion.state import check
from plugins.capacity.test_capacity_backlog import CONFS, backlogs
from session_steps import cycles_alike, play_texts
from spying import record_calls

from k8s import cycle, node, pod, podgroup, queue


def switches(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """K51's switches on or off."""
    monkeypatch.setattr(enqueue, "answer_votes", on)
    monkeypatch.setattr(enqueue, "hot_queues", on)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(objs=backlogs(), conf=st.sampled_from(CONFS))
def test_answered_votes_decide_and_explain_as_the_votes(objs: list[dict], conf: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cycles_alike(objs, conf, switches, monkeypatch)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(a_step(), a_crowd()), min_size=1, max_size=25),
       st.lists(st.booleans(), min_size=1, max_size=3))
def test_answered_votes_over_sessions(monkeypatch: pytest.MonkeyPatch, steps: list, texts: list[bool]) -> None:
    monkeypatch.setenv(check.ENV, "1")
    switches(monkeypatch, True)
    fast = play_texts(steps, _base, CONF, texts)
    switches(monkeypatch, False)
    assert fast == play_texts(steps, _base, CONF, texts)


def _run(objs: list[dict], on: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[str]]:
    monkeypatch.setattr(enqueue, "answer_votes", on)
    votes = record_calls(monkeypatch, Admission, "job_enqueueable", lambda self, job: job.uid)
    out = cycle(objs, CONFS[0]).to_json()
    monkeypatch.undo()
    return out, list(votes)


def test_a_candidate_of_answers_that_hold_is_not_voted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three leaves in queue order: the first two's jobs do not fit their leaf, the third's does. With the
    answers as the session opened, the third's job is admitted without a vote; every vote cast without
    the switch gives the same decisions and explanations."""
    objs = [node("n0", cpu=8, memory="32Gi"), queue("root"), queue("a", parent="root"),
            queue("a1", parent="a", capability={"cpu": "1"}), queue("a2", parent="a", capability={"cpu": "1"}),
            queue("a3", parent="a"),
            podgroup("w1", queue="a1", phase="Pending", min_resources={"cpu": "2"}), pod("w1-0", "w1", cpu=2),
            podgroup("w2", queue="a2", phase="Pending", min_resources={"cpu": "2"}), pod("w2-0", "w2", cpu=2),
            podgroup("w3", queue="a3", phase="Pending", min_resources={"cpu": "2"}), pod("w3-0", "w3", cpu=2)]
    fast, fast_votes = _run(objs, True, monkeypatch)
    slow, slow_votes = _run(objs, False, monkeypatch)
    assert fast == slow
    assert fast_votes == [] and slow_votes == ["ns/w3"]
    assert fast["podgroups"]["ns/w3"] != "Pending"


def test_a_vote_after_an_admission_is_cast_where_texts_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two candidates and a refused job between them, no asking again: after the first admission the
    session (which makes the why-pending texts) votes the jobs left, and explains as the votes do."""
    objs = [node("n0", cpu=8, memory="32Gi"), queue("root"), queue("a", parent="root", capability={"cpu": "4"}),
            queue("a1", parent="a"), queue("a2", parent="a"), queue("a3", parent="a"),
            podgroup("x", queue="a1", phase="Pending", min_resources={"cpu": "1"}), pod("x-0", "x", cpu=1),
            podgroup("z", queue="a2", phase="Pending", min_resources={"cpu": "3"}), pod("z-0", "z", cpu=3),
            podgroup("y", queue="a3", phase="Pending", min_resources={"cpu": "1"}), pod("y-0", "y", cpu=1),
            podgroup("r", queue="a3", phase="Running", min_resources={"cpu": "2"}),
            pod("r-0", "r", cpu=2, node_name="n0")]
    monkeypatch.setattr(enqueue._Votes, "ask_again_share", 0.0)
    fast, fast_votes = _run(objs, True, monkeypatch)
    monkeypatch.setattr(enqueue._Votes, "ask_again_share", 0.0)
    slow, slow_votes = _run(objs, False, monkeypatch)
    assert fast == slow
    assert slow_votes == ["ns/x", "ns/z", "ns/y"]
    assert fast_votes == ["ns/z", "ns/y"]  # x: a candidate of answers that hold
    events = {e["object"]: e["message"] for e in fast["events"]}
    assert "cpu 6 > realCapability 4 (short by 2)" in events["ns/z"]
