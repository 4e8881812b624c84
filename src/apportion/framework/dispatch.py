"""The session's extension-point dispatchers: which plugins a point consults, and how their answers combine.

Follows Volcano's `framework/session_plugins.go`: every dispatcher walks the conf's tiers in order and
consults a plugin only if it registered the point and its switch for that point is on (§4.2 of the
semantics guide); orders fall back to creation time then name, votes are tiered, victim sets are
intersected within a tier. `Session` (framework/session.py) inherits these; the node-choice half of the
dispatchers (predicates, scoring) is in framework/node_choice.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Protocol

from apportion.cluster.model import JobInfo, QueueInfo, TaskInfo, default_task_compare
from apportion.framework import extension as ep
from apportion.framework.conf import PluginOption, SchedulerConf
from apportion.framework.interface import ExtensionPoints, Fn
from apportion.framework.queue_picker import PickerFactory, QueuePicker, ScanPicker


class KeyAnswers(Protocol):
    """The answers of an enqueue test's keys (`Dispatch.enqueue_buckets`)."""

    def __call__(self, wanted: Iterable[Any]) -> dict[Any, str | None] | None:
        """Per key in `wanted`, the answer of its jobs as things stand (None: ask the test itself)."""

    def refusals_hold(self) -> bool:
        """Whether every key the last call refused would be refused now (by another explanation,
        perhaps): only admissions that can only refuse more moved the accounting since."""

#: an enqueue test in two halves: per job a key and the answers of keys (`Dispatch.add_enqueue_answers`);
#: its second argument False: the caller reads no refusal's explanation (any text that is not None will do)
BucketsFn = Callable[[list[JobInfo], bool], tuple[list[Any], KeyAnswers] | None]


class _Bucketed:
    """An enqueue answers test (`add_enqueue_answers`) that also gives its answers per key."""

    __slots__ = ("buckets", "fn")

    def __init__(self, fn: Callable[[list[JobInfo]], list[str | None]], buckets: BucketsFn) -> None:
        self.fn = fn
        self.buckets = buckets

    def __call__(self, jobs: list[JobInfo]) -> list[str | None]:
        return self.fn(jobs)


class Dispatch(ExtensionPoints):
    """The dispatchers of every extension point except node choice; the session fills the tables they read."""

    conf: SchedulerConf
    jobs: dict[str, JobInfo]
    queues: dict[str, QueueInfo]
    fast_queue_pickers: bool
    #: per point, the (tier, option, fn) list dispatchers walk; rebuilt when a plugin registers.
    _dispatch: dict[str, list[tuple[int, PluginOption, Fn]]]
    node_local_keys: dict[str, Callable[[TaskInfo], Hashable | None]]
    node_row_fns: dict[str, Callable[[TaskInfo, int], Any]]
    queue_pickers: dict[str, PickerFactory]
    #: plugins' tests of a whole backlog against their JobEnqueueable (add_enqueue_test)
    enqueue_tests: dict[str, Callable[[list[JobInfo]], list[JobInfo]]]
    #: plugins' answers of their JobEnqueueable for a whole backlog (add_enqueue_answers)
    enqueue_answer_tests: dict[str, Callable[[list[JobInfo]], list[str | None]]]
    fast_enqueue_refusals: bool

    # ================================================================= registration
    def _fns_changed(self, point: str) -> None:
        self._dispatch.pop(point, None)

    def add_node_local_key(self, plugin: str, fn: Callable[[TaskInfo], Hashable | None],
                           row_fn: Callable[[TaskInfo, int], Any] | None = None) -> None:
        """Vouch that the plugin's predicate / node-order answer for a node depends only on that node and
        on what `fn(task)` summarises (None: not for this task), and so do the predicate's reasons (allocate
        gives a failed choice again to a task of the same key: node_choice.FailedChoice). Enables the
        placement cache.

        `row_fn(task, row)` is the same answer for one node, computed without arrays: (passes,
        unresolvable) for a predicate, the score for a node-order function. It must equal the vectorised
        function's answer for that row exactly; the cache refreshes the node a placement touched with it,
        where a numpy call on a one-row array costs more in overhead than the arithmetic.
        """
        self.node_local_keys[plugin] = fn
        if row_fn is not None:
            self.node_row_fns[plugin] = row_fn

    def add_queue_picker(self, plugin: str, factory: PickerFactory) -> None:
        """Offer a picker that finds the best queue faster under the plugin's own queue order."""
        self.queue_pickers[plugin] = factory

    def add_enqueue_test(self, plugin: str, fn: Callable[[list[JobInfo]], list[JobInfo]]) -> None:
        """Offer a test of a whole backlog against the plugin's JobEnqueueable: `fn(jobs)` is the jobs
        that function, called now on each job, would not REJECT; when there are none, it has recorded
        each job's explanation as that function records it (else it has recorded nothing)."""
        self.enqueue_tests[plugin] = fn

    def enqueue_admissible(self, jobs: list[JobInfo]) -> list[JobInfo] | None:
        """The jobs the JobEnqueueable vote would admit if cast now on each, as the one plugin consulted
        there shows it (add_enqueue_test); when there are none, every refusal has been explained. None
        when it cannot be shown that way (the caller votes job by job).

        A refusal changes nothing a later vote reads, so while votes refuse, the order they are cast in
        (enqueue's queue order) cannot matter, nor can their number."""
        fns = self._consulted(ep.JOB_ENQUEUEABLE)
        if len(fns) != 1 or not self.fast_enqueue_refusals:
            return None
        test = self.enqueue_tests.get(fns[0][1].name)
        return None if test is None else test(jobs)

    def add_enqueue_answers(self, plugin: str, fn: Callable[[list[JobInfo]], list[str | None]],
                            buckets: BucketsFn | None = None) -> None:
        """Offer the answers of the plugin's JobEnqueueable for a whole backlog: `fn(jobs)` is, per job,
        None when that function, called now on the job, would not REJECT it, else the explanation that
        refusal records (its only side effect); `fn` records nothing.

        `buckets(jobs)`, when given, is `fn` in two halves (`enqueue_buckets`): a key per job, jobs of
        one key having one answer, and a function giving the answers of keys as things stand when it is
        called (None: not any more; ask `fn`), or None when `fn` must be asked."""
        self.enqueue_answer_tests[plugin] = fn if buckets is None else _Bucketed(fn, buckets)

    def enqueue_answers(self, jobs: list[JobInfo]) -> list[str | None] | None:
        """Per job, None when the JobEnqueueable vote cast now on it would admit it, else the explanation
        its refusal would record, as the one plugin consulted there shows it (add_enqueue_answers);
        nothing is recorded. None when it cannot be shown that way (the caller votes job by job).

        A refusal changes nothing a later vote reads, so the answers hold, vote after vote, until one
        admits."""
        fns = self._consulted(ep.JOB_ENQUEUEABLE)
        if len(fns) != 1 or not self.fast_enqueue_refusals:
            return None
        test = self.enqueue_answer_tests.get(fns[0][1].name)
        return None if test is None else test(jobs)

    def enqueue_buckets(self, jobs: list[JobInfo], texts: bool = True) -> tuple[list[Any], KeyAnswers] | None:
        """`enqueue_answers` in two halves, as the one plugin consulted offers them (`add_enqueue_answers`'
        `buckets`): per job a key, jobs of one key having one answer, and a function giving the answers
        of keys as things stand when it is called (its None: ask `enqueue_answers`); nothing is
        recorded. None when they cannot be had that way. `texts` False: the caller reads no refusal's
        explanation, only whether there is one (the plugin may answer any text, K43)."""
        fns = self._consulted(ep.JOB_ENQUEUEABLE)
        if len(fns) != 1 or not self.fast_enqueue_refusals:
            return None
        test = self.enqueue_answer_tests.get(fns[0][1].name)
        return test.buckets(jobs, texts) if isinstance(test, _Bucketed) else None

    def queue_picker(self, queues: list[QueueInfo]) -> QueuePicker:
        """The queues to visit, best first: the plugin's picker when it alone orders queues, else the scan."""
        fns = self._consulted(ep.QUEUE_ORDER)
        if len(fns) == 1 and self.fast_queue_pickers:
            factory = self.queue_pickers.get(fns[0][1].name)
            if factory is not None:
                return factory(queues, self.queue_compare)
        return ScanPicker(queues, self.queue_compare)

    def _enabled(self, opt: PluginOption, point: str) -> bool:
        gates = ep.GATES[point]
        return not gates or any(opt.enabled(g) for g in gates)

    def _consulted(self, point: str) -> list[tuple[int, PluginOption, Fn]]:
        """(tier index, option, fn) for every enabled plugin that registered the point, in order."""
        cached = self._dispatch.get(point)
        if cached is not None:
            return cached
        table = self.fns[point]
        out = []
        for tier_index, tier in enumerate(self.conf.tiers):
            for opt in tier.plugins:
                fn = table.get(opt.name)
                if fn is not None and self._enabled(opt, point):
                    out.append((tier_index, opt, fn))
        self._dispatch[point] = out
        return out

    def consulted(self, point: str) -> list[tuple[int, PluginOption, Fn]]:
        """(tier index, option, fn) of every plugin the dispatcher of `point` consults, in order."""
        return self._consulted(point)

    def has_fn(self, point: str) -> bool:
        """Whether any plugin the point's dispatcher consults registered it."""
        return bool(self._consulted(point))

    # ================================================================= orders
    def queue_compare(self, l: QueueInfo, r: QueueInfo) -> int:
        """QueueOrderFn: the plugins' order, then creation time, then name; negative when `l` goes first."""
        for _, _, fn in self._consulted(ep.QUEUE_ORDER):
            order = fn(l, r)
            if order:
                return order
        if l.creation != r.creation:
            return -1 if l.creation < r.creation else 1
        return -1 if l.name < r.name else (1 if l.name > r.name else 0)

    def job_compare_plugins(self, l: JobInfo, r: JobInfo) -> int:
        """The plugins' JobOrderFn answer alone (0 when none decides)."""
        for _, _, fn in self._consulted(ep.JOB_ORDER):
            order = fn(l, r)
            if order:
                return order
        return 0

    def job_compare(self, l: JobInfo, r: JobInfo) -> int:
        """JobOrderFn: the plugins' order, then creation time, then uid; negative when `l` goes first."""
        order = self.job_compare_plugins(l, r)
        if order:
            return order
        if l.creation != r.creation:
            return -1 if l.creation < r.creation else 1
        return -1 if l.uid < r.uid else (1 if l.uid > r.uid else 0)

    def task_compare(self, l: TaskInfo, r: TaskInfo) -> int:
        """TaskOrderFn: the plugins' order, then Volcano's default task comparison."""
        for _, _, fn in self._consulted(ep.TASK_ORDER):
            order = fn(l, r)
            if order:
                return order
        return default_task_compare(l, r)

    def victim_queue_compare(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> int:
        """VictimQueueOrderFn: the plugins' order of two victims' queues for the preemptor's queue; with no
        plugin, the reverse of the queue order."""
        fns = self._consulted(ep.VICTIM_QUEUE_ORDER)
        for _, _, fn in fns:
            order = fn(l, r, preemptor)
            if order:
                return order
        if fns:
            return 0
        return -self.queue_compare(l, r)

    def victim_compare(self, l: TaskInfo, r: TaskInfo, preemptor: TaskInfo | None) -> int:
        """BuildVictimsPriorityQueue's order: negative when l is evicted before r."""
        if l.job == r.job:
            return -self.task_compare(l, r)
        lj, rj = self.jobs.get(l.job), self.jobs.get(r.job)
        if lj is None or rj is None:
            if lj is None and rj is not None:
                return -1
            if rj is None and lj is not None:
                return 1
            return -1 if l.uid > r.uid else (1 if l.uid < r.uid else 0)
        if lj.queue != rj.queue and preemptor is not None and preemptor.job in self.jobs:
            pq = self.queues[self.jobs[preemptor.job].queue]
            order = self.victim_queue_compare(self.queues[lj.queue], self.queues[rj.queue], pq)
            if order:
                return order
        order = -self.job_compare_plugins(lj, rj)
        if order:
            return order
        return -self.task_compare(l, r)

    def sort_victims(self, victims: list[TaskInfo], preemptor: TaskInfo | None) -> list[TaskInfo]:
        """The victims in the order they are evicted (victim_compare)."""
        def cmp(a: TaskInfo, b: TaskInfo) -> int:
            return self.victim_compare(a, b, preemptor)

        return sorted(victims, key=functools.cmp_to_key(cmp))

    # ================================================================= job-level votes
    def job_valid(self, job: JobInfo) -> tuple[bool, str]:
        """JobValid: (valid, the reason of the first plugin that says no)."""
        for _, _, fn in self._consulted(ep.JOB_VALID):
            ok, msg = fn(job)
            if not ok:
                return False, msg
        return True, ""

    def job_ready(self, job: JobInfo) -> bool:
        """JobReady: every consulted plugin says the job is ready."""
        for _, _, fn in self._consulted(ep.JOB_READY):  # noqa: SIM110 - per task in allocate: no generator
            if not fn(job):
                return False
        return True

    def _vote(self, point: str, job: JobInfo) -> bool:
        tier_of_permit: int | None = None
        current_tier = -1
        for tier_index, _, fn in self._consulted(point):
            if tier_index != current_tier:
                if tier_of_permit is not None:
                    return True
                current_tier = tier_index
            res = fn(job)
            if res < 0:
                return False
            if res > 0:
                tier_of_permit = tier_index
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        """JobPipelined: the tiered vote (a reject refuses; a tier with a permit and no reject admits; all
        abstaining admits)."""
        return self._vote(ep.JOB_PIPELINED, job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        """JobEnqueueable: the tiered vote, as job_pipelined."""
        return self._vote(ep.JOB_ENQUEUEABLE, job)

    def job_enqueued(self, job: JobInfo) -> None:
        """JobEnqueued: tell every consulted plugin that enqueue admitted the job."""
        for _, _, fn in self._consulted(ep.JOB_ENQUEUED):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """JobStarving: the first tier with a plugin decides, all its plugins agreeing; False with none."""
        decided_tier: int | None = None
        result = True
        for tier_index, _, fn in self._consulted(ep.JOB_STARVING):
            if decided_tier is not None and tier_index != decided_tier:
                break
            decided_tier = tier_index
            result = result and bool(fn(job))
        return result if decided_tier is not None else False

    # ================================================================= queue-level votes
    def overused(self, queue: QueueInfo) -> bool:
        """Overused: some consulted plugin says the queue is overused."""
        return any(fn(queue) for _, _, fn in self._consulted(ep.OVERUSED))

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Allocatable: every consulted plugin lets the queue take the task now."""
        for _, _, fn in self._consulted(ep.ALLOCATABLE):  # noqa: SIM110 - per task in allocate: no generator
            if not fn(queue, task):
                return False
        return True

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Preemptive: every consulted plugin lets the queue reclaim for the task."""
        return all(fn(queue, task) for _, _, fn in self._consulted(ep.PREEMPTIVE))

    # ================================================================= victims
    def _victims(self, point: str, evictor: TaskInfo, evictees: list[TaskInfo]) -> list[TaskInfo]:
        current_tier = -1
        victims: list[TaskInfo] | None = None
        stopped = False
        for tier_index, _, fn in self._consulted(point):
            if tier_index != current_tier:
                if current_tier >= 0 and victims:
                    return victims
                current_tier, victims, stopped = tier_index, None, False
            if stopped:
                continue
            cands, vote = fn(evictor, evictees)
            if vote == ep.ABSTAIN:
                continue
            if not cands:
                victims, stopped = None, True
                continue
            if victims is None:
                victims = list(cands)
            else:
                keep = {id(c) for c in cands}
                inter = [v for v in victims if id(v) in keep]
                victims = inter or None
        return victims or []

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Preemptable: the candidates the tiers agree the preemptor may evict."""
        return self._victims(ep.PREEMPTABLE, preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        """Reclaimable: the candidates the tiers agree the reclaimer may evict."""
        return self._victims(ep.RECLAIMABLE, reclaimer, candidates)

    # ================================================================= pre-predicate
    def pre_predicate(self, task: TaskInfo) -> str | None:
        """PrePredicate: None, or the first plugin's reason the task cannot be placed anywhere."""
        for _, _, fn in self._consulted(ep.PRE_PREDICATE):
            err = fn(task)
            if err:
                return str(err)
        return None


    # ================================================================= simulate points
    def simulate_allocatable(self, queue: QueueInfo, task: TaskInfo, state: dict[str, Any]) -> bool:
        """SimulateAllocatable: every consulted plugin lets the queue take the task in the simulated state."""
        return all(fn(queue, task, state) for _, _, fn in self._consulted(ep.SIMULATE_ALLOCATABLE))

    def simulate_predicate(self, task: TaskInfo, row: int, state: dict[str, Any]) -> str | None:
        """SimulatePredicate: None, or the first plugin's reason the row will not do in the simulated
        state."""
        for _, _, fn in self._consulted(ep.SIMULATE_PREDICATE):
            err = fn(task, row, state)
            if err:
                return str(err)
        return None

    def simulate_add_task(self, state: dict[str, Any], task: TaskInfo, row: int) -> None:
        """SimulateAddTask: every consulted plugin puts the task on the row in the simulated state."""
        for _, _, fn in self._consulted(ep.SIMULATE_ADD_TASK):
            fn(state, task, row)

    def simulate_remove_task(self, state: dict[str, Any], task: TaskInfo, row: int) -> None:
        """SimulateRemoveTask: every consulted plugin takes the task off the row in the simulated state."""
        for _, _, fn in self._consulted(ep.SIMULATE_REMOVE_TASK):
            fn(state, task, row)
