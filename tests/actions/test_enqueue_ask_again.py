"""enqueue asks the backlog test again after an admission when the candidates left are few beside the
rest of the backlog (actions/enqueue.py `_Votes`): whenever it asks again (never, as it does, after
every admission), the session decides, explains and reports what the votes job by job in queue order
do (capacity's random backlogs of tests/plugins/capacity/test_capacity_backlog.py); and an admission
that takes the room the other candidates wanted ends the votes there."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.actions import enqueue
from plugins.capacity.test_capacity_backlog import CONFS, _both, _count_votes, backlogs

from k8s import node, pod, podgroup, queue


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=backlogs(), conf=st.sampled_from(CONFS), share=st.sampled_from([0.0, 0.5, 2.0]))
def test_asking_again_decides_as_the_votes(objs: list[dict], conf: str, share: float,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(enqueue._Votes, "ask_again_share", share)
    monkeypatch.setattr(enqueue._Votes, "ask_again_budget", 10.0**9)
    fast, votes = _both(objs, conf, monkeypatch)
    assert fast == votes


def test_an_admission_that_takes_the_room_ends_the_votes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two jobs that each fit their parent as the session opens, but not both, with jobs refused at open
    in the queues between them: after the first admission the backlog is asked again, refuses the rest
    whole (the other candidate too), and no further vote is cast; what is decided and said is what the
    votes job by job decide and say."""
    objs = [node("n0", cpu=16, memory="64Gi"), queue("root"), queue("a", parent="root", capability={"cpu": "2"}),
            queue("a1", parent="a"), queue("a9", parent="a"), queue("b", parent="root", capability={"cpu": "1"}),
            *(queue(f"b{i}", parent="b") for i in range(4)),
            podgroup("w1", queue="a1", phase="Pending", min_resources={"cpu": "2"}), pod("w1-0", "w1", cpu=2),
            *(o for i in range(4) for o in (podgroup(f"x{i}", queue=f"b{i}", phase="Pending",
                                                     min_resources={"cpu": "3"}), pod(f"x{i}-0", f"x{i}", cpu=3))),
            podgroup("w2", queue="a9", phase="Pending", min_resources={"cpu": "2"}), pod("w2-0", "w2", cpu=2)]
    monkeypatch.setattr(enqueue._Votes, "ask_again_share", 1.0)
    votes = _count_votes(monkeypatch)
    fast, slow = _both(objs, CONFS[0], monkeypatch)
    assert fast == slow
    fast_votes = votes[:len(votes) - 6]
    assert sorted(votes[len(fast_votes):]) == ["ns/w1", "ns/w2", *(f"ns/x{i}" for i in range(4))]
    assert "ns/w1" in fast_votes and "ns/w2" not in fast_votes and len(fast_votes) < 6
    assert fast["podgroups"]["ns/w1"] != "Pending" and fast["podgroups"]["ns/w2"] == "Pending"
