"""The buckets of enqueue's backlog kept per queue from one ask to the next (docs/semantics.md K33).

enqueue asks capacity's backlog test (`Admission.enqueue_answers`) about its pending jobs queue after
queue (`_Votes.rest`, actions/enqueue.py): twice in a forecast's run session, and from one ask to the
next most queues' pending lists are the same job objects with the same minResources objects (in the
forecast benchmark 34 of the 35 queues with work, session after session). Every job's bucket (its
leaf and minResources by value, buckets.py) is a dict lookup and two comparisons per job. `QueueRuns`
keeps, per queue, the last run of its jobs met in an ask (the jobs, their minResources objects and
their buckets in order): a run that is the same jobs, with the same minResources objects and the same
queue, has the same buckets, checked by three passes in C rather than a Python step per job, and its
answers are its few distinct buckets' answers spread over the run.

Exact: a job's bucket is a function of its queue and its minResources by value, and `Buckets.of_job`
already takes the same minResources object to have the same value. The kept buckets are numbers that
hold until `Buckets.forget_gone` drops the numbering, which drops what is kept here too. Under
`APPORTION_CHECK_STATE=1` every kept run's buckets are compared with the buckets worked out by value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import repeat
from operator import attrgetter, eq, is_

from apportion.cluster.model import JobInfo
from apportion.resources import Resource
from apportion.state import check

#: the memo's entry: the runs kept (`QueueRuns`)
RUNS_MEMO = "capacity.admission-runs"

_MIN_RESOURCES = attrgetter("min_resources")
_QUEUE = attrgetter("queue")

#: a kept run: its jobs, their minResources objects, their buckets in order and its distinct buckets
_Run = tuple[list[JobInfo], list[Resource | None], list[int], list[int]]


class QueueRuns:
    """Per queue, the last run of its jobs an ask met, with their buckets (module docstring)."""

    #: False: every run's buckets are worked out job by job (the reference the tests compare with)
    enabled = True

    def __init__(self) -> None:
        self.runs: dict[str, _Run] = {}

    def clear(self) -> None:
        """Forget every run (the buckets' numbering was dropped)."""
        self.runs.clear()

    def split(self, jobs: list[JobInfo], bucket_of: Callable[[JobInfo], int],
              queues: int) -> Iterator[tuple[list[int], list[int]]]:
        """Per run of consecutive jobs of one queue in `jobs`, in order: its jobs' buckets and its
        distinct buckets. `bucket_of(job)` is a job's bucket, `queues` how many queues the session
        has (what is kept is dropped when it outgrows them)."""
        runs = self.runs
        if len(runs) > 2 * queues + 64:
            runs.clear()
        enabled = self.enabled
        checking = check.enabled()
        n = len(jobs)
        i = 0
        while i < n:
            queue = jobs[i].queue
            kept = runs.get(queue) if enabled else None
            if kept is not None:
                end = i + len(kept[0])
                if end <= n and (end == n or jobs[end].queue != queue):
                    part = jobs[i:end]
                    if (all(map(is_, part, kept[0])) and all(map(is_, map(_MIN_RESOURCES, part), kept[1]))
                            and all(map(eq, map(_QUEUE, part), repeat(queue)))):
                        if checking and [bucket_of(job) for job in part] != kept[2]:
                            raise check.StateCheckError(f"{check.ENV}: the buckets kept for queue {queue}'s "
                                                        "pending jobs differ from their own")
                        yield kept[2], kept[3]
                        i = end
                        continue
            end = i + 1
            while end < n and jobs[end].queue == queue:
                end += 1
            part = jobs[i:end]
            ids = [bucket_of(job) for job in part]
            distinct = list(dict.fromkeys(ids))
            if enabled:
                runs[queue] = (part, list(map(_MIN_RESOURCES, part)), ids, distinct)
            yield ids, distinct
            i = end
