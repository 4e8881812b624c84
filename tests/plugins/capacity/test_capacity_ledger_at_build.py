"""capacity's ledger started by the session that builds the tree (plugins/capacity/tree.py,
`LEDGER_AT_BUILD`, docs/semantics.md K41), against the reference: that session charges every job to the
attributes it built and the next one starts the ledger. Over random sequences of jobs arriving, starting,
losing a task and leaving, and of nodes joining (a new cluster total: the tree is built again, and a new
ledger started), both give the same session outcome and queue report after every session, and the same
ledger attributes after every session that left both current; the self-check runs throughout."""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from ledger_steps import (
    TREE_LEAVES,
    Jobs,
    apply_job_step,
    attributes,
    job_steps,
    shrink,
    tree_cluster,
)

from apportion.engine import run_session
from apportion.framework.conf import parse_conf
from apportion.framework.session import Session
from apportion.plugins.capacity import tree as tree_module
from apportion.plugins.capacity.ledger import LEDGER_MEMO, Ledger
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, WatchEvent

from k8s import node

CONF = parse_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
""")
LEAVES = TREE_LEAVES


step = st.one_of(*job_steps(LEAVES), st.tuples(st.just("shrink"), st.integers(0, 50)),
                 st.tuples(st.just("node"), st.integers(0, 3)))


def run_both(steps: list[tuple[str, Any]]) -> list[int]:
    """Twin caches through the steps and two sessions more, the switch on in one and off in the other:
    the same outcome and queue report after every session; the same ledger attributes after every
    session that left both ledgers current. The sessions at which the ledgers were compared."""
    caches = [SchedulerCache(report=lambda line: None) for _ in range(2)]
    for cache in caches:
        for o in tree_cluster():
            cache.apply(WatchEvent(ADDED, o))
    memos: list[dict[str, Any]] = [{}, {}]
    jobs: list[Jobs] = [{}, {}]
    added = [0, 0]
    compared: list[int] = []
    with mock.patch.object(check, "enabled", lambda: True):
        for n, (kind, arg) in enumerate([*steps, ("session", 0), ("session", 0)]):
            outs, at = [], []
            for way, cache in enumerate(caches):
                if kind == "shrink":
                    shrink(cache, jobs[way], arg)
                elif kind == "node":
                    added[way] += 1
                    cache.apply(WatchEvent(ADDED, node(f"x{added[way]}", cpu=8 + arg, memory="64Gi")))
                else:
                    apply_job_step(cache, jobs[way], n, kind, arg)
                snap = cache.snapshot(keep=True)
                snap.memo = memos[way]
                at.append(None if snap.jobs_delta is None else snap.jobs_delta.snapshot)
                with mock.patch.object(tree_module, "LEDGER_AT_BUILD", way == 0):
                    ssn = Session(snap, conf=CONF)
                    result = run_session(ssn)
                    outs.append((result.to_json(), {q: s.to_json() for q, s in sorted(ssn.queue_reports().items())}))
            assert outs[0] == outs[1]
            got, want = memos[0].get(LEDGER_MEMO), memos[1].get(LEDGER_MEMO)
            # a ledger is current when its last completed split and refresh looked at this session's
            # snapshot: one left by a session whose charge found an inexact job is not (either way)
            if (isinstance(got, Ledger) and isinstance(want, Ledger) and got.at is not None
                    and got.at == at[0] and want.at == at[1]):
                compared.append(n)
                assert attributes(got) == attributes(want)
    return compared


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=25))
def test_ledger_started_at_the_build_is_the_one_started_next(steps: list[tuple[str, Any]]) -> None:
    run_both(steps)


def test_current_ledgers_are_compared() -> None:
    """Exact jobs only: from the session after the build on, both ledgers are current and compared."""
    spec = {"queue": "a1", "tasks": 2, "cpu": "1", "scalars": [], "running": True, "min_member": 1}
    compared = run_both([("add", spec), ("add", {**spec, "queue": "b1", "running": False}), ("shrink", 0)])
    assert compared and compared[-1] == 4


def test_the_building_session_keeps_a_ledger() -> None:
    """With the switch on, the session that builds the tree leaves a ledger for that tree in the memo."""
    cache = SchedulerCache(report=lambda line: None)
    for o in tree_cluster():
        cache.apply(WatchEvent(ADDED, o))
    jobs: Jobs = {}
    apply_job_step(cache, jobs, 0, "add", {"queue": "a1", "tasks": 2, "cpu": "1", "scalars": [], "running": True,
                                           "min_member": 1})
    memo: dict[str, Any] = {}
    snap = cache.snapshot(keep=True)
    snap.memo = memo
    with mock.patch.object(check, "enabled", lambda: True):
        run_session(Session(snap, CONF))
    ledger = memo[LEDGER_MEMO]
    assert isinstance(ledger, Ledger) and ledger.tree is memo[tree_module.TREE_MEMO]
    assert ledger.base["a1"].allocated.cpu == 2000.0
