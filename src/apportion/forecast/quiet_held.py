"""What the early quiet test (forecast/quiet_early.py, semantics F3) keeps of each job beside its facts,
`_Held`, and the lean step's pieces (`LEAN_STEP`, semantics F15): whether a job's facts are in any of
the test's sums (`in_no_sum`), and the backlog watch charged from the held records' kept sums
(`charge_kept`)."""

from __future__ import annotations

from dataclasses import dataclass

from apportion.forecast.quiet_anchor import _Placed
from apportion.forecast.quiet_kept import Facts
from apportion.plugins.capacity.backlog_watch import BacklogWatch, _delta, _delta_reference, _nonzero
from apportion.plugins.capacity.ledger import Amount
from apportion.resources import CPU, MEMORY
from apportion.state import check


@dataclass(slots=True)
class _Held:
    """What a job's change is measured from, by value (a session run after the facts were worked out
    may have changed the job object in place): its queue, what capacity charged for it (None: not
    exact) and its tasks that take their request off a node's FutureIdle, by task key."""

    queue: str
    amounts: tuple[Amount | None, ...] | None
    placed: dict[str, _Placed]
    #: `amounts`' allocated + inqueue - elastic per dimension (`_watched`), once read (`LEAN_STEP`)
    watched: tuple[int, int, dict[str, int]] | None = None


def in_no_sum(f: Facts) -> bool:
    """The facts put their job in none of `QuietTest`'s sums (`drop` and `add` touch only the facts and
    inexact entries of such a job)."""
    return (f.moved is None and f.key is None and f.admission is None and not f.unschedulable and not f.best_effort
            and not f.pending and not f.no_min_resources)


def _watched(held: _Held) -> tuple[int, int, dict[str, int]] | None:
    """What capacity's backlog test reads of the held record's charged amounts: allocated + inqueue -
    elastic as integers per dimension (cpu, memory, then each scalar as first met: `_delta` from no
    amounts), kept on the record; None when a scalar is named cpu or memory (`_delta` then leaves the
    sum to `_delta_reference`)."""
    assert held.amounts is not None
    total = _delta(None, held.amounts)
    if total is None:
        return None
    cpu, memory = total.pop(CPU), total.pop(MEMORY)
    got = held.watched = (cpu, memory, total)
    return got


def charge_kept(watch: BacklogWatch, old: _Held, now: _Held, checking: bool) -> None:
    """`watch.charge(now.queue, old.amounts, now.amounts)` from the held records' kept sums
    (`_watched`, made when first read): the difference in `_delta`'s order (cpu, memory, then the
    scalars of `old` and those only `now` names, each as first met), compared with `_delta_reference`
    under the self-check. A scalar named cpu or memory: `charge` (which sums them with those)."""
    was = old.watched if old.watched is not None else _watched(old)
    got = _watched(now)
    assert old.amounts is not None and now.amounts is not None
    if was is None or got is None:
        watch.charge(now.queue, old.amounts, now.amounts)
        return
    delta = {CPU: got[0] - was[0], MEMORY: got[1] - was[1]}
    before, after = was[2], got[2]
    for n, v in before.items():
        delta[n] = after.get(n, 0) - v
    for n, v in after.items():
        if n not in before:
            delta[n] = v
    if checking and _nonzero(delta) != _nonzero(_delta_reference(old.amounts, now.amounts)):
        raise check.StateCheckError(f"{check.ENV}: job of queue {now.queue}: the backlog watch's difference "
                                    f"from the kept sums is {delta}, from the charged amounts "
                                    f"{_delta_reference(old.amounts, now.amounts)}")
    watch.charge_delta(now.queue, delta)
