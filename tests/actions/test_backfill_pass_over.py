"""backfill passes over jobs without a pending or pipelined best-effort task without visiting their
tasks: whole sessions (reclaim pipelining tasks, best-effort pods in running, pending and invalid gangs)
decide the same with the visit of every job."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.actions import backfill

from k8s import conf, cycle, node, pod, podgroup, queue

CONF = conf("enqueue, allocate, reclaim, backfill", ["priority", "gang", "conformance"],
            ["drf", "predicates", "proportion", "nodeorder"])


@st.composite
def clusters(draw: Any) -> list[dict]:
    objs: list[dict] = [node(f"n{i}", cpu=draw(st.sampled_from([2, 4])), pods=draw(st.sampled_from([3, 6])))
                        for i in range(draw(st.integers(1, 3)))]
    objs += [queue("q0"), queue("q1", weight=draw(st.integers(1, 3)))]
    for g in range(draw(st.integers(1, 6))):
        size = draw(st.integers(1, 3))
        running = draw(st.booleans())
        objs.append(podgroup(f"g{g}", queue=draw(st.sampled_from(["q0", "q1"])), min_member=draw(st.integers(1, size + 1)),
                             phase="Running" if running else draw(st.sampled_from(["Pending", "Inqueue"]))))
        for t in range(size):
            best_effort = draw(st.integers(0, 2)) == 0
            placed = running and draw(st.booleans())
            objs.append(pod(f"g{g}-{t}", f"g{g}", cpu=0 if best_effort else draw(st.sampled_from([1, 2])),
                            memory="" if best_effort else "1Gi", node_name="n0" if placed else ""))
    return objs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=clusters())
def test_passing_over_decides_as_visiting_every_job(objs: list[dict], monkeypatch: pytest.MonkeyPatch) -> None:
    fast = cycle(objs, CONF)
    monkeypatch.setattr(backfill, "PASS_OVER_JOBS_WITHOUT_BEST_EFFORT", False)
    full = cycle(objs, CONF)
    assert fast.to_json() == full.to_json() and fast.warnings == full.warnings
