"""capacity's runs of a queue's jobs kept from one ask to the next (answer_runs.QueueRuns, K33): over a
sequence of asks whose job lists change in every way a session can change them (jobs gone, added,
reordered, rebuilt, a minResources replaced by an equal or another value, a job moved to another
queue, queues interleaved), every job's bucket is the one worked out from its queue and minResources
by value, and a run met again unchanged is not worked out job by job."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.plugins.capacity.answer_runs import QueueRuns
from apportion.plugins.capacity.buckets import Buckets
from apportion.resources import Resource


@dataclass(eq=False)
class _Job:
    uid: str
    queue: str
    min_resources: Resource | None


def _mr(cpu: int | None) -> Resource | None:
    return None if cpu is None else Resource(cpu=float(cpu), memory=1024.0)


@st.composite
def asks(draw: Any) -> list[list[tuple[str, int]]]:
    """A sequence of asks: per ask, the operations that turn the last ask's list into this one's
    (as positions and choices), applied in `_run`."""
    return draw(st.lists(st.lists(st.tuples(st.sampled_from(["keep", "drop", "add", "rebuild", "replace_mr",
                                                            "same_mr_value", "move", "swap", "interleave"]),
                                            st.integers(0, 50)), max_size=4), min_size=1, max_size=6))


def _run(steps: list[list[tuple[str, int]]], enabled: bool) -> tuple[list[list[int]], int]:
    buckets = Buckets()
    runs = QueueRuns()
    runs.enabled = enabled
    queues = ["qa", "qb", "qc"]
    jobs = [_Job(f"j{i:02d}", queues[i % 3], _mr(i % 2)) for i in range(9)]
    made = len(jobs)
    looked = 0
    answers: list[list[int]] = []

    def bucket_of(job: Any) -> int:
        nonlocal looked
        looked += 1
        return buckets.bucket(job.queue, job.min_resources)

    for ops in steps:
        interleave = False
        for op, k in ops:
            if not jobs and op != "add":
                continue
            at = k % max(len(jobs), 1)
            if op == "drop":
                del jobs[at]
            elif op == "add":
                jobs.append(_Job(f"j{made:02d}", queues[k % 3], _mr(k % 3 if k % 4 else None)))
                made += 1
            elif op == "rebuild":
                old = jobs[at]
                jobs[at] = _Job(old.uid, old.queue, old.min_resources)
            elif op == "replace_mr":
                jobs[at].min_resources = _mr(k % 3)
            elif op == "same_mr_value":
                mr = jobs[at].min_resources
                jobs[at].min_resources = None if mr is None else mr.clone()
            elif op == "move":
                jobs[at].queue = queues[(queues.index(jobs[at].queue) + 1) % 3]
            elif op == "swap":
                jobs[at], jobs[-1] = jobs[-1], jobs[at]
            elif op == "interleave":
                interleave = True
        # enqueue's order: queue after queue, each queue's jobs in list order; or the quiet tests' (uid)
        listed = (sorted(jobs, key=lambda j: j.uid) if interleave
                  else [j for q in queues for j in jobs if j.queue == q])
        got: list[int] = []
        for ids, distinct in runs.split(listed, bucket_of, len(queues)):  # type: ignore[arg-type]
            assert distinct == list(dict.fromkeys(ids))
            got += ids
        assert got == [buckets.bucket(j.queue, j.min_resources) for j in listed]
        answers.append(got)
    return answers, looked


@settings(max_examples=400, deadline=None)
@given(steps=asks())
def test_kept_runs_give_every_job_its_own_bucket(steps: list[list[tuple[str, int]]]) -> None:
    """Kept or worked out job by job, every job gets its bucket by value, ask after ask."""
    kept, looked_kept = _run(steps, True)
    plain, looked_plain = _run(steps, False)
    assert kept == plain
    assert looked_kept <= looked_plain


def test_an_unchanged_run_is_not_worked_out_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked twice about the same lists, the second ask looks at no job; a job removed from one queue
    makes that queue's run alone be worked out again (the self-check, which looks at every job, off)."""
    monkeypatch.delenv("APPORTION_CHECK_STATE", raising=False)
    buckets = Buckets()
    runs = QueueRuns()
    jobs = [_Job(f"j{i}", "qa" if i < 3 else "qb", _mr(i % 2)) for i in range(6)]
    looked: list[str] = []

    def bucket_of(job: Any) -> int:
        looked.append(job.uid)
        return buckets.bucket(job.queue, job.min_resources)

    first = list(runs.split(jobs, bucket_of, 2))  # type: ignore[arg-type]
    assert looked == [j.uid for j in jobs]
    looked.clear()
    assert list(runs.split(list(jobs), bucket_of, 2)) == first  # type: ignore[arg-type]
    assert looked == []
    del jobs[4]
    third = list(runs.split(jobs, bucket_of, 2))  # type: ignore[arg-type]
    assert looked == ["j3", "j5"]
    assert third[0] == first[0]


def test_runs_are_dropped_with_the_buckets_numbering(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the buckets' numbering is dropped (Buckets.forget_gone), in whichever ask, the runs kept
    with the old numbers are dropped too: the next ask of enqueue gives every job its own answer."""
    from apportion.framework.conf import parse_conf

    from k8s import node, pod, podgroup, queue, session
    monkeypatch.delenv("APPORTION_CHECK_STATE", raising=False)
    objs: list[dict] = [node("n0", cpu=8), queue("root"), queue("qa", parent="root", capability={"cpu": "4"}),
                        queue("qb", parent="root", capability={"cpu": "2"})]
    for i in range(6):
        objs += [podgroup(f"g{i}", queue="qa" if i % 2 else "qb", phase="Pending",
                          min_resources={"cpu": str(1 + i % 3)}), pod(f"g{i}-0", f"g{i}", cpu=1)]
    ssn = session(objs, parse_conf("""
actions: "enqueue"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
"""))
    plugin = next(p for _, p in ssn.plugins if p.name == "capacity")
    jobs = sorted((j for j in ssn.jobs.values() if j.is_pending()), key=lambda j: (j.queue, j.uid))
    want = plugin.enqueue_answers(jobs)
    assert plugin._queue_runs().runs
    # the numbering dropped during the quiet tests' ask, then numbers given out in another order
    real = Buckets.forget_gone

    def drop(self: Buckets, n: int) -> bool:
        self.of_job.clear()
        self.ids.clear()
        self.info.clear()
        return True

    monkeypatch.setattr(Buckets, "forget_gone", drop)
    plugin.admissible_enqueues(list(reversed(jobs)))
    monkeypatch.setattr(Buckets, "forget_gone", real)
    assert not plugin._queue_runs().runs
    assert plugin.enqueue_answers(jobs) == want
