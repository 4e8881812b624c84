"""The session's job order (JobOrderFn) as a sort key, where every plugin consulted orders jobs by a
value of each job alone: enqueue's votes then find the next job to vote in a queue without a scan
of compares per pop (docs/semantics.md K59).

`Dispatch.job_compare` asks the consulted plugins' `job_order` in turn, the first nonzero answer
deciding, then compares creation (a string) and uid (a string). The plugins read here answer by one
value per job: gang the job's readiness (JobReadyFn: not ready first), drf its dominant share (lower
first), priority its priority (higher first). So `compare(l, r)` is the lexicographic comparison of
(value per plugin, ..., creation, uid), provided every value compares totally: bools, ints and
strings do, floats do but for NaN, which is refused here (the caller then scans as before). Over
jobs of distinct uids the keys are distinct, so the left-to-right scan of `pop_best_index` picks the
job of the smallest key, and pops in turn take the jobs in key order.

A plugin is recognised by the function it registered being its class's own `job_order` (module and
qualified name; actions import no plugin), so a plugin by another name or a subclass that orders
otherwise is not taken for one of these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from apportion.cluster.model import JobInfo
from apportion.framework import extension as ep
from apportion.framework.queue_picker import pop_best_index
from apportion.framework.session import Session

#: a job's sort key: one value per consulted plugin, then creation and uid
JobKey = tuple[Any, ...]

_GANG = ("apportion.plugins.gang", "GangPlugin.job_order")
_DRF = ("apportion.plugins.drf", "DrfPlugin.job_order")
_PRIORITY = ("apportion.plugins.priority", "PriorityPlugin.job_order")


#: the functions recognised so far, by their (module, qualified name): a session's plugins are new
#: objects, their classes' functions the same ones
_KNOWN: dict[Any, tuple[str, str] | None] = {}


def _which(fn: Any) -> tuple[str, str] | None:
    func = getattr(fn, "__func__", None)
    if func is None or getattr(fn, "__self__", None) is None:
        return None
    try:
        return _KNOWN[func]
    except KeyError:
        which = _KNOWN[func] = getattr(func, "__module__", ""), getattr(func, "__qualname__", "")
        return which
    except TypeError:  # not hashable
        return getattr(func, "__module__", ""), getattr(func, "__qualname__", "")


class Untotal(Exception):
    """A job's value under some plugin's order does not compare totally (a NaN share, a priority that
    is not an int): the keys do not stand for the comparison."""


def job_keys(ssn: Session) -> Callable[[JobInfo], JobKey] | None:
    """A function giving a job's sort key under the session's job order (raising `Untotal` for a job
    whose values do not compare totally), or None when some consulted JobOrderFn is not one this module
    reads. The creation and uid are taken as they are (the caller checks they are strings)."""
    parts: list[Callable[[JobInfo], Any]] = []
    for _, _, fn in ssn.consulted(ep.JOB_ORDER):
        which = _which(fn)
        plugin = getattr(fn, "__self__", None)
        if which == _GANG:
            # JobReadyFn's answer: a bool (its own code: a comparison, `not`, `all`)
            parts.append(plugin.job_ready)  # type: ignore[union-attr]  # a GangPlugin's
        elif which == _DRF:
            parts.append(_share_of(plugin.shares))  # type: ignore[union-attr]  # a DrfPlugin's
        elif which == _PRIORITY:
            parts.append(_minus_priority)
        else:
            return None
    if not parts:
        return _tail
    if len(parts) == 1:
        a, = parts
        return lambda job: (a(job), job.creation, job.uid)
    if len(parts) == 2:
        a, b = parts
        return lambda job: (a(job), b(job), job.creation, job.uid)
    if len(parts) == 3:
        a, b, c = parts
        return lambda job: (a(job), b(job), c(job), job.creation, job.uid)
    return lambda job: (*[part(job) for part in parts], job.creation, job.uid)


def _tail(job: JobInfo) -> JobKey:
    return job.creation, job.uid


def _share_of(shares: dict[str, float]) -> Callable[[JobInfo], float]:
    """drf's value: the job's dominant share as its job_order reads it (lower first)."""
    get = shares.get

    def share(job: JobInfo) -> float:
        s = get(job.uid, 0.0)
        if s != s:
            raise Untotal
        return s

    return share


def _minus_priority(job: JobInfo) -> int:
    """priority's value: higher first, so its negation ascending."""
    p = job.priority
    if type(p) is not int:
        raise Untotal
    return -p


def first_candidate(jobs: list[JobInfo], whys: list[str | None],
                    key_of: Callable[[JobInfo], JobKey]) -> tuple[int, list[int]] | None:
    """Where a queue's pops, scanning with the job order `key_of` gives as keys, first reach a job whose
    answer (`whys`, in the same order) is None: (its index, the indices of the jobs popped before it, in
    pop order: the jobs of smaller keys). None when some job's values do not compare totally (`Untotal`,
    a creation or uid that is not a string), or no job's answer is None."""
    try:
        keys = list(map(key_of, jobs))
    except Untotal:
        return None
    if not all(type(job.creation) is str and type(job.uid) is str for job in jobs):
        return None
    best = -1
    for i, why in enumerate(whys):
        if why is None and (best < 0 or keys[i] < keys[best]):
            best = i
    if best < 0:
        return None
    least = keys[best]
    before = sorted((i for i, k in enumerate(keys) if k < least), key=keys.__getitem__)
    return best, before


def first_candidate_reference(jobs: list[JobInfo], whys: list[str | None],
                              compare: Callable[[JobInfo, JobInfo], int]) -> tuple[int, list[int]] | None:
    """`first_candidate` by the pops themselves (`pop_best_index` with the session's comparison) over
    copies of the lists (the reference)."""
    left = list(range(len(jobs)))
    popped: list[int] = []
    while left:
        at = pop_best_index([jobs[i] for i in left], compare)
        i = left.pop(at)
        if whys[i] is None:
            return i, popped
        popped.append(i)
    return None
