"""The actions pass over quiet jobs (framework/job_visits.py; reclaim lists their queues from each queue's
first quiet job): on random contended clusters, flat and as a tree, whatever the actions' order, the
session decides and explains exactly what the visit of every job gives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_reclaim_repeats import _conf, contended

from apportion.framework.job_visits import JobVisits
from apportion.framework.session import Session

from k8s import cycle

ORDERS = ["enqueue, allocate, reclaim, backfill", "enqueue, reclaim, allocate, backfill",
          "enqueue, allocate, preempt, reclaim, backfill"]


def _decide(objs: list[dict], conf: str, monkeypatch: pytest.MonkeyPatch,
            ) -> tuple[str, dict[str, list[str]], list[list[str]]]:
    """The result (as JSON text: the order counts too), the explanations, and the queues each action
    handed its picker, in order (reclaim lists a queue with a quiet job from that job without visiting
    it: the list must be the same)."""
    listed: list[list[str]] = []
    real = Session.queue_picker

    def spy(self: Session, queues: list[Any]) -> Any:
        listed.append([q.name for q in queues])
        return real(self, queues)

    monkeypatch.setattr(Session, "queue_picker", spy)
    result = cycle(objs, conf)
    monkeypatch.setattr(Session, "queue_picker", real)
    assert result.session is not None
    return json.dumps(result.to_json()), result.session.explanations, listed


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(case=contended(), order=st.sampled_from(ORDERS), guards=st.sampled_from(["", "gangAtomicVictims: true"]))
def test_passing_over_quiet_jobs_decides_and_explains_as_visiting_every_job(
        case: tuple[list[dict], bool], order: str, guards: str, monkeypatch: pytest.MonkeyPatch) -> None:
    objs, hierarchical = case
    conf = _conf(hierarchical, guards).replace('"enqueue, allocate, reclaim, backfill"', f'"{order}"')
    monkeypatch.setattr(JobVisits, "enabled", True)
    fast = _decide(objs, conf, monkeypatch)
    monkeypatch.setattr(JobVisits, "enabled", False)
    full = _decide(objs, conf, monkeypatch)
    assert fast[0] == full[0]  # as JSON text: in the same order too (pipelined tasks, binds)
    assert fast[1] == full[1]
    assert list(fast[1]) == list(full[1])
    assert fast[2] == full[2]
