"""`suggest`: the cheapest single changes that let a waiting job start in the next session (a
reservation: at its booked start, possibly later), every kind searched (`fit`: queues, the job
itself, other jobs; `reserve`: a reservation) and each checked."""

from __future__ import annotations

from apportion.forecast.fit import KEEP, Checker, KnownStart, Search, Suggestion
from apportion.forecast.reserve import reservation_suggestion
from apportion.forecast.start import StartState


def suggest(state: StartState, uid: str, *, keep: int = KEEP, known: KnownStart | None = None,
            reference: bool = False, free_reference: bool | None = None) -> list[Suggestion]:
    """The `keep` cheapest single changes that let job `uid` start in the next session, or at a
    reservation's booked start (checked). `known`: the job's start in the forecast simulator as it is
    (no assumed runtimes), which spares running it again. `reference`: every reservation try
    simulated from now (`reserve.Rerun`) rather than from one shared forward run, each held pod
    planned apart, the jobs to free searched by `freeing.choose_reference`, and every check's jobs
    built again. `free_reference`: which search finds the jobs to free, when not as `reference` says
    (the two differ where freeing more jobs can stop the job from starting)."""
    js = state.job(uid)
    if js is None or not js.pending:
        return []
    checker = Checker(state, keep=not reference)
    starts_now = known.by(0.0) if known is not None else None
    if starts_now is None:
        starts_now = checker.starts(uid, lambda s: None)
    if starts_now:
        return []  # it starts as things are
    search = Search(state, js, checker, known, reference=reference, free_reference=free_reference)
    found: list[Suggestion] = []
    found += search.queue_raises()
    found += search.min_member()
    found += search.request()
    found += search.free()
    found += reservation_suggestion(js, search, reference=reference)
    found.sort(key=lambda s: (s.cost, s.kind, s.text))
    return found[:keep]
