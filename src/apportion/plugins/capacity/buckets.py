"""The buckets of capacity's backlog test (K14): the jobs of one leaf with one minResources by value.

A level's verdict reads only that level's accounting and the job's minResources by value, so every job of
a bucket has the same answer (`Admission.enqueue_answers`); the bucket of each job is kept in the memo
with the objects it was worked out from, so a job asked about again costs a lookup, not its key.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from apportion.resources import Resource

#: a minResources by value: cpu, memory and the scalars in their order (what a level's verdict reads)
ReqKey = tuple[float, float, tuple[tuple[str, float], ...]]

#: the memo's entry: the backlog's buckets (`Buckets`)
BUCKETS_MEMO = "capacity.admission-buckets"
#: a refusal's explanation in answers asked without texts (`BucketAnswers.texts`): its caller reads none
UNREAD = "refused (no explanation asked for)"


class Buckets:
    """The backlog test's buckets: a leaf (a job's queue) and a minResources by value (None: none), each
    a small number, and the bucket of every job asked about, kept with the job's minResources object
    and queue (a job whose minResources is replaced or whose queue moves is put in its bucket again)."""

    def __init__(self) -> None:
        #: per job uid: its minResources object, its queue and its bucket
        self.of_job: dict[str, tuple[Resource | None, str, int]] = {}
        #: the buckets' numbers by (queue, minResources by value)
        self.ids: dict[tuple[str, ReqKey | None], int] = {}
        #: per bucket: its queue, its minResources by value, and a minResources of that value
        self.info: list[tuple[str, ReqKey | None, Resource | None]] = []
        #: how many times the numbers were dropped (a number handed out before names another bucket)
        self.epoch = 0

    def forget_gone(self, jobs: int) -> bool:
        """Drop what is kept when it far outgrows the `jobs` a session holds (jobs gone, shapes not seen
        again): it is worked out again as asked. True when the buckets' numbers were dropped too (a
        number may then name another bucket)."""
        if len(self.of_job) > 2 * jobs + 1024:
            self.of_job.clear()
        if len(self.info) > 2 * jobs + 1024:
            self.of_job.clear()
            self.ids.clear()
            self.info.clear()
            self.epoch += 1
            return True
        return False

    def bucket(self, queue: str, mr: Resource | None) -> int:
        """The number of the bucket of a job of the queue with that minResources."""
        key = None if mr is None else (mr.cpu, mr.memory, tuple(mr.scalars.items()))
        i = self.ids.get((queue, key))
        if i is None:
            i = self.ids[(queue, key)] = len(self.info)
            self.info.append((queue, key, None if mr is None else mr.clone()))
        return i


class _Answering(Protocol):
    """What `BucketAnswers` reads of capacity's admission (plugins/capacity/admission.py)."""

    _buckets: Buckets
    share_log: list[str]
    _inqueue_lowered: int

    def _vote_levels(self) -> Any: ...

    def _bucket_answers(self, wanted: Iterable[int], levels: Any, texts: bool = True) -> dict[int, str | None]: ...


class BucketAnswers:
    """The answers of buckets by number as things stand when called (`Admission.enqueue_buckets`); None
    from a call when the numbers were dropped since they were handed out. With `texts` False, each
    refusal is `UNREAD` rather than its explanation (the caller reads none, K43)."""

    __slots__ = ("buckets", "epoch", "log_at", "lowered_at", "plugin", "texts")

    def __init__(self, plugin: _Answering, texts: bool = True) -> None:
        self.plugin = plugin
        self.texts = texts
        self.buckets = plugin._buckets
        self.epoch = plugin._buckets.epoch
        #: at the last call: how long the share log was, and how many admissions had lowered some
        #: inqueue amount (None: no call yet)
        self.log_at: int | None = None
        self.lowered_at = 0

    @property
    def numbering(self) -> tuple[Buckets, int]:
        """What the numbers handed out with these answers hold for: the buckets object and its epoch (a
        number names one queue and minResources by value while both are the same)."""
        return self.buckets, self.epoch

    def __call__(self, wanted: Iterable[int]) -> dict[int, str | None] | None:
        """Per bucket number in `wanted`, None when a vote cast now on a job of it would admit it, else
        that refusal's explanation; None when the numbers were dropped since."""
        plugin = self.plugin
        levels = plugin._vote_levels()
        if levels is None or plugin._buckets is not self.buckets or self.buckets.epoch != self.epoch:
            return None
        self.log_at, self.lowered_at = len(plugin.share_log), plugin._inqueue_lowered
        return plugin._bucket_answers(wanted, levels, self.texts)

    def admits(self, bucket: int) -> bool | None:
        """Whether a vote cast now on a job of the bucket would admit it (None: the numbers were dropped
        since they were handed out). Unlike a call, it leaves the point `refusals_hold` compares with
        where the last call put it: the refusals that call gave are still the ones vouched for."""
        plugin = self.plugin
        levels = plugin._vote_levels()
        if levels is None or plugin._buckets is not self.buckets or self.buckets.epoch != self.epoch:
            return None
        return plugin._bucket_answers((bucket,), levels, False)[bucket] is None

    def refusals_hold(self) -> bool:
        """Whether every bucket the last call refused would be refused now: since then no event moved an
        accounting (the share log did not grow) and every admission added amounts >= 0 to inqueue along
        its path (`Admission.job_enqueued`). A level's test then reads a need (minResources + allocated
        + inqueue - elastic) no smaller on any dimension, against the same realCapability, and a
        bucket's plan is fixed for the session (K40)."""
        plugin = self.plugin
        return (self.log_at is not None and len(plugin.share_log) == self.log_at
                and plugin._inqueue_lowered == self.lowered_at)
