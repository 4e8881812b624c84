"""capacity's flat mode over a ledger (plugins/capacity/flat_ledger.py): the attributes a session opens
with equal a recount's (`build_queue_attrs`), bit for bit and in the order of their scalar names and of the
queues, and the session decides and reports as a fresh one, over random sequences of jobs arriving,
starting, changing and leaving, queues changing their limits, and amounts that are exact and amounts that
are not (then the session recounts)."""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from ledger_steps import EXACT_RUNNING, Jobs, apply_job_step, job_objects, job_steps, nodes

from apportion.engine import run_session
from apportion.framework.conf import parse_conf
from apportion.framework.session import Session
from apportion.plugins.capacity.flat_ledger import FLAT_LEDGER_MEMO
from apportion.plugins.capacity.ledger import Ledger
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, MODIFIED, WatchEvent

from k8s import queue

CONF = parse_conf("""
actions: "enqueue, allocate, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity}, {name: nodeorder}]
""")

QUEUES = ["a1", "a2", "b1"]
LIMITS = [{"deserved": {"cpu": "60"}}, {"deserved": {"cpu": "40", "nvidia.com/gpu": "4"}},
          {"deserved": {"cpu": "50"}, "guarantee": {"cpu": "10"}}, {"capability": {"cpu": "30"}}, {}]


def cluster() -> list[dict[str, Any]]:
    return [*nodes(), *(queue(name, **LIMITS[i]) for i, name in enumerate(QUEUES))]


step = st.one_of(*job_steps([*QUEUES, "nowhere"]),
                 st.tuples(st.just("queue"), st.tuples(st.sampled_from(QUEUES), st.integers(0, len(LIMITS) - 1))))


@settings(max_examples=60, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=25))
def test_flat_ledger_sessions_are_recounts(steps: list[tuple[str, Any]]) -> None:
    cache = SchedulerCache(report=lambda line: None)
    for o in cluster():
        cache.apply(WatchEvent(ADDED, o))
    memo: dict[str, Any] = {}
    jobs: Jobs = {}
    with mock.patch.object(check, "enabled", lambda: True):
        for n, (kind, arg) in enumerate([*steps, ("session", 0)]):
            if kind == "queue":
                qname, limits = arg
                cache.apply(WatchEvent(MODIFIED, queue(qname, **LIMITS[limits])))
            apply_job_step(cache, jobs, n, kind, arg)
            # every step opens a session over the memo (the self-check compares its attributes with a
            # recount) and a fresh one; both decide and report the same
            snap = cache.snapshot(keep=True)
            snap.memo = memo
            kept = run_session(Session(snap, CONF))
            fresh = run_session(Session(cache.snapshot(keep=False), CONF))
            assert kept.to_json() == fresh.to_json()
            assert kept.queue_status == fresh.queue_status


def test_the_flat_ledger_keeps_an_unchanged_job() -> None:
    """A job that runs on unchanged through three sessions is in the ledger from the first, and the
    later sessions charge it from there (the self-check compares each with a recount)."""
    cache = SchedulerCache(report=lambda line: None)
    for o in [*cluster(), *job_objects("j", EXACT_RUNNING, True)]:
        cache.apply(WatchEvent(ADDED, o))
    memo: dict[str, Any] = {}
    with mock.patch.object(check, "enabled", lambda: True):
        for _ in range(3):
            snap = cache.snapshot(keep=True)
            snap.memo = memo
            run_session(Session(snap, CONF))
            ledger = memo[FLAT_LEDGER_MEMO]
            assert isinstance(ledger, Ledger) and list(ledger.entries) == ["ns/j"]


def test_a_changed_job_names_its_scalars_first_when_it_comes_first() -> None:
    """A waiting job (charged each session) lists gpu before fpga; a later running job (kept) lists
    fpga first: a recount in uid order names gpu first in the queue's request, and so must the ledger's."""
    first = {"queue": "a1", "tasks": 1, "cpu": "1", "scalars": ["nvidia.com/gpu", "example.com/fpga"],
             "running": False, "min_member": 1}
    later = {**first, "scalars": ["example.com/fpga", "nvidia.com/gpu"], "running": True}
    test_flat_ledger_sessions_are_recounts.hypothesis.inner_test(  # type: ignore[attr-defined]
        steps=[("add", first), ("add", later), ("session", 0), ("session", 0)])
