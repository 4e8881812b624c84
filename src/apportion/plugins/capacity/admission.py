"""capacity's admission and reclaim points: reclaimable, preemptive, allocatable, job enqueueable/enqueued.

Follows the `ReclaimableFn` (with `ancestorReclaimLevel`), `PreemptiveFn`, `AllocatableFn`,
`JobEnqueueableFn` and `JobEnqueuedFn` of `plugins/capacity/capacity.go` (semantics guide §6.10 rules
b-e, §6.11 checks along the path).
"""

from __future__ import annotations

from collections.abc import Iterable

from apportion.cluster.model import JobInfo, QueueInfo, TaskInfo
from apportion.cluster.snapshot import ROOT_QUEUE
from apportion.framework import extension as ep
from apportion.framework.kept_queues import KeptQueues
from apportion.plugins import queue_common as qc
from apportion.plugins.capacity import bare_answers as bare
from apportion.plugins.capacity import kept_plans
from apportion.plugins.capacity.attrs import QueueAttr, _fmt, ancestor_at_depth
from apportion.plugins.capacity.bare_answers import bare_answers
from apportion.plugins.capacity.base import CapacityBase
from apportion.plugins.capacity.buckets import BucketAnswers
from apportion.plugins.capacity.buckets import ReqKey as _ReqKey
from apportion.plugins.capacity.kept_plans import PLANS_MEMO, Plans, _KeptPlans, _Plan, shared_plans
from apportion.plugins.capacity.reclaim_texts import (
    ANCESTOR_NOT_ABOVE,
    BELOW_GUARANTEE,
    NOT_ABOVE_DESERVED,
    Spared,
    shares_dimension,
    spared_texts,
)
from apportion.plugins.capacity.tree import TREE_MEMO
from apportion.resources import Resource
from apportion.state import check

#: a level's verdict for one minResources: whether it passes, the shortfall's text after `queue NAME: `
#: ("" until a message needs it: `_message` works it out then, `lazy_texts`), and the whole message per
#: leaf that asked
_Verdict = tuple[bool, str, dict[str, str]]
#: the memo's entry: the levels' verdicts (`Admission._vote_levels`)
LEVELS_MEMO = "capacity.admission-levels"


class Admission(CapacityBase):
    """Which queue may take, admit or reclaim, and which tasks are victims."""

    #: per bucket number, its plan (`_plan`) for this session; the plugin is built afresh every session
    _plans: Plans | None = None
    #: the plans carried from the sessions before over the same tree (`_KeptPlans`), None: not carried
    _kept: dict[int, tuple[QueueInfo | None, _Plan]] | None = None
    #: tests switch this off: every session works its buckets' plans out afresh (the reference)
    carry_plans = True
    #: how many admissions this session added to inqueue an amount not >= 0 on some dimension (a
    #: refusal may then not hold: `BucketAnswers.refusals_hold`)
    _inqueue_lowered = 0
    #: tests switch this off: a level's verdict is kept with its shortfall's text, worked out with it,
    #: rather than only when a message is made from it (most refusals of a session without why-pending
    #: texts make none: `BucketAnswers.texts`)
    lazy_texts = True

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        """ReclaimableFn: the triple check over a running simulated allocated per queue (§6.10)."""
        if self._refused(reclaimer.key):
            return [], ep.REJECT
        reclaimer_attr = self._queue_of(reclaimer)
        if reclaimer_attr is None:
            return [], ep.REJECT
        level = self.ancestor_reclaim_level if self.hierarchical else 0
        allocations: dict[str, Resource] = {}
        victims: list[TaskInfo] = []
        # why each spared candidate was spared, formatted only if no victim is found (most calls that
        # find one never need the text, and a queue's limits are formatted once per call)
        spared: list[Spared] = []
        for reclaimee in self.ssn.sort_victims(candidates, reclaimer):
            attr = self._queue_of(reclaimee)
            if attr is None:
                continue
            # 1. no resource dimension in common with the reclaimer (pods ignored): evicting it cannot help
            if not shares_dimension(reclaimee.resreq, reclaimer.resreq):
                continue
            allocated = allocations.setdefault(attr.name, attr.allocated.clone())
            # 2. the guarantee is never breached
            if not attr.guarantee.less_equal(allocated.clone().sub_without_assert(reclaimee.resreq)):
                spared.append((BELOW_GUARANTEE, attr.name, reclaimee.key, attr.guarantee))
                continue
            # 3. an immediate victim (no dimension in common with deserved, pods counted), or a queue above its
            #    deserved on a dimension the victim requests and deserved lists
            if not shares_dimension(reclaimee.resreq, attr.deserved, ignore_pods=False):
                if (level > 0 and self._shares_ancestor_within(reclaimer_attr, attr, level)
                        and not reclaimer.resreq.intersection_names(reclaimer_attr.deserved)):
                    continue
            elif not allocated.greater_partly_relevant(attr.deserved, reclaimee.resreq):
                spared.append((NOT_ABOVE_DESERVED, attr.name, reclaimee.key, attr.deserved))
                continue
            checked = self._ancestors_allow(reclaimer_attr, attr, reclaimee, allocations, level, spared)
            if checked is None:
                continue
            allocated.sub_without_assert(reclaimee.resreq)
            for a in checked:
                a.sub_without_assert(reclaimee.resreq)
            victims.append(reclaimee)
        if not victims and spared:
            self.ssn.explain(reclaimer.key, "capacity found no task to reclaim: " + "; ".join(
                dict.fromkeys(spared_texts(spared))))
        return victims, ep.PERMIT

    def _shares_ancestor_within(self, a: QueueAttr, b: QueueAttr, level: int) -> bool:
        """sharesAnyNonRootAncestorWithinLevel."""
        aa = {ancestor_at_depth(a, d) for d in range(1, level + 1)} - {None, ROOT_QUEUE}
        bb = {ancestor_at_depth(b, d) for d in range(1, level + 1)} - {None, ROOT_QUEUE}
        return bool(aa & bb)

    def _ancestors_allow(self, reclaimer_attr: QueueAttr, attr: QueueAttr, reclaimee: TaskInfo,
                         allocations: dict[str, Resource], level: int,
                         spared: list[Spared]) -> list[Resource] | None:
        """ancestorReclaimLevel, victim side: each ancestor of the victim's queue within `level` that the
        reclaimer does not share (and is not root) must be over its deserved too. Returns the working
        allocations to charge, or None if an ancestor spares the victim."""
        checked: list[Resource] = []
        for d in range(1, level + 1):
            name = ancestor_at_depth(attr, d)
            if name is None or name == ROOT_QUEUE or ancestor_at_depth(reclaimer_attr, d) == name:
                continue
            anc = self.attrs[name]
            alloc = allocations.setdefault(name, anc.allocated.clone())
            checked.append(alloc)
            if not reclaimee.resreq.intersection_names(anc.deserved):
                continue
            if not alloc.greater_partly_relevant(anc.deserved, reclaimee.resreq):
                spared.append((ANCESTOR_NOT_ABOVE, name, reclaimee.key, attr.name))
                return None
        return checked

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """PreemptiveFn: may this queue reclaim for the task? realCapability on the leaf (rule b), then any
        one requested dimension still within deserved (rule c), or an ancestor's within ancestorReclaimLevel."""
        if self._refused(task.key):
            return False
        if not queue.is_open():
            self.ssn.explain(task.key, f"queue {queue.name} is {queue.state}, not Open: it cannot reclaim")
            return False
        attr = self.attrs.get(queue.name)
        if attr is None:
            return False
        req = task.resreq
        future = attr.allocated.plus(req)
        ok, failed = future.less_equal_with_dimension(attr.real_capability, req)
        if not ok:
            self.ssn.explain(task.key, qc.shortfall(queue.name, future, attr.real_capability, failed,
                                                    "realCapability", "cannot reclaim"))
            return False
        if future.less_equal_partly_zero_filtered(attr.deserved, req):
            return True
        if self.hierarchical:
            for d in range(1, self.ancestor_reclaim_level + 1):
                name = ancestor_at_depth(attr, d)
                if name is None or name == ROOT_QUEUE:
                    continue
                anc = self.attrs[name]
                if anc.allocated.plus(req).less_equal_partly_zero_filtered(anc.deserved, req):
                    return True
        self.ssn.explain(task.key, f"queue {queue.name}: cannot reclaim: allocated + request "
                                   f"({_fmt(future)}) would exceed deserved ({_fmt(attr.deserved)}) on every "
                                   "requested dimension")
        return False

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """AllocatableFn: an Open (leaf) queue, and allocated + task <= realCapability on every level."""
        if not queue.is_open():
            self.ssn.explain(task.key, f"queue {queue.name} is {queue.state}, not Open")
            return False
        return self._allocatable_in(self.attrs, queue.name, task, explain=True)

    def job_enqueueable(self, job: JobInfo) -> int:
        """JobEnqueueableFn: minResources + allocated + inqueue - elastic <= realCapability on minResources'
        dimensions (rule b), on the leaf and every ancestor (`_enqueue_answer`)."""
        answer, why = self._enqueue_answer(job, self._vote_levels())
        if why is not None:
            self.ssn.explain(job.uid, why)
        return answer

    def admissible_enqueues(self, jobs: list[JobInfo]) -> list[JobInfo]:
        """add_enqueue_test's test: the jobs job_enqueueable would admit if called now on each; when
        there are none, each job's refusal has been recorded, as job_enqueueable records it (else
        nothing has). `enqueue_answers` gives the answers."""
        whys = self.enqueue_answers(jobs)
        admissible = [job for job, why in zip(jobs, whys, strict=True) if why is None]
        if not admissible:
            explain = self.ssn.explain
            for job, why in zip(jobs, whys, strict=True):
                if why is not None:
                    explain(job.uid, why)
        return admissible

    def enqueue_answers(self, jobs: list[JobInfo]) -> list[str | None]:
        """add_enqueue_answers' test: per job, None when job_enqueueable, called now on it, would admit
        it, else the explanation its refusal records; nothing is recorded.

        A refusal changes no queue's accounting, so while every job is refused each is judged on the
        accounting as it stands. One level's verdict for one minResources is then the same for every
        job that asks it (a backlog's jobs share their parents and root, and a handful of shapes), and
        is worked out once (`_vote_levels`, property-tested against the votes in
        tests/plugins/capacity/test_capacity_backlog.py)."""
        levels = self._vote_levels()
        if levels is None:
            out: list[str | None] = []
            append = out.append
            for job in jobs:
                answer, why = self._enqueue_answer(job, levels)
                append(None if answer >= 0 else why)
            return out
        # no vote here moves an accounting (job_enqueued does, after): the answer is one per leaf and
        # minResources (a bucket), and a backlog's jobs share a few of each
        ids = self._bucket_ids(jobs)
        answers = self._bucket_answers(dict.fromkeys(ids), levels)
        return list(map(answers.__getitem__, ids))

    def enqueue_buckets(self, jobs: list[JobInfo], texts: bool = True) -> tuple[list[int], BucketAnswers] | None:
        """`enqueue_answers` in two halves: per job, the number of its bucket (every job of a bucket has
        the same answer), and a function giving the answers of buckets as things stand when it is
        called, which may be called again after an admission (None from it: the numbers were dropped
        since, ask `enqueue_answers`). None when the answers are not kept per bucket (the votes one
        level at a time: `fast_enqueue_refusals` off). A job's bucket reads its queue and minResources,
        which no vote changes, so the numbers hold for the session's votes (K40). `texts` False: the
        caller reads no refusal's explanation, and each refusal is `UNREAD` (K43)."""
        if self._vote_levels() is None:
            return None
        return self._bucket_ids(jobs), BucketAnswers(self, texts)

    def _bucket_ids(self, jobs: list[JobInfo]) -> list[int]:
        """The bucket number of each job, kept per job with the minResources object and queue it was
        worked out from (`Buckets.of_job`); the session's plans are set up at its first ask."""
        buckets = self._buckets
        renumbered = buckets.forget_gone(len(self.ssn.jobs))
        if renumbered or self._plans is None:
            self._plans = Plans()
            self._kept = self._kept_plans(renumbered)
            if self._kept is not None and kept_plans.share_plans:
                self._plans = self._shared_plans()
        of_job = buckets.of_job
        out: list[int] = []
        append = out.append
        for job in jobs:
            mr = job.min_resources
            held = of_job.get(job.uid)
            if held is None or held[0] is not mr or held[1] != job.queue:
                held = of_job[job.uid] = (mr, job.queue, buckets.bucket(job.queue, mr))
            append(held[2])
        return out

    def _bucket_answers(self, wanted: Iterable[int], levels: dict[str, tuple[QueueAttr, dict[_ReqKey, _Verdict]]],
                        texts: bool = True) -> dict[int, str | None]:
        """Per bucket number in `wanted`, None when a vote cast now on a job of it would admit it, else
        that refusal's explanation (`texts` False: `bare_answers`, K43)."""
        if not texts:
            return bare_answers(self, wanted, levels)
        plans = self._plans
        if plans is None:
            plans = self._plans = Plans()
        info = self._buckets.info
        walk = self._walk
        attrs = self.attrs
        checking = check.enabled()
        resolved: dict[str, tuple[QueueAttr, dict[_ReqKey, _Verdict]]] = {}
        out: dict[int, str | None] = {}
        for i in wanted:
            # What a bucket's answer reads besides the levels' accounting (its queue, whether that is a
            # leaf and Open, its realCapability, the plugin's refusal of every decision) is fixed for the
            # session: its plan is worked out once a session; the levels are walked as votes walk them.
            queue, key, min_req = info[i]
            plan = plans.get(i)
            if plan is None:
                plan = plans[i] = self._carried_plan(i, queue, min_req, key)
                if checking and plan != self._plan(queue, min_req, key):
                    raise check.StateCheckError(f"{check.ENV}: capacity's plan for the jobs of queue {queue} with "
                                                f"minResources {key} carried from an earlier session differs "
                                                "from the one worked out now")
            answer, why, path = plan
            if path is not None and min_req is not None and key is not None:
                # `_walk`, each level's verdicts looked up once per call (no accounting moves in one)
                answer, why = ep.PERMIT, None
                for name in path:
                    level = resolved.get(name)
                    if level is None:
                        a = attrs[name]
                        level = levels.get(name)
                        if level is None or level[0] is not a:
                            level = levels[name] = (a, {})
                        resolved[name] = level
                    hit = level[1].get(key)
                    if hit is None:
                        hit = level[1][key] = self._verdict(level[0], min_req)
                    if not hit[0]:
                        why = hit[2].get(path[0])
                        answer = ep.REJECT
                        if why is None:
                            why = self._message(path[0], name, hit, level[0], min_req)
                        break
            if answer >= 0:
                why = None
            if checking:
                if path is not None and min_req is not None and key is not None and (
                        (answer, why) != walk(path, min_req, key, levels)):
                    raise check.StateCheckError(f"{check.ENV}: capacity's levels looked up once per ask answer "
                                                f"the jobs of queue {queue} with minResources {key} otherwise "
                                                "than their walk")
                ref, ref_why = self._answer_for(queue, min_req, key, None)
                if why != (None if ref >= 0 else ref_why):
                    raise check.StateCheckError(f"{check.ENV}: capacity's answer for the jobs of queue {queue} "
                                                f"with minResources {key} differs from their vote's")
            out[i] = why
        return out

    def _kept_plans(self, renumbered: bool) -> dict[int, tuple[QueueInfo | None, _Plan]] | None:
        """The plans carried over this session's tree (`_KeptPlans`), the plugin's paths and texts then
        taken from there; None when they cannot be (no memo, flat mode, every decision refused): each
        plan is then worked out afresh. `renumbered`: the buckets' numbers were dropped."""
        memo = self.ssn.memo
        if memo is None:
            return None
        kept = memo.get(PLANS_MEMO)
        if renumbered and isinstance(kept, _KeptPlans):
            # the plans are keyed by bucket number: dropped also in a session that carries none, or a
            # later one over the same tree would find them under numbers naming other buckets
            kept.plans.clear()
            kept.queues = KeptQueues({})
            kept.session_plans = Plans()
        if not self.carry_plans or not self.hierarchical or self.blocked:
            return None
        tree = memo.get(TREE_MEMO)
        if tree is None:
            return None
        if not isinstance(kept, _KeptPlans) or kept.tree is not tree:
            kept = memo[PLANS_MEMO] = _KeptPlans(tree)
        # entries made this session before (votes, other actions) are made again if asked for
        self._names = kept.names
        self._wheres = kept.wheres
        return kept.plans

    def _shared_plans(self) -> Plans:
        """`kept_plans.shared_plans` for this session (the memo's kept plans, which `_kept_plans` made)."""
        memo = self.ssn.memo
        kept = memo.get(PLANS_MEMO) if memo is not None else None
        assert isinstance(kept, _KeptPlans)
        return shared_plans(kept, self.ssn.queues, self._buckets, self._plan)

    def _carried_plan(self, bucket: int, queue_name: str, min_req: Resource | None, key: _ReqKey | None) -> _Plan:
        """`_plan` for the bucket, carried from an earlier session while its queue is the same object."""
        kept = self._kept
        if kept is None:
            return self._plan(queue_name, min_req, key)
        queue = self.ssn.queues.get(queue_name)
        held = kept.get(bucket)
        if held is None or held[0] is not queue:
            held = kept[bucket] = (queue, self._plan(queue_name, min_req, key))
        return held[1]

    def _vote_levels(self) -> dict[str, tuple[QueueAttr, dict[_ReqKey, _Verdict]]] | None:
        """Per level (queue name), the attributes object its verdicts per minResources were worked out
        on, and those verdicts. They hold while the session's attributes for the queue are that object
        (a session opened from capacity's ledger shares the ledger's objects, which no one changes, so
        they hold from session to session: the memo keeps them) and its accounting has not moved since:
        a vote that admits moves its job's path (job_enqueued logs it, `_moved`), an allocation or its
        undoing the task's (the event handlers log every queue they touch, `share_log`); those levels'
        verdicts are dropped here. None when the session asks for the votes as they are, one level at a
        time (`fast_enqueue_refusals` off: tests)."""
        if not self.ssn.fast_enqueue_refusals:
            return None
        levels = self._levels
        log = self.share_log
        if self._levels_pos != len(log):
            for name in log[self._levels_pos:]:
                levels.pop(name, None)
            self._levels_pos = len(log)
        if self._moved:
            for name in self._moved:
                levels.pop(name, None)
            self._moved.clear()
        return levels

    def _enqueue_answer(self, job: JobInfo,
                        levels: dict[str, tuple[QueueAttr, dict[_ReqKey, _Verdict]]] | None
                        ) -> tuple[int, str | None]:
        """job_enqueueable's answer and the explanation it records (None: none). `levels`, when given,
        keeps each level's verdicts per minResources (`_vote_levels`, which must be asked again once
        any accounting moved)."""
        mr = job.min_resources
        return self._answer_for(job.queue, mr, None if mr is None else (mr.cpu, mr.memory, tuple(mr.scalars.items())),
                                levels)

    def _answer_for(self, queue_name: str, min_req: Resource | None, key: _ReqKey | None,
                    levels: dict[str, tuple[QueueAttr, dict[_ReqKey, _Verdict]]] | None
                    ) -> tuple[int, str | None]:
        """`_enqueue_answer` for a job of the queue with that minResources (`key`: its value)."""
        answer, why, path = self._plan(queue_name, min_req, key)
        if path is None or min_req is None or key is None:
            return answer, why
        if levels is None:
            attr = self.attrs[queue_name]
            for a in self._path(attr):
                ok, tail = self._level_verdict(a, min_req)
                if not ok:
                    return ep.REJECT, f"queue {self._where(attr, a)}: {tail}"
            return ep.PERMIT, None
        return self._walk(path, min_req, key, levels)

    def _plan(self, queue_name: str, min_req: Resource | None, key: _ReqKey | None) -> _Plan:
        """The answer for a job of the queue with that minResources when it does not read the levels'
        accounting, else the levels to walk (the leaf and then its ancestors up to the root)."""
        if self.blocked:
            return ep.REJECT, self.blocked, None  # _refused's explanation
        attr = self.attrs.get(queue_name)
        queue = self.ssn.queues.get(queue_name)
        if attr is None or queue is None:
            return ep.PERMIT, None, None
        if self.hierarchical and not attr.is_leaf():
            return ep.REJECT, self._not_leaf(attr), None
        if not queue.is_open():
            return ep.REJECT, f"queue {queue.name} is {queue.state}, not Open", None
        if attr.real_capability is None or min_req is None or key is None:
            return ep.PERMIT, None, None
        path = self._names.get(attr.name)
        if path is None:
            path = self._names[attr.name] = (attr.name, *reversed(attr.ancestors))
        return ep.PERMIT, None, path

    def _walk(self, path: tuple[str, ...], min_req: Resource, key: _ReqKey,
              levels: dict[str, tuple[QueueAttr, dict[_ReqKey, _Verdict]]]) -> tuple[int, str | None]:
        """The levels' verdicts along `path` (the leaf first), each kept in `levels` per minResources:
        the first level that refuses says why, as seen from the leaf."""
        attrs = self.attrs
        leaf = path[0]
        for name in path:
            a = attrs[name]
            held = levels.get(name)
            if held is None or held[0] is not a:
                held = levels[name] = (a, {})
            known = held[1]
            hit = known.get(key)
            if hit is None:
                hit = known[key] = self._verdict(a, min_req)
            if not hit[0]:
                msg = hit[2].get(leaf)
                return ep.REJECT, (msg if msg is not None else self._message(leaf, name, hit, a, min_req))
        return ep.PERMIT, None

    def _verdict(self, a: QueueAttr, min_req: Resource) -> _Verdict:
        """The level's verdict for the minResources, kept in `levels`: with `lazy_texts`, a refusal's text
        is "" until `_message` needs it."""
        if not self.lazy_texts:
            return (*self._level_verdict(a, min_req), {})
        if not min_req.scalars and bare.lean_verdict:
            return bare.two_dimension_verdict(a, min_req), "", {}
        need = min_req.plus(a.allocated).add(a.inqueue).sub_without_assert(a.elastic)
        return need.less_equal_with_dimension(a.real_capability, min_req)[0], "", {}

    def _message(self, leaf: str, name: str, hit: _Verdict, a: QueueAttr, min_req: Resource) -> str:
        """A refusing level's message as seen from the leaf, kept with the verdict. `a` is the level's
        attributes the verdict holds for, with its accounting as when the verdict was taken (a verdict is
        dropped when that moves, `_vote_levels`), so a text worked out now is the one it would have had."""
        where = self._wheres.get((leaf, name))
        if where is None:
            where = self._wheres[(leaf, name)] = f"queue {self._where(self.attrs[leaf], self.attrs[name])}: "
        tail = hit[1]
        if not tail:
            # `lazy_texts`: a refusal always has a text (the failing dimensions), so "" is not yet made
            tail = self._level_verdict(a, min_req)[1]
        msg = hit[2][leaf] = where + tail
        return msg

    @staticmethod
    def _level_verdict(a: QueueAttr, min_req: Resource) -> tuple[bool, str]:
        """One level of the admission test: whether it passes, else the shortfall's text after
        `queue NAME: ` (which names the level as seen from the job's leaf)."""
        need = min_req.plus(a.allocated).add(a.inqueue).sub_without_assert(a.elastic)
        ok, failed = need.less_equal_with_dimension(a.real_capability, min_req)
        if ok:
            return True, ""
        text = qc.shortfall("", need, a.real_capability, failed, "realCapability",
                            "queue resource quota insufficient (minResources + allocated + inqueue - elastic)")
        return False, text[len("queue : "):]

    def job_enqueued(self, job: JobInfo) -> None:
        """JobEnqueuedFn: minResources (less gated pods) join inqueue on the leaf and every ancestor."""
        attr = self.attrs.get(job.queue)
        if attr is None or job.min_resources is None:
            return
        r = qc.enqueued_resource(job)
        if not (r.cpu >= 0 and r.memory >= 0 and all(v >= 0 for v in r.scalars.values())):
            self._inqueue_lowered += 1  # (a NaN too)
        for a in self._own_path(attr):
            a.inqueue.add(r)
            self._moved.append(a.name)
