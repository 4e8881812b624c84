"""The buckets of capacity's backlog test (K14): the jobs of one leaf with one minResources by value.

A level's verdict reads only that level's accounting and the job's minResources by value, so every job of
a bucket has the same answer (`Admission.enqueue_answers`); the bucket of each job is kept in the memo
with the objects it was worked out from, so a job asked about again costs a lookup, not its key.
"""

from __future__ import annotations

from apportion.resources import Resource

#: a minResources by value: cpu, memory and the scalars in their order (what a level's verdict reads)
ReqKey = tuple[float, float, tuple[tuple[str, float], ...]]

#: the memo's entry: the backlog's buckets (`Buckets`)
BUCKETS_MEMO = "capacity.admission-buckets"


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
