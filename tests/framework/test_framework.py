"""Tier and switch combination rules of the session dispatchers (§4.2), with hand-built plugins."""

from __future__ import annotations

import pytest

from apportion.engine import open_session
from apportion.framework import extension as ep
from apportion.framework import interface
from apportion.framework.conf import build_conf
from apportion.framework.interface import Plugin

from k8s import node, pod, podgroup, queue, session, snapshot


def _install(monkeypatch, name, setup):
    class Fake(Plugin):
        def on_session_open(self, ssn):
            setup(ssn, name)

    Fake.name = name
    # register_plugin's table, patched so that the fake is gone after the test
    monkeypatch.setitem(interface._plugins.entries, name, Fake)


def _objs():
    objs = [node("n1"), queue("q"), podgroup("a", "q"), podgroup("b", "q")]
    objs += [pod("a-0", "a", node_name="n1"), pod("b-0", "b", node_name="n1"), pod("c-0", "a")]
    return objs


def _victim_plugins(monkeypatch, answers):
    for name, answer in answers.items():
        def setup(ssn, n, answer=answer):
            def fn(evictor, cands):
                if answer is None:
                    return [], ep.ABSTAIN
                return [c for c in cands if c.name in answer], ep.PERMIT
            ssn.add_fn(ep.PREEMPTABLE, n, fn)
        _install(monkeypatch, name, setup)


def test_victims_empty_intersection_restarts_the_list(monkeypatch):
    _victim_plugins(monkeypatch, {"p1": {"a-0"}, "p2": {"b-0"}, "p3": {"a-0", "b-0"}})
    ssn = open_session(snapshot(*_objs()), build_conf("preempt", [["p1", "p2", "p3"]]))
    cands = [t for j in ssn.jobs.values() for t in j.tasks.values() if t.node_name]
    evictor = ssn.jobs["ns/a"].tasks["ns/c-0"]
    assert sorted(v.name for v in ssn.preemptable(evictor, cands)) == ["a-0", "b-0"]


def test_victims_intersection_and_empty_answer_hands_over_to_next_tier(monkeypatch):
    _victim_plugins(monkeypatch, {"p1": {"a-0", "b-0"}, "p2": {"b-0"}, "p3": set(), "p4": {"a-0"}, "p5": None})
    cands_of = lambda ssn: [t for j in ssn.jobs.values() for t in j.tasks.values() if t.node_name]  # noqa: E731
    ssn = open_session(snapshot(*_objs()), build_conf("preempt", [["p1", "p2"]]))
    ev = ssn.jobs["ns/a"].tasks["ns/c-0"]
    assert [v.name for v in ssn.preemptable(ev, cands_of(ssn))] == ["b-0"]
    ssn = open_session(snapshot(*_objs()), build_conf("preempt", [["p1", "p3", "p2"], ["p4"]]))
    assert [v.name for v in ssn.preemptable(ev, cands_of(ssn))] == ["a-0"]
    ssn = open_session(snapshot(*_objs()), build_conf("preempt", [["p5"], ["p3"]]))
    assert ssn.preemptable(ev, cands_of(ssn)) == []


def test_enqueue_vote_permit_ends_at_tier_boundary(monkeypatch):
    votes = {"yes": ep.PERMIT, "no": ep.REJECT, "pass": ep.ABSTAIN}
    for name, v in votes.items():
        _install(monkeypatch, name, lambda ssn, n, v=v: ssn.add_fn(ep.JOB_ENQUEUEABLE, n, lambda job: v))
    job_of = lambda ssn: ssn.jobs["ns/a"]  # noqa: E731
    for tiers, expect in [([["yes"], ["no"]], True), ([["yes", "no"]], False), ([["pass"], ["no"]], False),
                          ([["pass"]], True), ([["pass", "yes"], ["no"]], True)]:
        ssn = open_session(snapshot(*_objs()), build_conf("enqueue", tiers))
        assert ssn.job_enqueueable(job_of(ssn)) is expect, tiers


def test_job_starving_first_tier_with_a_function_decides(monkeypatch):
    _install(monkeypatch, "t", lambda ssn, n: ssn.add_fn(ep.JOB_STARVING, n, lambda job: True))
    _install(monkeypatch, "f", lambda ssn, n: ssn.add_fn(ep.JOB_STARVING, n, lambda job: False))
    for tiers, expect in [([["t"], ["f"]], True), ([["t", "f"]], False), ([["f"], ["t"]], False)]:
        ssn = open_session(snapshot(*_objs()), build_conf("reclaim", tiers))
        assert ssn.job_starving(ssn.jobs["ns/a"]) is expect
    ssn = open_session(snapshot(*_objs()), build_conf("reclaim", [[{"name": "gang", "enableJobStarving": False}]]))
    assert ssn.job_starving(ssn.jobs["ns/a"]) is False  # nobody starves without a starving function


def test_switch_off_silences_one_point_only():
    objs = _objs()
    conf = build_conf("allocate", [[{"name": "gang", "enableJobReady": False}]])
    ssn = open_session(snapshot(*objs), conf)
    job = ssn.jobs["ns/a"]
    job.min_available = 5
    assert ssn.job_ready(job)  # ready switched off -> no answers -> ready
    assert ssn.job_pipelined(job) is False  # the pipelined point still answers


def test_simulate_hooks_run_when_either_switch_is_on(monkeypatch):
    calls = []
    _install(monkeypatch, "sim", lambda ssn, n: ssn.add_fn(ep.SIMULATE_ADD_TASK, n, lambda s, t, r: calls.append(n)))
    for switches, expect in [({}, 1), ({"enablePreemptable": False}, 1),
                             ({"enablePreemptable": False, "enabledAllocatable": False}, 0)]:
        calls.clear()
        ssn = open_session(snapshot(*_objs()), build_conf("preempt", [[{"name": "sim", **switches}]]))
        ssn.simulate_add_task({}, ssn.jobs["ns/a"].tasks["ns/c-0"], 0)
        assert len(calls) == expect


def test_statement_discard_restores_node_and_job_state():
    from apportion.framework.statement import Statement

    ssn = session(_objs())
    idle_before = ssn.table.idle.copy()
    task = ssn.jobs["ns/a"].tasks["ns/c-0"]
    victim = ssn.jobs["ns/b"].tasks["ns/b-0"]
    st = Statement(ssn)
    st.evict(victim, "preempt")
    st.allocate(task, 0)
    assert victim.status.value == "Releasing" and task.status.value == "Allocated"
    t = ssn.table
    assert (t.future == t.idle + t.releasing - t.pipelined).all()
    st.discard()
    assert victim.status.value == "Running" and task.status.value == "Pending"
    assert (ssn.table.idle == idle_before).all()
    assert (t.future == t.idle + t.releasing - t.pipelined).all()
    assert ssn.jobs["ns/a"].allocated.cpu == 1000


@pytest.mark.parametrize("name", ["a-worker-2", "a-worker-10"])
def test_default_task_order_by_name_index(name):
    from apportion.cluster.model import default_task_compare
    ssn = session([node("n1"), queue("q"), podgroup("a", "q"), pod("a-worker-2", "a"), pod("a-worker-10", "a")])
    t = ssn.jobs["ns/a"].tasks
    assert default_task_compare(t["ns/a-worker-2"], t["ns/a-worker-10"]) < 0
