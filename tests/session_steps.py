"""Random event steps played on one cache, with a session at every `SESSION` step: the driver the
carried-state tests (enqueue's carried firsts, capacity's carried plans, enqueue by bucket) share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apportion.engine import CycleResult, dispatch, open_session, run_session
from apportion.framework.conf import SchedulerConf
from apportion.framework.session import Session
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import WatchEvent
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater

from k8s import cycle


def play(steps: list[tuple[str, Any]], base: Callable[[SchedulerCache], None], conf: SchedulerConf,
         observe: Callable[[int, Session, CycleResult], Any],
         before: Callable[[int, Session], None] | None = None) -> list[Any]:
    """`steps` as (kind, events) pairs on a fresh cache set up by `base`: events applied in order, and at a
    step of kind `SESSION` a session opened over the cache's kept snapshot and memo, run, and its
    result dispatched back to the cache (`before(step index, session)` first, when given). What `observe(step index, session, result)` makes of each
    session, in order."""
    cache = SchedulerCache(report=lambda line: None)
    base(cache)
    out: list[Any] = []
    for i, (kind, events) in enumerate(steps):
        if kind != "SESSION":
            for typ, obj in events:
                cache.apply(WatchEvent(typ, obj, f"event {i}"))
            continue
        snap = cache.snapshot(keep=True)
        snap.memo = cache.memo
        ssn = open_session(snap, conf, session_id=f"s{i}")
        if before is not None:
            before(i, ssn)
        result = run_session(ssn)
        out.append(observe(i, ssn, result))
        dispatch(result, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
    return out


def decided(i: int, ssn: Session, result: CycleResult) -> tuple[list[tuple[str, str]], list[tuple[str, list[str]]]]:
    """A session's phases and explanations, by uid (what the carried-state tests compare)."""
    return (sorted((uid, job.phase.value) for uid, job in ssn.jobs.items()),
            sorted((k, list(v)) for k, v in ssn.explanations.items()))


def play_texts(steps: list[tuple[str, Any]], base: Callable[[SchedulerCache], None], conf: SchedulerConf,
               texts: list[bool]) -> list[Any]:
    """`play` with each session making why-pending texts or not (`texts`, in turn), observing the jobs'
    phases, the binds and, where the session makes them, the explanations: what enqueue's fast paths
    must leave as they were."""

    def with_texts(i: int, ssn: Session) -> None:
        ssn.why_pending = texts[i % len(texts)]

    def observe(i: int, ssn: Session, result: CycleResult) -> Any:
        phases = sorted((uid, job.phase.value) for uid, job in ssn.jobs.items())
        explained = sorted((k, list(v)) for k, v in ssn.explanations.items()) if ssn.why_pending else None
        return phases, sorted(result.binds.items()), explained

    return play(steps, base, conf, observe, with_texts)


def cycles_alike(objs: list[dict[str, Any]], conf: str, switches: Callable[[Any, bool], None],
                 monkeypatch: Any) -> None:
    """`cycle` over the objects decides and explains alike (its JSON) with `switches(monkeypatch, on)`
    on, under the self-check, and off (the reference)."""
    monkeypatch.setenv(check.ENV, "1")
    switches(monkeypatch, True)
    fast = cycle(objs, conf).to_json()
    switches(monkeypatch, False)
    assert fast == cycle(objs, conf).to_json()
