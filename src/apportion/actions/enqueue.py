"""enqueue: move PodGroups from Pending to Inqueue (admission), queue by queue (§5.1)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate, chain, compress, repeat
from operator import is_
from typing import Any, cast

from apportion.actions import enqueue_pass
from apportion.actions.common import pop_best
from apportion.actions.enqueue_backlog import Kept, carried_backlog
from apportion.actions.enqueue_order import JobKey, first_candidate, first_candidate_reference, job_keys
from apportion.actions.enqueue_pass import Backlog, check_carried
from apportion.actions.enqueue_pass import backlog_reference as backlog_reference  # the reference, for tests
from apportion.cluster.model import (
    GROUP_INQUEUE,
    JobInfo,
    QueueInfo,
)
from apportion.errors import InternalError
from apportion.framework.dispatch import KeyAnswers
from apportion.framework.queue_picker import pop_best_index
from apportion.framework.session import Session
from apportion.state import check

#: tests switch this off: every queue's first quiet uid is searched (`JobVisits.quiet_firsts`)
carry_firsts = True

#: tests switch this off: the backlog is taken afresh every session (from the visited jobs), not carried
#: from the last open's and moved by the jobs the open says changed (`carried_backlog`, K47)
carry_backlog = True

#: tests switch this off: with the backlog carried, its Pending jobs' keys are asked of the enqueue test
#: every session, not kept with it (only the jobs taken in since asked, `Kept.bucketed`, K47)
carry_keys = True

#: tests switch this off: the backlog is taken by maps over the visited jobs and then loops (the
#: reference), not in one pass over them; the votes' answers are split along the pending lists, and
#: asked again after an admission, one queue at a time, not by slices and chains over the queues with
#: a pending job (K43)
lean_backlog = True

#: tests switch this off: the votes ask the answers of every pending job left again after an admission,
#: rather than the answers of their buckets (`Dispatch.enqueue_buckets`, K40)
ask_by_bucket = True
#: tests switch this off: refusals are explained in a session that makes no why-pending texts too (K40)
skip_unread = True
#: tests switch this off: with refusals unread, the jobs left are asked again by every bucket's answer,
#: not only by the buckets the last answers would admit (K40)
by_candidates = True
#: tests switch this off: with refusals unread, the answers asked by bucket carry each refusal's
#: explanation all the same (rather than a text no one reads, K43)
bare_refusals = True
#: tests switch this off: with refusals unread, the answers asked again after an admission are taken over
#: every queue, not only over the queues with a candidate left (K51)
hot_queues = True
#: tests switch this off: while no vote has admitted since the answers, a whole queue's pops before its
#: first candidate are made one cast at a time, each by a scan of compares, not at once in the job
#: order's key order (`_Votes._skip_refused`, K59)
skip_refused = True
#: tests switch this off: the picker's drain asks whether a queue has work by a Python function giving
#: the bool of its pending list, not by the list's lookup itself (read for its truth alone, K59)
lists_as_work = True
#: tests switch this off: every vote is cast, rather than answered by the answers where they give it:
#: a candidate while no admission moved them, a job after one by its key's answer when no one reads
#: refusals (`_Votes._vote`, K51)
answer_votes = True

def execute(ssn: Session) -> None:
    """Run enqueue over the session."""
    carried = carried_backlog(ssn) if carry_backlog else None
    kept: Kept | None = None
    if carried is not None:
        queues, pending, size, all_min, kept = carried
        if check.enabled():
            check_carried(ssn, carried)
    else:
        queues, pending, backlog = backlog_of(ssn)
        size = len(backlog)
        all_min = all(job.min_resources is not None for job in backlog)
    # A queue without pending jobs is popped and dropped, with no effect; once every queue still in the
    # picker has none left, the remaining pops would only drop them, so the loop ends there.
    if not size:
        return  # every pop would drop its queue: building the picker (over every queue with a job) is waste
    # A refusal changes nothing the next vote reads. So with the votes' answers as things stand known,
    # a backlog with none to admit is refused whole without a queue order (the commonest session under
    # load), the votes in queue order stop at the first point where none is left to admit (after an
    # admission, or once the last of them was voted), the rest then refused whole, and a job refused
    # before any admission is given its known explanation without its vote. A job without
    # minResources is admitted without a vote: no such test then.
    votes = _Votes(ssn, pending, size)
    keyed = None
    if kept is not None and all_min and carry_keys and ask_by_bucket:
        keyed = kept.bucketed(ssn, list(pending), votes.texts)
        if check.enabled():
            _check_keys(ssn, votes, keyed)
    if all_min and not votes.ask(votes.rest(), keyed):
        return  # every refusal explained
    picker = ssn.queue_picker(queues)
    # Admitting a job moves no queue's share, so a picker may know where the pops lead without popping
    # every queue that has no pending job (QueuePicker.drain_order).
    # The pickers read `has_work` for its truth alone: a queue's pending list itself, got by a C call,
    # says the same as its bool (K59)
    has_work: Callable[[str], bool] = (cast(Callable[[str], bool], pending.__getitem__) if lists_as_work
                                       else lambda name: bool(pending[name]))
    steps = picker.drain_order(has_work)
    if steps is not None:
        whole = getattr(picker, "drains_whole_queues", False)
        for queue in steps:
            if votes.cast(queue, whole):
                return
        return
    waiting = sum(1 for jobs in pending.values() if jobs)
    while waiting and len(picker):
        queue = picker.pop()
        jobs = pending[queue.name]
        if not jobs:
            continue
        if votes.cast(queue):
            return
        if not jobs:
            waiting -= 1
        picker.push(queue)


def _check_keys(ssn: Session, votes: _Votes, keyed: tuple[list[Any], KeyAnswers] | None) -> None:
    """The self-check: the Pending jobs' keys carried with the backlog are those the test gives them now."""
    ref = ssn.enqueue_buckets(votes.rest(), votes.texts)
    if (ref is None) != (keyed is None) or (ref is not None and keyed is not None and ref[0] != keyed[0]):
        raise check.StateCheckError(f"{check.ENV}: enqueue's keys carried with the backlog differ from the ones "
                                    "the enqueue test gives the Pending jobs now")


def backlog_of(ssn: Session) -> Backlog:
    """What enqueue starts from (`backlog_reference`'s answer), from the jobs the actions visit
    (enqueue_pass.py `backlog_of`, under this module's switches)."""
    return enqueue_pass.backlog_of(ssn, lean_backlog, carry_firsts)


class _Votes:
    """The votes in queue order, with the votes' answers as things stand known (Dispatch.enqueue_answers):
    once no job left could be admitted, the rest is refused whole; until an admission, a job the
    answers refuse is refused with their explanation, without its vote."""

    #: after an admission, the rest of the backlog is asked about again when the candidates left are at
    #: most this share of it (an admission that took the room they wanted then ends the votes there)...
    ask_again_share = 0.5
    #: ... while the jobs asked about again so far stay within this many times the backlog
    ask_again_budget = 2.0

    def __init__(self, ssn: Session, pending: dict[str, list[JobInfo]], left: int):
        self.ssn = ssn
        self.pending = pending
        #: per queue, the last answers for its pending jobs, in the same order (None: the job was a
        #: candidate, one the answers would admit; else its refusal's explanation); None when there are
        #: no answers (every job is voted)
        self.whys: dict[str, list[str | None]] | None = None
        #: how many candidates of the last answers are left to vote
        self.candidates = 0
        #: whether no vote has admitted since the last answers (their refusals' explanations then hold)
        self.refusing = False
        #: per queue, the answers' key (bucket) of each of its pending jobs, in the same order, and the
        #: answers of keys as things stand (`Dispatch.enqueue_buckets`); None: the jobs are asked
        self.keys: dict[str, list[Any]] | None = None
        self.key_answers: KeyAnswers | None = None
        #: whether refusals are explained: a session that makes no why-pending texts reads none (K40)
        self.explaining = getattr(ssn, "why_pending", True) or not skip_unread
        #: whether the answers asked by bucket carry the refusals' explanations (else each is a text no
        #: one reads: only whether a job is refused is read, K43)
        self.texts = self.explaining or not bare_refusals
        #: the jobs left to vote (`left`: every pending job), and how many more may be asked about again
        #: (`ask_again_budget`)
        self.left = left
        if check.enabled() and left != sum(len(jobs) for jobs in pending.values()):
            raise check.StateCheckError(f"{check.ENV}: enqueue's backlog and its pending lists differ in size")
        self.budget = self.ask_again_budget * self.left
        #: the session's job order as keys (`enqueue_order.job_keys`, asked at the first need; None: none)
        self._key_of: Callable[[JobInfo], JobKey] | None = None
        self._keys_asked = False

    def rest(self) -> list[JobInfo]:
        """The pending jobs left, queue after queue (the order `ask` reads its answers in)."""
        if lean_backlog:
            return list(chain.from_iterable(self.pending.values()))
        out: list[JobInfo] = []
        for jobs in self.pending.values():
            out += jobs
        return out

    def ask(self, jobs: list[JobInfo], keyed: tuple[list[Any], KeyAnswers] | None = None) -> bool:
        """Take the votes' answers for `jobs` (`rest()`, every pending job) as things stand; False when
        they refuse every one (each refusal then explained as its vote would explain it). `keyed`: the
        jobs' keys and their answers, when the caller has them (`Kept.bucketed`)."""
        if keyed is None and ask_by_bucket:
            keyed = self.ssn.enqueue_buckets(jobs, self.texts)
        whys: list[str | None] | None = None
        keys: list[Any] | None = None
        if keyed is not None:
            keys, key_answers = keyed
            answers = key_answers(dict.fromkeys(keys))
            if answers is not None:
                whys = list(map(answers.__getitem__, keys))
                self.key_answers = key_answers
        if whys is None:
            keys = None
            self.key_answers = None
            whys = self.ssn.enqueue_answers(jobs)
        if whys is None:
            self.whys = None
            return True
        candidates = whys.count(None)
        if not candidates:
            if self.explaining:
                _explain_each(self.ssn, jobs, whys)
            return False
        # split along the pending lists, which `jobs` runs through in order
        per_queue: dict[str, list[str | None]] = {}
        per_queue_keys: dict[str, list[Any]] = {}
        at = 0
        if lean_backlog:
            # by slices of the lists made from the pending lists' lengths, for the queues with a pending
            # job only: the votes read the answers of those alone (an empty list is never voted)
            sizes = list(map(len, self.pending.values()))
            names = list(compress(self.pending, sizes))
            ends = list(accumulate(compress(sizes, sizes)))
            parts = list(map(slice, [0, *ends[:-1]], ends))
            per_queue = dict(zip(names, map(whys.__getitem__, parts)))
            if keys is not None:
                per_queue_keys = dict(zip(names, map(keys.__getitem__, parts)))
            at = ends[-1] if ends else 0
        else:
            for name, mine in self.pending.items():
                end = at + len(mine)
                per_queue[name] = whys[at:end]
                if keys is not None:
                    per_queue_keys[name] = keys[at:end]
                at = end
        if at != len(whys):
            raise InternalError("enqueue asked about other jobs than the pending ones left")
        self.whys, self.candidates, self.refusing = per_queue, candidates, True
        self.keys = per_queue_keys if keys is not None else None
        return True

    def ask_again(self) -> bool:
        """`ask(rest())` after an admission: with the keys of the jobs left known, only their keys'
        answers are asked again (a job's key reads its queue and minResources, which no vote changes)."""
        key_answers, keys, per_queue = self.key_answers, self.keys, self.whys
        if key_answers is None or keys is None or per_queue is None:
            return self.ask(self.rest())
        relaxed = not self.explaining and by_candidates and key_answers.refusals_hold()
        if relaxed and lean_backlog and hot_queues:
            # as below, over the queues with a candidate only: a key names one queue (a bucket is a leaf
            # and a minResources), so no other queue holds a key asked, and its answers stay as they are
            hot = [name for name, whys in per_queue.items() if None in whys]
            answers = key_answers(dict.fromkeys(chain.from_iterable(
                compress(keys[name], map(is_, per_queue[name], repeat(None))) for name in hot)))
            if answers is None:
                return self.ask(self.rest())
            fresh = answers.get
            candidates = 0
            for name in hot:
                whys = per_queue[name] = list(map(fresh, keys[name], per_queue[name]))
                candidates += whys.count(None)
        elif relaxed and lean_backlog:
            # as below, by maps: `keys` and `per_queue` hold lists of the same lengths in the same order
            # (the votes pop and clear them together)
            answers = key_answers(dict.fromkeys(compress(chain.from_iterable(keys.values()),
                                                         map(is_, chain.from_iterable(per_queue.values()),
                                                             repeat(None)))))
            if answers is None:
                return self.ask(self.rest())
            now = list(map(list, map(map, repeat(answers.get), keys.values(), per_queue.values())))
            per_queue.update(zip(keys, now))
            candidates = sum(map(list.count, per_queue.values(), repeat(None)))
        elif relaxed:
            # A job the last answers refused would be refused now (its text, which no one reads, aside):
            # only the candidates' keys are asked again, the others keep their last (unread) refusal.
            wanted = dict.fromkeys(chain.from_iterable(
                compress(mine, map(is_, per_queue[name], repeat(None))) for name, mine in keys.items() if mine))
            answers = key_answers(wanted)
            if answers is None:
                return self.ask(self.rest())
            fresh = answers.get
            candidates = 0
            for name, mine in keys.items():
                if mine:
                    whys = per_queue[name] = list(map(fresh, mine, per_queue[name]))
                    candidates += whys.count(None)
        else:
            answers = key_answers(dict.fromkeys(chain.from_iterable(keys.values())))
            if answers is None:
                return self.ask(self.rest())
            get = answers.__getitem__  # every key asked
            candidates = 0
            for name, mine in keys.items():
                if mine:  # else its answers are as empty
                    whys = per_queue[name] = list(map(get, mine))
                    candidates += whys.count(None)
        if check.enabled():
            ref = self.ssn.enqueue_answers(self.rest())
            mine_now = list(chain.from_iterable(per_queue.values()))
            if ref is None or (ref != mine_now if not relaxed and self.texts
                               else [w is None for w in ref] != [w is None for w in mine_now]):
                raise check.StateCheckError(f"{check.ENV}: enqueue's answers asked again by bucket differ from "
                                            "the answers of the jobs left")
        if not candidates:
            if self.explaining:
                _explain_each(self.ssn, self.rest(), list(chain.from_iterable(per_queue.values())))
            return False
        self.candidates, self.refusing = candidates, True
        return True

    def cast(self, queue: QueueInfo, whole: bool = False) -> bool:
        """Vote the queue's best pending job; True when every job left has been refused with it.

        `whole`: the caller works on this queue until it has no pending job before any other (the
        picker's drain says so, `drains_whole_queues`). Then, while no vote has admitted since the
        answers, a queue none of whose jobs the answers would admit has them all refused at once, each
        with its explanation: its votes, in whatever order, would refuse them one by one, saying that,
        and move nothing another vote reads (K14), so the job order is not asked."""
        ssn = self.ssn
        jobs = self.pending[queue.name]
        per_queue = self.whys
        if per_queue is None:
            # no answers: every job is voted
            _admit(ssn, pop_best(jobs, ssn.job_compare))
            self.left -= 1
            return False
        whys = per_queue[queue.name]
        keys = self.keys[queue.name] if self.keys is not None else None
        if whole and self.refusing and None not in whys:
            if self.explaining:
                _explain_each(ssn, jobs, whys)
            self.left -= len(jobs)
            jobs.clear()
            whys.clear()
            if keys is not None:
                keys.clear()
            # the answers' candidates are elsewhere, untouched: vote on (as after each of these refusals)
            return False
        i = -1
        if whole and self.refusing and skip_refused and len(jobs) > 1:
            i = self._skip_refused(jobs, whys, keys)
        if i < 0:
            i = pop_best_index(jobs, ssn.job_compare)
        job = jobs.pop(i)
        why = whys.pop(i)
        key = keys.pop(i) if keys is not None else None
        if why is not None and self.refusing:
            # no vote has admitted since the answers: its vote would refuse it, saying this
            if self.explaining:
                ssn.explain(job.uid, why)
            admitted = False
        else:
            admitted = self._vote(job, why, key)
            if admitted:
                self.refusing = False
        self.left -= 1
        if why is None:
            self.candidates -= 1
        candidates = self.candidates
        if candidates and not (admitted and candidates <= self.ask_again_share * self.left
                               and self.left <= self.budget):
            # Some may still be admitted: vote on. A candidate an admission made inadmissible is
            # simply refused by its own vote. Asking again after an admission costs the whole rest
            # of the backlog (after every admission, quadratic in a cycle that admits a thousand
            # jobs), so only while the candidates are few beside the rest, which the votes to reach
            # them would cost, and within the budget.
            return False
        # None is left that could be admitted as things stood (or an admission may have changed
        # that): what of the rest could be now?
        if not self.left:
            return True
        if candidates:
            self.budget -= self.left
        return not self.ask_again()


    def _skip_refused(self, jobs: list[JobInfo], whys: list[str | None], keys: list[Any] | None) -> int:
        """The refusals a whole queue's pops make before they reach its first candidate, made at once
        (K59): while no vote has admitted since the answers, each such pop refuses its job, saying its
        answer's text, and returns with the candidates untouched, and the drain hands the same queue back
        while it has jobs (`whole`). With the job order given by keys (`enqueue_order.job_keys`) the pops
        take the jobs in key order, so the jobs before the candidate of the smallest key are those of
        smaller keys. Returns the candidate's index in the lists left, or -1 (no keys: the caller scans)."""
        if not self._keys_asked:
            self._key_of = job_keys(self.ssn)
            self._keys_asked = True
        key_of = self._key_of
        if key_of is None:
            return -1
        got = first_candidate(jobs, whys, key_of)
        if check.enabled():
            ref = first_candidate_reference(jobs, whys, self.ssn.job_compare)
            if got is not None and got != ref:
                raise check.StateCheckError(f"{check.ENV}: enqueue's pops by the job order's keys reach "
                                            f"{got}, the pops by its comparison {ref}")
        if got is None:
            return -1
        best, before = got
        if not before:
            return best
        if self.explaining:
            explain = self.ssn.explain
            for i in before:
                explain(jobs[i].uid, whys[i])  # type: ignore[arg-type]  # a refusal: not None
        gone = set(before)
        kept = [i for i in range(len(jobs)) if i not in gone]
        jobs[:] = [jobs[i] for i in kept]
        whys[:] = [whys[i] for i in kept]
        if keys is not None:
            keys[:] = [keys[i] for i in kept]
        self.left -= len(before)
        return best - sum(1 for i in before if i < best)

    def _vote(self, job: JobInfo, why: str | None, key: Any) -> bool:
        """`_admit`, with the vote's answer taken from the answers where they give it (K51): a candidate
        of answers no admission has moved since is admitted without its vote (which would admit it and
        record nothing); in a session whose refusals no one reads, a job voted after an admission is
        answered by its key's answer as things stand now (`BucketAnswers.admits`), its refusal recording
        no explanation. Otherwise, and for a job without minResources, the vote is cast."""
        ssn = self.ssn
        if not answer_votes or job.min_resources is None:
            return _admit(ssn, job)
        admits: bool | None = None
        if why is None and self.refusing:
            admits = True
        elif not self.explaining and key is not None:
            now = getattr(self.key_answers, "admits", None)
            if now is not None:
                admits = now(key)
        if admits is None:
            return _admit(ssn, job)
        if check.enabled():
            ref = ssn.enqueue_answers([job])
            if ref is None or (ref[0] is None) != admits:
                raise check.StateCheckError(f"{check.ENV}: enqueue's answer for job {job.uid} taken from the "
                                            "answers differs from its vote's")
        if admits:
            ssn.job_enqueued(job)
            job.set_phase(GROUP_INQUEUE)
        return admits


def _explain_each(ssn: Session, jobs: list[JobInfo], whys: list[str | None]) -> None:
    """Record each job's refusal with its explanation (none is None), as `Session.explain` would."""
    explain = ssn.explain
    for job, why in zip(jobs, whys, strict=True):
        explain(job.uid, why)  # type: ignore[arg-type]  # no None among them


def _admit(ssn: Session, job: JobInfo) -> bool:
    # A PodGroup without minResources is admitted without asking any plugin (Keep, §5.1).
    if job.min_resources is None or ssn.job_enqueueable(job):
        ssn.job_enqueued(job)
        job.set_phase(GROUP_INQUEUE)
        return True
    return False
