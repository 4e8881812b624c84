"""capacity's ledger taking jobs in by differences (plugins/capacity/ledger.py `LEAN_ADMIT`, docs/semantics.md
K57), a job with Pending tasks charged without a JobContribution (charged.py `LEAN_PENDING`) and drf's sum
and share kept across a phase move (drf.py `ACROSS_PHASE`): against the references (all three switches
off), over random jobs arriving, starting, losing a task and leaving, in tree and flat mode: the same
session outcome, the same ledger (every queue's integer sums, members, listers and first listers, and
the attributes built from them) after every session; the self-checks run throughout."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ledger_steps import TREE_LEAVES, Jobs, apply_job_step, attributes, job_steps, shrink, tree_cluster

from apportion.cluster.model import JobInfo, PodGroupPhase, TaskInfo, TaskStatus
from apportion.engine import run_session
from apportion.framework.conf import parse_conf
from apportion.framework.session import Session
from apportion.plugins import drf
from apportion.plugins.capacity import charged
from apportion.plugins.capacity import ledger as ledger_module
from apportion.plugins.capacity.charged import charged_amounts, job_amounts
from apportion.plugins.capacity.flat_ledger import FLAT_LEDGER_MEMO
from apportion.plugins.capacity.ledger import FIELDS, LEDGER_MEMO, Ledger
from apportion.plugins.queue_common import _contribution
from apportion.resources import Resource
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, WatchEvent

TIERS = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity%s}, {name: nodeorder}]
"""
MODES = {"tree": (parse_conf(TIERS % ", enableHierarchy: true"), LEDGER_MEMO),
         "flat": (parse_conf(TIERS % ""), FLAT_LEDGER_MEMO)}

step = st.one_of(*job_steps(TREE_LEAVES), st.tuples(st.just("shrink"), st.integers(0, 50)),
                 st.tuples(st.just("shrink"), st.integers(0, 50)))


def sums_of(ledger: Ledger) -> dict[str, list[tuple[Any, ...]]]:
    """Every queue's sums as the ledger holds them, with each name's first lister (the order a sum
    lists its names in aside: nothing reads it, a resource built from a sum orders them by first lister,
    and the new jobs counted in together, `BULK_NEW`, may list them in another)."""
    return {q: [(s.cpu, s.memory, dict(s.scalars), s.members, dict(s.listers),
                 {n: s.first_lister(n) for n in s.listers}) for s in sums] for q, sums in sorted(ledger.sums.items())}


def _switches(lean: bool) -> list[Any]:
    return [mock.patch.object(ledger_module, "LEAN_ADMIT", lean), mock.patch.object(charged, "LEAN_PENDING", lean),
            mock.patch.object(drf, "ACROSS_PHASE", lean), mock.patch.object(ledger_module, "BULK_NEW", lean)]


@pytest.mark.parametrize("mode", sorted(MODES))
@settings(max_examples=12, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=20))
def test_lean_ledger_is_the_reference(mode: str, steps: list[tuple[str, Any]]) -> None:
    conf, memo_key = MODES[mode]
    caches = [SchedulerCache(report=lambda line: None) for _ in range(2)]
    for cache in caches:
        for o in tree_cluster():
            cache.apply(WatchEvent(ADDED, o))
    memos: list[dict[str, Any]] = [{}, {}]
    jobs: list[Jobs] = [{}, {}]
    with mock.patch.object(check, "enabled", lambda: True):
        for n, (kind, arg) in enumerate([*steps, ("session", 0)]):
            outs = []
            for way, cache in enumerate(caches):
                if kind == "shrink":
                    shrink(cache, jobs[way], arg)
                else:
                    apply_job_step(cache, jobs[way], n, kind, arg)
                snap = cache.snapshot(keep=True)
                snap.memo = memos[way]
                switches = _switches(way == 0)
                for s in switches:
                    s.start()
                try:
                    outs.append(run_session(Session(snap, conf)).to_json())
                finally:
                    for s in switches:
                        s.stop()
            assert outs[0] == outs[1]
            got, want = memos[0].get(memo_key), memos[1].get(memo_key)
            assert isinstance(got, Ledger) == isinstance(want, Ledger)
            if isinstance(got, Ledger) and isinstance(want, Ledger):
                assert sums_of(got) == sums_of(want)
                assert attributes(got) == attributes(want)
                assert {u: (e.path, e.amounts) for u, e in got.entries.items()} == {
                    u: (e.path, e.amounts) for u, e in want.entries.items()}


def test_a_moved_job_changes_only_its_path() -> None:
    """A job that loses a task moves its path's sums by the difference, allocated and request alike,
    and marks those queues dirty with the fields that moved."""
    ledger = Ledger(mock.Mock(limits={"a1": 0, "a": 0, "root": 0, "b1": 0}), True)
    ledger.refresh(lambda name: mock.Mock())  # every queue built once: nothing dirty
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="a1")
    job.add_task(TaskInfo(uid="ns/t", name="t", namespace="ns", job="ns/j", resreq=Resource(1.0),
                          status=TaskStatus.RUNNING))
    two = (2000, 10, (("pods", 2),))
    one = (1000, 5, (("pods", 1),))
    ledger.admit(job, ("a1", "a", "root"), (two, two, None, None))
    ledger.dirty.clear()
    ledger.replacing["ns/j"] = ledger.entries["ns/j"]
    ledger.admit(job, ("a1", "a", "root"), (one, one, None, one))
    for q in ("a1", "a", "root"):
        alloc, request, inqueue, elastic = ledger.sums[q]
        assert (alloc.cpu, alloc.memory, alloc.scalars, alloc.members) == (1000, 5, {"pods": 1}, 1)
        assert (request.cpu, request.scalars) == (1000, {"pods": 1})
        assert inqueue.members == 0 and elastic.members == 1 and elastic.listers == {"pods": {("ns/j", 0)}}
    assert ledger.dirty == dict.fromkeys(("a1", "a", "root"), 0b1011)
    assert "b1" not in ledger.sums and len(FIELDS) == 4


def _pending_job(phase: PodGroupPhase) -> JobInfo:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", min_available=2,
                  min_resources=Resource(1000.0, 2.0**30), phase=phase)
    for i, status in enumerate((TaskStatus.RUNNING, TaskStatus.PENDING, TaskStatus.SUCCEEDED, TaskStatus.PENDING)):
        job.add_task(TaskInfo(uid=f"ns/t{i}", name=f"t{i}", namespace="ns", job="ns/j",
                              resreq=Resource(500.0 * (i + 1), 2.0**28, {"pods": 1.0}), status=status))
    return job


def test_pending_tasks_summed_as_the_contribution_sums_them() -> None:
    for phase in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING):
        for elastic in (False, True):
            job = _pending_job(phase)
            want = charged_amounts(_contribution(job), elastic)
            assert job_amounts(job, elastic) == want
            with mock.patch.object(charged, "LEAN_PENDING", False):
                assert _pending_job(phase).derived == {} and job_amounts(_pending_job(phase), elastic) == want


def test_drf_keeps_a_share_across_a_phase_move() -> None:
    plugin = drf.DrfPlugin.__new__(drf.DrfPlugin)
    plugin._terms = drf.share_terms(Resource(10000.0, 2.0**34))
    job = _pending_job(PodGroupPhase.INQUEUE)
    first = plugin._derived(job)
    job.set_phase(PodGroupPhase.RUNNING)
    with mock.patch.object(check, "enabled", lambda: True):
        assert plugin._derived(job) is first
    job.set_status(job.tasks["ns/t1"], TaskStatus.RUNNING)  # a task moved: worked out again
    again = plugin._derived(job)
    assert again is not first and again[0].cpu == first[0].cpu + 1000.0
    job.set_phase(PodGroupPhase.PENDING)
    with mock.patch.object(drf, "ACROSS_PHASE", False):
        assert plugin._derived(job) is not again
