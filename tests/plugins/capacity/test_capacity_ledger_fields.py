"""capacity's ledger building a dirty queue's attributes from its last ones (plugins/capacity/ledger.py
`Ledger.refresh`, `KEEP_FIELDS`): the fields that did not move kept as the last attributes' objects, the
moved ones made from the sums, the share computed again only when `allocated` moved. Compared with the
reference, every dirty queue built afresh from its limits, over random sequences of jobs arriving,
starting, losing a task and leaving, in tree and flat mode: the same attributes (values, scalar order,
share) after every session, and the same session outcome; the self-check runs throughout."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
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
from apportion.plugins.capacity import ledger as ledger_module
from apportion.plugins.capacity.attrs import QueueAttr
from apportion.plugins.capacity.flat_ledger import FLAT_LEDGER_MEMO
from apportion.plugins.capacity.ledger import LEDGER_MEMO, Ledger
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
LEAVES = TREE_LEAVES


# "shrink": the n-th job loses its last task (a task that completed), the way a forecast's jobs move
step = st.one_of(*job_steps(LEAVES), st.tuples(st.just("shrink"), st.integers(0, 50)),
                 st.tuples(st.just("shrink"), st.integers(0, 50)))


@pytest.mark.parametrize("mode", sorted(MODES))
@settings(max_examples=40, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=30))
def test_attributes_built_from_the_last_ones_are_built_afresh(mode: str, steps: list[tuple[str, Any]]) -> None:
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
                with mock.patch.object(ledger_module, "KEEP_FIELDS", way == 0):
                    outs.append(run_session(Session(snap, conf)).to_json())
            assert outs[0] == outs[1]
            got, want = memos[0].get(memo_key), memos[1].get(memo_key)
            assert isinstance(got, Ledger) == isinstance(want, Ledger)
            if isinstance(got, Ledger) and isinstance(want, Ledger):
                assert attributes(got) == attributes(want)


def test_a_queue_keeps_the_fields_that_did_not_move() -> None:
    """A running job that loses a task moves its queues' allocated and request; a queue built from its
    last attributes keeps the fields that did not move as the very objects, and makes the moved ones."""
    conf, _ = MODES["tree"]
    cache = SchedulerCache(report=lambda line: None)
    for o in tree_cluster():
        cache.apply(WatchEvent(ADDED, o))
    jobs: Jobs = {}
    spec = {"queue": "a1", "tasks": 3, "cpu": "1", "scalars": ["nvidia.com/gpu"], "running": True, "min_member": 1}
    apply_job_step(cache, jobs, 0, "add", spec)
    apply_job_step(cache, jobs, 1, "add", {**spec, "running": False, "queue": "a2"})
    memo: dict[str, Any] = {}
    for n in range(3):
        if n == 2:
            shrink(cache, jobs, 0)  # j000, the running one
        snap = cache.snapshot(keep=True)
        snap.memo = memo
        with mock.patch.object(check, "enabled", lambda: True):
            run_session(Session(snap, conf))
        if n == 1:  # the first session builds the tree, the second the ledger from it
            last = dict(memo[LEDGER_MEMO].base)
    now = memo[LEDGER_MEMO].base
    for name in ("a1", "a", "root"):
        assert now[name] is not last[name]
        assert now[name].allocated is not last[name].allocated
        assert now[name].inqueue is last[name].inqueue and now[name].deserved is last[name].deserved
        assert now[name].allocated.cpu == last[name].allocated.cpu - 1000.0
    # a2's job did not move: its attributes are the last ones
    assert now["a2"] is last["a2"]


def test_the_self_check_catches_a_kept_field_that_is_not_the_sums() -> None:
    """A base's field changed in place (which no session may do) is carried into the next build when the
    field does not move; the self-check's comparison with a fresh build names it."""
    conf, _ = MODES["tree"]
    cache = SchedulerCache(report=lambda line: None)
    for o in tree_cluster():
        cache.apply(WatchEvent(ADDED, o))
    jobs: Jobs = {}
    spec = {"queue": "a1", "tasks": 3, "cpu": "1", "scalars": [], "running": True, "min_member": 1}
    apply_job_step(cache, jobs, 0, "add", spec)
    memo: dict[str, Any] = {}
    for _ in range(2):  # the first session builds the tree, the second the ledger from it
        snap = cache.snapshot(keep=True)
        snap.memo = memo
        run_session(Session(snap, conf))
    leaf: QueueAttr = memo[LEDGER_MEMO].base["a1"]
    leaf.inqueue = Resource(5.0, 0.0)  # a stale field, as a session changing a base would leave it
    shrink(cache, jobs, 0)
    snap = cache.snapshot(keep=True)
    snap.memo = memo
    with mock.patch.object(check, "enabled", lambda: True), pytest.raises(check.StateCheckError, match="inqueue"):
        Session(snap, conf)


scalars = st.lists(st.tuples(st.sampled_from(["nvidia.com/gpu", "example.com/fpga", "x"]), st.integers(0, 3)),
                   max_size=3)


@given(was=scalars, now=scalars)
def test_same_names_is_the_names_compared(was: list[tuple[str, int]], now: list[tuple[str, int]]) -> None:
    """`_same_names` (admit's test for a field whose listers stay) against comparing the name lists."""
    assert ledger_module.same_names(tuple(was), tuple(now)) == ([n for n, _ in was] == [n for n, _ in now])
