"""enqueue refuses a whole queue at its first step when the picker's drain works on one queue until it
has no work (capacity's tree picker, `DrainPicker.drains_whole_queues`) and the answers, with no
admission since, would admit none of its jobs (actions/enqueue.py `_Votes.cast`): the session decides,
explains and reports what the votes one job at a time decide, and the job order is not asked for those
queues."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.actions import enqueue
from apportion.plugins.capacity.drain_subset import DrainPicker
from plugins.capacity.test_capacity_backlog import CONFS, _both, backlogs
from spying import record_calls

from k8s import cycle, node, pod, podgroup, queue


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=backlogs(), conf=st.sampled_from(CONFS), share=st.sampled_from([0.0, 0.5, 1.0]))
def test_whole_queues_refused_decide_as_one_job_at_a_time(objs: list[dict], conf: str, share: float,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Random trees and backlogs: with the whole-queue refusals, without them (every job popped in job
    order), and the votes job by job give the same cycle."""
    monkeypatch.setattr(enqueue._Votes, "ask_again_share", share)
    fast, votes = _both(objs, conf, monkeypatch)
    monkeypatch.setattr(DrainPicker, "drains_whole_queues", False)
    one_by_one, _ = _both(objs, conf, monkeypatch)
    assert fast == votes
    assert one_by_one == votes


def _objs() -> list[dict]:
    """Leaf c0 (under z, capability 1 cpu) with three jobs z refuses; leaf d0 (under y) with one job that
    fits. The leaves tie on their parents' keys and c0 comes first by name, so c0 is drained first."""
    return [node("n0", cpu=16, memory="64Gi"), queue("root"),
            queue("z", parent="root", capability={"cpu": "1"}), queue("c0", parent="z"),
            queue("y", parent="root", capability={"cpu": "4"}), queue("d0", parent="y"),
            *(o for i in range(3) for o in (podgroup(f"x{i}", queue="c0", phase="Pending", min_resources={"cpu": "2"}),
                                            pod(f"x{i}-0", f"x{i}", cpu=2))),
            podgroup("w", queue="d0", phase="Pending", min_resources={"cpu": "1"}), pod("w-0", "w", cpu=1)]


def test_a_queue_the_answers_refuse_is_refused_without_the_job_order(monkeypatch: pytest.MonkeyPatch) -> None:
    pops = record_calls(monkeypatch, enqueue, "pop_best_index", lambda jobs, compare: [j.uid for j in jobs])
    fast = cycle(_objs(), CONFS[0]).to_json()
    assert pops == [["ns/w"]]  # c0's three jobs are not popped
    monkeypatch.setattr(DrainPicker, "drains_whole_queues", False)
    del pops[:]
    one_by_one = cycle(_objs(), CONFS[0]).to_json()
    assert len(pops) == 4 and pops[0] == ["ns/x0", "ns/x1", "ns/x2"]  # c0 first, then d0
    assert fast == one_by_one
    assert fast["podgroups"]["ns/w"] != "Pending"
    events = {e["object"]: e["message"] for e in fast["events"]}
    for i in range(3):
        # the leaf's realCapability is its parent's capability: refused at c0 (w's admission is elsewhere)
        assert events[f"ns/x{i}"] == ("queue c0: queue resource quota insufficient (minResources + allocated + "
                                      "inqueue - elastic): cpu 2 > realCapability 1 (short by 1)")
