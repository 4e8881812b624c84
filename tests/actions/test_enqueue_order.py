"""enqueue makes a whole queue's refusals before its first candidate at once, finding that candidate by
the job order's keys (docs/semantics.md K59, `enqueue.skip_refused`, actions/enqueue_order.py), and the
drain reads the queues' work by their pending lists (`enqueue.lists_as_work`) and the survey its
shares and work by C maps (`drain_subset.lean_survey`). Random backlogs of several jobs per leaf, with
priorities, creation times, ready and half-ready gangs and drf shares tied and untied, decide and explain
the same with the switches on and off, with and without why-pending texts, under the self-check (which
compares every skip with the pops by the session's comparison)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.actions import enqueue
from apportion.engine import open_session, run_session
from apportion.framework.conf import parse_conf
from apportion.plugins.capacity import drain_subset
from apportion.state import check
from session_steps import cycles_alike
from spying import record_calls

from k8s import cycle, node, pod, podgroup, priority_class, queue, snapshot

CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
"""
#: the same plugins, drf's order before gang's and priority's
CONF_DRF_FIRST = """actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: drf}, {name: gang}, {name: priority}, {name: conformance}]
- plugins: [{name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
"""
TIMES = ["2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"]


def switches(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """K59's switches on or off."""
    monkeypatch.setattr(enqueue, "skip_refused", on)
    monkeypatch.setattr(enqueue, "lists_as_work", on)
    monkeypatch.setattr(drain_subset, "lean_survey", on)


@st.composite
def crowded_leaves(draw: Any) -> list[dict]:
    """A two-level tree whose leaves hold several Pending jobs each, some under a capability only a few
    fit, of drawn priorities, creation times, running pods (a ready or half-ready gang, a drf share)."""
    objs: list[dict] = [node("n0", cpu=16, memory="64Gi"), queue("root"),
                        priority_class("low", 1), priority_class("high", 5)]
    leaves = []
    for p in range(draw(st.integers(1, 2))):
        objs.append(queue(f"p{p}", parent="root"))
        for c in range(draw(st.integers(1, 2))):
            name = f"p{p}-l{c}"
            spec: dict[str, Any] = {"parent": f"p{p}"}
            if draw(st.integers(0, 3)):
                spec["capability"] = {"cpu": draw(st.sampled_from(["2", "3", "5"]))}
            objs.append(queue(name, **spec))
            leaves.append(name)
    for g in range(draw(st.integers(3, 16))):
        q = draw(st.sampled_from(leaves))
        size = draw(st.integers(1, 3))
        running = draw(st.integers(0, size)) if draw(st.integers(0, 3)) == 0 else 0
        objs.append(podgroup(f"g{g:02d}", queue=q, min_member=size, phase="Pending",
                             min_resources={"cpu": str(draw(st.integers(1, 4)))},
                             priority_class=draw(st.sampled_from(["", "low", "high"])),
                             created=draw(st.sampled_from(TIMES))))
        for t in range(size):
            objs.append(pod(f"g{g:02d}-{t}", f"g{g:02d}", cpu=1, node_name="n0" if t < running else ""))
    return objs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(objs=crowded_leaves(), conf=st.sampled_from([CONF, CONF_DRF_FIRST]))
def test_skipped_refusals_decide_and_explain_as_the_pops(objs: list[dict], conf: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    cycles_alike(objs, conf, switches, monkeypatch)


def _phases(objs: list[dict], conf: str) -> list[tuple[str, str]]:
    ssn = open_session(snapshot(*objs), parse_conf(conf))
    ssn.why_pending = False
    run_session(ssn)
    return sorted((uid, job.phase.value) for uid, job in ssn.jobs.items())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(objs=crowded_leaves(), conf=st.sampled_from([CONF, CONF_DRF_FIRST]))
def test_skipped_refusals_without_texts(objs: list[dict], conf: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")
    switches(monkeypatch, True)
    fast = _phases(objs, conf)
    switches(monkeypatch, False)
    assert fast == _phases(objs, conf)


def test_a_queue_reaches_its_candidate_in_one_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    """One leaf with room for one small job: its three big jobs of higher priority go first in the job
    order and are refused; the skip reaches the small one at once, and all four are decided and
    explained as the pops decide and explain them."""
    objs = [node("n0", cpu=16, memory="64Gi"), queue("root"), queue("p", parent="root"),
            queue("a", parent="p", capability={"cpu": "2"}), priority_class("high", 5)]
    for g, (cpu, prio) in enumerate([("4", "high"), ("1", ""), ("3", "high"), ("5", "high")]):
        objs += [podgroup(f"g{g}", queue="a", phase="Pending", min_resources={"cpu": cpu}, priority_class=prio,
                          created=TIMES[0]), pod(f"g{g}-0", f"g{g}", cpu=1)]
    monkeypatch.setenv(check.ENV, "1")
    switches(monkeypatch, True)
    skips = record_calls(monkeypatch, enqueue, "first_candidate", lambda *a: len(a[0]))
    fast = cycle(objs, CONF).to_json()
    assert list(skips) == [4]
    monkeypatch.undo()
    monkeypatch.setenv(check.ENV, "1")
    switches(monkeypatch, False)
    slow = cycle(objs, CONF).to_json()
    assert fast == slow
