"""capacity's ledger (plugins/capacity/ledger.py): sums kept between sessions equal a recount, bit for bit
and in the order of their scalar names, over random sequences of jobs arriving, starting, changing and
leaving, with amounts that are exact and amounts that are not (then the session recounts)."""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from ledger_steps import EXACT_RUNNING, Jobs, apply_job_step, job_steps, nodes

from apportion.engine import run_session
from apportion.framework.conf import parse_conf
from apportion.framework.session import Session
from apportion.plugins.capacity.ledger import LEDGER_MEMO, Ledger, charged_amounts, exact_amount
from apportion.plugins.queue_common import JobContribution
from apportion.resources import Resource
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, WatchEvent

from k8s import queue

CONF = parse_conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
""")

LEAVES = ["a1", "a2", "b1"]


def tree() -> list[dict[str, Any]]:
    objs = nodes()
    objs += [queue("root"), queue("a", parent="root", deserved={"cpu": "100"}),
             queue("b", parent="root", deserved={"cpu": "50"}),
             queue("a1", parent="a", deserved={"cpu": "60"}), queue("a2", parent="a", deserved={"cpu": "40"}),
             queue("b1", parent="b", deserved={"cpu": "50"})]
    return objs


step = st.one_of(*job_steps(LEAVES))


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=25))
def test_kept_sums_are_a_recount(steps: list[tuple[str, Any]]) -> None:
    cache = SchedulerCache(report=lambda line: None)
    for o in tree():
        cache.apply(WatchEvent(ADDED, o))
    memo: dict[str, Any] = {}
    jobs: Jobs = {}
    used_ledger = 0
    with mock.patch.object(check, "enabled", lambda: True):
        for n, (kind, arg) in enumerate([*steps, ("session", 0)]):
            apply_job_step(cache, jobs, n, kind, arg)
            # every step opens a session: kept jobs come from the ledger, the others are charged
            snap = cache.snapshot(keep=True)
            snap.memo = memo
            kept = run_session(Session(snap, CONF)).to_json()  # _check_ledger raises on any difference
            fresh = run_session(Session(cache.snapshot(keep=False), CONF)).to_json()
            assert kept == fresh
            ledger = memo.get(LEDGER_MEMO)
            used_ledger += isinstance(ledger, Ledger) and bool(ledger.entries)
    if ("add", EXACT_RUNNING) in steps[:1] and len(steps) > 2 and all(k == "session" for k, _ in steps[1:]):
        assert used_ledger  # test_the_ledger_is_used forces this case


def test_the_ledger_is_used() -> None:
    """A job that runs on unchanged through three sessions is charged from the ledger from the second."""
    test_kept_sums_are_a_recount.hypothesis.inner_test(  # type: ignore[attr-defined]
        steps=[("add", EXACT_RUNNING), ("session", 0), ("session", 0)])


def test_inexact_amounts_are_refused() -> None:
    assert exact_amount(Resource(1000.0, 2.0**30, {"nvidia.com/gpu": 1000.0})) == (1000, 2**30,
                                                                                  (("nvidia.com/gpu", 1000),))
    assert exact_amount(Resource(1000.5, 0.0)) is None
    assert exact_amount(Resource(0.0, 2.0**53)) is None
    exact = Resource(1000.0, 1.0)
    c = JobContribution(exact, exact, Resource(), Resource(0.5, 0.0))
    # elastic is not charged with ElasticEnable off, so its inexact amount does not matter
    assert charged_amounts(c, False) == ((1000, 1, ()), (1000, 1, ()), None, None)
    assert charged_amounts(c, True) is None
