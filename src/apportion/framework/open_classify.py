"""Which jobs a session open takes out of the last open's node side and places again
(framework/open_state.py): those the snapshot's jobs delta names and that are not the last open's object
with its task statuses and phase (docs/semantics.md K17), while the jobs kept stay in the last open's
relative order (a full placement's order is the session's job order)."""

from __future__ import annotations

from apportion.cluster.model import JobInfo
from apportion.framework.open_parts import OpenBase, Session
from apportion.state import check


def positions(base: OpenBase) -> dict[str, int]:
    """Each job uid's position in the base's order (made once, and handed on while the order stays)."""
    if base.positions is None:
        base.positions = {uid: i for i, uid in enumerate(base.order)}
    return base.positions


def classify(ssn: Session, base: OpenBase, now: list[str],
             same_order: bool | None = None) -> tuple[list[str], list[str]] | None:
    """The jobs to take out of the base and the jobs to place; None when the kept jobs' order moved.
    `now` is the session's job order (`same_order`: whether it is the base's, when the caller compared
    them already). With the snapshot's jobs delta from the base's snapshot, only the jobs it names are
    compared with the base (docs/semantics.md K17); `classify_reference` compares every job."""
    delta = ssn.snapshot.jobs_delta
    look = delta.since_last(base.snapshot) if delta is not None else None
    if look is None:
        return classify_reference(ssn, base)
    carried = base.jobs
    jobs = ssn.jobs
    if same_order is None:
        same_order = now == base.order
    changed: list[str] = []
    if not look:
        named: list[str] | tuple[()] = ()
    elif same_order:
        # the session's order is the base's: the named jobs in it without a pass over every job
        pos = positions(base)
        named = sorted((u for u in look if u in pos), key=pos.__getitem__)
    else:
        named = [u for u in now if u in look]
    for uid in named:
        job = jobs[uid]
        c = carried.get(uid)
        if c is None or c[0] is not job or c[1] != job.version or c[4] is not job.phase:
            changed.append(uid)
    moved = set(changed)
    out = {uid for uid in look if uid in carried and (uid in moved or uid not in jobs)}
    if same_order:
        # every job of the base is still here (the orders are equal) and so out is the changed jobs
        # the base holds; taking the same jobs out of equal orders leaves equal orders
        got: tuple[list[str], list[str]] | None = [u for u in changed if u in out], changed
    # the relative order of the kept jobs must be the base's, as the full comparison checks
    elif ([u for u in now if u not in moved] if moved else now) != (
            [u for u in base.order if u not in out] if out else base.order):
        got = None
    else:
        got = ([u for u in base.order if u in out] if out else []), changed
    if check.enabled() and got != classify_reference(ssn, base):
        raise check.StateCheckError(f"{check.ENV}: session open's jobs compared from the snapshot's delta differ "
                                    "from every job compared with the last open's")
    return got


def classify_reference(ssn: Session, base: OpenBase) -> tuple[list[str], list[str]] | None:
    """`classify` comparing every job with the base (the reference)."""
    carried = base.jobs
    changed: list[str] = []
    kept: list[str] = []
    for uid, job in ssn.jobs.items():
        c = carried.get(uid)
        if c is None or c[0] is not job or c[1] != job.version or c[4] is not job.phase:
            changed.append(uid)
        else:
            kept.append(uid)
    if len(kept) != len(carried):
        keep = set(kept)
        if [u for u in base.order if u in keep] != kept:
            return None
        gone = [u for u in base.order if u not in keep]
    else:
        if base.order != kept:
            return None
        gone = []
    return gone, changed


def same_relative_order(now: list[str], base: OpenBase, jobs: dict[str, JobInfo]) -> bool:
    """Whether the jobs of both this open and the base's are in the same relative order in both."""
    held = base.jobs
    return [u for u in now if u in held] == [u for u in base.order if u in jobs]


__all__: list[str] = ["classify", "classify_reference", "positions", "same_relative_order"]
