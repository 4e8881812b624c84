"""Small pieces of the service, in process: the plan annotation's errors name the field, the
`hadoop.auth` cookie cannot be forged, the nearest ACL decides, and the writer runs jobs in order."""

from __future__ import annotations

import threading
import time

import pytest

from apportion.errors import InputError
from apportion.service.auth import Acls, CookieSigner, QueueMeta
from apportion.service.reservations import parse_plan_settings
from apportion.service.writer import RWLock, Writer
from gc_garbage import cyclic_garbage, named


@pytest.mark.parametrize(("text", "field"), [
    ("{", "apportion.io/plan"),
    ('{"agent": "nope"}', ".agent"),
    ('{"policy": {"type": "Bogus"}}', ".policy"),
    ('{"policy": {"type": "CapacityOverTime", "window": -1}}', ".policy.window"),
    ('{"step": 0}', ".step"),
    ('{"replanner": "yes"}', ".replanner"),
    ('{"moveOnExpiry": 3}', ".moveOnExpiry"),
])
def test_plan_annotation_errors_name_the_field(text: str, field: str) -> None:
    with pytest.raises(InputError) as e:
        parse_plan_settings(text, "Queue q: metadata.annotations.apportion.io/plan")
    assert field in str(e.value)


def test_plan_annotation_defaults_and_units() -> None:
    s = parse_plan_settings('{"step": 2, "policy": {"type": "CapacityOverTime", "window": 60}, "replanner": false}', "w")
    assert s.step_ms == 2000 and '"window": 60000' in s.policy and s.replanner_ms is None
    assert parse_plan_settings("", "w").agent == "aligned-left"


def test_cookie_is_signed() -> None:
    signer = CookieSigner(b"k" * 32)
    value = signer.make("alice")
    assert signer.user(value) == "alice" and signer.user(f'"{value}"') == "alice"
    assert signer.user(value.replace("u=alice", "u=root")) is None
    assert CookieSigner(b"x" * 32).user(value) is None
    assert CookieSigner(b"k" * 32, ttl_s=-10).user(CookieSigner(b"k" * 32, ttl_s=-10).make("a")) is None


def test_nearest_acl_decides_and_admins_pass() -> None:
    queues = {
        "root": QueueMeta("root", "", {"apportion.io/acl-submit-applications": "ops"}),
        "team": QueueMeta("team", "root", {"apportion.io/acl-submit-applications": "alice,bob"}),
        "leaf": QueueMeta("leaf", "team", {}),
        "other": QueueMeta("other", "root", {}),
    }
    acls = Acls(True, ("admin",))
    assert acls.check(queues, "alice", "leaf", "SUBMIT", "acl_submit_applications") is None
    refused = acls.check(queues, "ops", "leaf", "SUBMIT", "acl_submit_applications")
    assert refused is not None and "acl_submit_applications" in refused.message()
    assert acls.check(queues, "ops", "other", "SUBMIT", "acl_submit_applications") is None
    assert acls.check(queues, "admin", "leaf", "SUBMIT", "acl_submit_applications") is None
    assert Acls(False, ()).check(queues, "anyone", "leaf", "SUBMIT", "acl_submit_applications") is None
    # unset everywhere: `*`, as YARN's defaults
    assert acls.check({}, "anyone", "q", "LIST", "acl_list_reservations") is None


def test_writer_runs_jobs_in_order_and_readers_never_see_a_job_half_done() -> None:
    lock = RWLock()
    writer = Writer(lock)
    state = {"a": 0, "b": 0}
    seen: list[tuple[int, int]] = []

    def job(i: int) -> int:
        state["a"] = i
        time.sleep(0.001)
        state["b"] = i
        return i

    def reader() -> None:
        for _ in range(200):
            with lock.read():
                seen.append((state["a"], state["b"]))

    t = threading.Thread(target=reader)
    t.start()
    futures = [writer.submit(lambda i=i: job(i)) for i in range(100)]
    assert [f.result(timeout=30) for f in futures] == list(range(100))
    t.join()
    writer.stop()
    assert all(a == b for a, b in seen)
    failing = Writer(lock)
    with pytest.raises(ZeroDivisionError):
        failing.submit(lambda: 1 // 0).result(timeout=30)
    failing.stop()


def test_a_commit_that_fails_after_its_job_returned_fails_that_job_and_the_writer_goes_on() -> None:
    """A job alone whose commit fails gets the commit's error (once), memory is recovered, and the
    next job runs: the commit's failure used to be a second outcome for one job, which ended the
    writer thread and left every later request waiting."""
    from collections.abc import Iterator
    from contextlib import contextmanager

    commits: list[bool] = [False, True]
    recovered: list[int] = []

    @contextmanager
    def transaction() -> Iterator[None]:
        yield
        if not commits.pop(0):
            raise RuntimeError("commit refused")

    writer = Writer(RWLock(), transaction, lambda: recovered.append(1))
    try:
        with pytest.raises(RuntimeError, match="commit refused"):
            writer.submit(lambda: "first").result(timeout=10)
        assert recovered == [1]
        assert writer.submit(lambda: "second").result(timeout=10) == "second"
    finally:
        writer.stop()


def test_a_job_that_raises_leaves_no_reference_cycle_through_the_awaiting_frame() -> None:
    """The server freezes what is alive between ticks (collector.py): a cycle alive then is only
    freed by a collection over the whole heap. An exception delivered through the writer's future
    once made one (the exception's traceback -> the awaiting frame -> the future -> the exception)."""
    import asyncio

    class Settled(Exception):
        pass

    def refuse() -> None:
        raise Settled("no")

    writer = Writer(RWLock(), settled=(Settled,))

    async def ask() -> None:
        with pytest.raises(Settled):
            await writer.run(refuse)

    try:
        asyncio.run(ask())
        with cyclic_garbage(("frame",)) as cyclic:
            asyncio.run(ask())
        assert "run" not in named(cyclic), named(cyclic)
    finally:
        writer.stop()


def test_a_background_job_lets_queued_requests_go_first_unless_it_waited_too_long() -> None:
    """`Writer.run(..., idle=True)` (the scheduling loop's pieces): while jobs are queued the
    background job waits, then runs alone; one that waited `max_defer` runs before the jobs queued
    after it; background jobs queued before a stop still run."""
    import asyncio

    order: list[str] = []
    gate = threading.Event()

    def note(name: str, wait: bool = False) -> str:
        if wait:
            gate.wait(10)
        order.append(name)
        return name

    async def scenario(writer: Writer, hold_s: float) -> list[str]:
        order.clear()
        gate.clear()
        first = asyncio.ensure_future(writer.run(lambda: note("first", wait=True)))
        await asyncio.sleep(0.05)  # the writer holds `first`
        background = asyncio.ensure_future(writer.run(lambda: note("tick"), idle=True))
        await asyncio.sleep(0.01)
        later = [asyncio.ensure_future(writer.run(lambda i=i: note(f"req{i}"))) for i in range(3)]
        await asyncio.sleep(hold_s)
        gate.set()
        await asyncio.gather(first, background, *later)
        return list(order)

    patient = Writer(RWLock(), max_defer=30.0)
    try:
        assert asyncio.run(scenario(patient, 0.05)) == ["first", "req0", "req1", "req2", "tick"]
        assert patient.batches >= 2  # the requests as one batch, the background job alone
    finally:
        patient.stop()
    hurried = Writer(RWLock(), max_defer=0.02)
    try:
        # the background job waited longer than max_defer behind `first`: it goes before the requests
        assert asyncio.run(scenario(hurried, 0.1)) == ["first", "tick", "req0", "req1", "req2"]
    finally:
        hurried.stop()

    stopping = Writer(RWLock(), max_defer=30.0)

    async def queued_then_stop() -> str:
        gate.clear()
        first = asyncio.ensure_future(stopping.run(lambda: note("first", wait=True)))
        await asyncio.sleep(0.05)
        background = asyncio.ensure_future(stopping.run(lambda: note("tick"), idle=True))
        await asyncio.sleep(0.01)
        stopper = threading.Thread(target=stopping.stop)
        stopper.start()
        await asyncio.sleep(0.05)
        gate.set()
        await first
        out = await background
        stopper.join(10)
        return out

    assert asyncio.run(queued_then_stop()) == "tick"


def test_an_overdue_background_job_never_passes_a_job_queued_before_it_and_runs_locked_at_a_stop() -> None:
    """A background job that waited `max_defer` goes before the jobs queued after it only: a request
    queued before it still runs first. One left at a stop runs under the write lock and is counted."""
    import asyncio

    lock = RWLock()
    writer = Writer(lock, max_defer=0.02)
    order: list[str] = []
    gate = threading.Event()

    async def scenario() -> None:
        busy = asyncio.ensure_future(writer.run(lambda: gate.wait(10)))
        await asyncio.sleep(0.02)
        early = asyncio.ensure_future(writer.run(lambda: order.append("request queued first")))
        await asyncio.sleep(0.01)
        background = asyncio.ensure_future(writer.run(lambda: order.append("background"), idle=True))
        await asyncio.sleep(0.01)
        late = asyncio.ensure_future(writer.run(lambda: order.append("request queued last")))
        await asyncio.sleep(0.1)  # the background job is overdue now
        gate.set()
        await asyncio.gather(busy, early, background, late)

    try:
        asyncio.run(scenario())
        assert order == ["request queued first", "background", "request queued last"]
    finally:
        writer.stop()

    stopping = Writer(lock, max_defer=30.0)
    seen: list[bool] = []
    gate.clear()

    async def left_at_stop() -> None:
        busy = asyncio.ensure_future(stopping.run(lambda: gate.wait(10)))
        await asyncio.sleep(0.02)
        background = asyncio.ensure_future(stopping.run(lambda: seen.append(lock._writer), idle=True))
        await asyncio.sleep(0.01)
        stopping._jobs.put(None)  # the stop queued behind the background job's mark
        gate.set()
        await asyncio.gather(busy, background)

    before = stopping.jobs_run
    asyncio.run(left_at_stop())
    stopping._thread.join(10)
    assert seen == [True]  # the write side was held
    assert stopping.jobs_run == before + 2
