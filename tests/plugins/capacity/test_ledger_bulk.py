"""capacity's ledger counting its new jobs in together (plugins/capacity/ledger_sums.py `count_in_many`,
ledger.py `Ledger.admit_many` and `BULK_NEW`, docs/semantics.md K61): against `count_in` job by job, field
by field, queue by queue, over random batches of jobs on random paths of a small tree (sums already
holding members, names listed in different orders, fields not charged, jobs charging nothing): the same
integer sums, members, listers, first listers (each one asked, and each one cached) and dirty marks;
and `admit_many` against `admit` job by job on a ledger where some jobs are being replaced."""

from __future__ import annotations

from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import JobInfo
from apportion.plugins.capacity import ledger as ledger_module
from apportion.plugins.capacity.ledger import FIELDS, Ledger
from apportion.plugins.capacity.ledger_sums import QueueSum, count_in, count_in_many
from apportion.state import check

PATHS = [("a1", "a", "root"), ("a2", "a", "root"), ("b1", "b", "root"), ("root",)]
NAMES = ["pods", "nvidia.com/gpu", "example.com/fpga"]

amount = st.builds(lambda c, m, names, v: (c, m, tuple((n, v + i) for i, n in enumerate(names))),
                   st.integers(0, 4), st.integers(0, 2**60), st.lists(st.sampled_from(NAMES), unique=True,
                                                                        max_size=3), st.integers(0, 3))
amounts = st.tuples(*[st.none() | amount for _ in FIELDS])
jobs = st.lists(st.tuples(st.sampled_from(range(len(PATHS))), amounts), max_size=12)
#: a job's amounts as `charged.charged_amounts` gives them to the ledger: allocated and request always
#: set (the ledger's moves take a queue's sums to exist once a job is charged there)
charged = st.tuples(amount, amount, st.none() | amount, st.none() | amount)
charged_jobs = st.lists(st.tuples(st.sampled_from(range(len(PATHS))), charged), max_size=12)


def state_of(sums: dict[str, list[QueueSum]]) -> dict[str, list[tuple[Any, ...]]]:
    """The sums, members, listers and every name's first lister; the order of a sum's names aside."""
    return {q: [(s.cpu, s.memory, dict(s.scalars), s.members, dict(s.listers),
                 {n: s.first_lister(n) for n in s.listers}) for s in v] for q, v in sorted(sums.items())}


def cached_firsts_hold(sums: dict[str, list[QueueSum]]) -> bool:
    """Every cached first lister is the smallest of its name's listers."""
    return all(at == min(s.listers[n]) for v in sums.values() for s in v for n, at in s.first.items())


def one_by_one(all_sums: dict[str, list[QueueSum]], dirty: dict[str, int], uid: str, path: tuple[str, ...],
               a: tuple[Any, ...]) -> None:
    """`_admit_new` as the reference writes it: every charged field counted in at every queue."""
    moved = 0
    for f, x in enumerate(a):
        if x is not None:
            moved |= 1 << f
    if not moved:
        return
    for q in path:
        sums = all_sums.setdefault(q, [QueueSum() for _ in FIELDS])
        for f, x in enumerate(a):
            if x is not None:
                count_in(sums[f], uid, x)
        dirty[q] = dirty.get(q, 0) | moved


@settings(max_examples=30, deadline=None)
@given(before=jobs, batch=jobs, ask=st.booleans())
def test_count_in_many_is_count_in_job_by_job(before: list[Any], batch: list[Any], ask: bool) -> None:
    sums: list[dict[str, list[QueueSum]]] = [{}, {}]
    dirty: list[dict[str, int]] = [{}, {}]
    for way in (0, 1):
        for i, (p, a) in enumerate(before):
            one_by_one(sums[way], dirty[way], f"ns/b{i:02d}", PATHS[p], a)
        if ask:  # some first listers cached before the batch, some forgotten
            for v in sums[way].values():
                for s in v:
                    for n in list(s.listers)[:1]:
                        s.first_lister(n)
    todo = [(f"ns/j{(7 * i) % 13:02d}", PATHS[p], a) for i, (p, a) in enumerate(batch)]
    count_in_many(sums[0], dirty[0], todo, len(FIELDS))
    for uid, path, a in todo:
        one_by_one(sums[1], dirty[1], uid, path, a)
    assert cached_firsts_hold(sums[0])
    assert dirty[0] == dirty[1]
    assert state_of(sums[0]) == state_of(sums[1])


def job(uid: str) -> JobInfo:
    return JobInfo(uid=uid, name=uid, namespace="ns", queue="q")


@settings(max_examples=20, deadline=None)
@given(before=charged_jobs, batch=st.lists(st.tuples(st.integers(0, 15), st.sampled_from(range(len(PATHS))), charged),
                                   max_size=12))
def test_admit_many_is_admit_job_by_job(before: list[Any], batch: list[Any]) -> None:
    ledgers = []
    for bulk in (True, False):
        ledger = Ledger(mock.Mock(limits=dict.fromkeys(["a1", "a2", "a", "b1", "b", "root"], 0)), True)
        for i, (p, a) in enumerate(before):
            ledger.admit(job(f"ns/j{i:02d}"), PATHS[p], a)
        # the jobs taken in before that the batch names again are being replaced, as `split` leaves them
        seen = {f"ns/j{k:02d}" for k, _, _ in batch}
        for uid in sorted(seen & ledger.entries.keys()):
            ledger.replacing[uid] = ledger.entries[uid]
        items = [(job(f"ns/j{k:02d}"), PATHS[p], a) for k, p, a in {k: (k, p, a) for k, p, a in batch}.values()]
        # the self-check (counting the batch in job by job too) runs with the bulk
        with mock.patch.object(ledger_module, "BULK_NEW", bulk), mock.patch.object(check, "enabled", lambda b=bulk: b):
            ledger.admit_many(items)
        ledger.settle()
        ledgers.append(ledger)
    got, want = ledgers
    assert cached_firsts_hold(got.sums)
    assert state_of(got.sums) == state_of(want.sums) and got.dirty == want.dirty
    assert {u: (e.path, e.amounts) for u, e in got.entries.items()} == {
        u: (e.path, e.amounts) for u, e in want.entries.items()}


def test_a_step_shared_across_a_field_whose_names_move() -> None:
    """Fields sharing one amounts object around a field whose scalar name changes: each moves by its
    own difference (the reference, `LEAN_ADMIT` off, agrees)."""
    a, b = (2000, 10, (("pods", 2),)), (1000, 5, (("pods", 1),))
    x, y = (1000, 0, (("pods", 1),)), (1000, 0, (("nvidia.com/gpu", 1),))
    ledgers = []
    for lean in (True, False):
        ledger = Ledger(mock.Mock(limits=dict.fromkeys(["a1", "a", "root"], 0)), True)
        j = job("ns/j")
        ledger.admit(j, PATHS[0], (a, x, a, None))
        ledger.replacing["ns/j"] = ledger.entries["ns/j"]
        with mock.patch.object(ledger_module, "LEAN_ADMIT", lean):
            ledger.admit(j, PATHS[0], (b, y, b, None))
        ledgers.append(ledger)
    assert state_of(ledgers[0].sums) == state_of(ledgers[1].sums)
    assert ledgers[0].sums["root"][2].scalars == {"pods": 1}
