"""capacity's flat mode (no `enableHierarchy`) over a ledger kept between sessions.

Flat mode's session open (`buildQueueAttrs`, tree.py `build_queue_attrs`) gives attributes to the queues
that have jobs, with limits that follow from the queue specs, the cluster total and GuaranteeEnable
(realCapability against the total less every queue's guarantee, deserved capped by it and raised to the
guarantee), and charges every job to its queue. A caller that sessions the same cluster again and again
(a memo: the simulator, `serve`, `shadow`, Ray) keeps both here: the limits while their inputs are the
same (the inputs tree mode's memo compares, `TreeSetup._tree_inputs`), and the charges of the jobs the
cache hands out unchanged in the ledger tree mode uses (ledger.py), each job charged to its one queue.

Exact, as the tree's ledger (docs/semantics.md K7): every amount taken in is an integer below 2**53, so
the sums are a recount's bit for bit whatever the order; a session with a job whose amounts are not
recounts (tree.py `build_queue_attrs`). The queue report made from a ledger (report.py) assumes the same
queues as last time: a session whose queues with jobs are not the last report's makes it afresh. Under
`APPORTION_CHECK_STATE=1` every ledger session is compared with the recount, attribute by attribute.
"""

from __future__ import annotations

from typing import Any

from apportion.cluster.model import JobInfo
from apportion.errors import InternalError
from apportion.framework.session import Session
from apportion.lean_dataclass import dataclass
from apportion.plugins.capacity.attrs import QueueAttr
from apportion.plugins.capacity.ledger import (
    FIELDS,
    Amount,
    Ledger,
    job_amounts,
    order_scalars,
)
from apportion.plugins.capacity.ledger_sums import Listers, note_listers
from apportion.plugins.capacity.tree import TreeSetup
from apportion.resources import Resource
from apportion.state import check

FLAT_MEMO = "capacity.flat"
FLAT_LEDGER_MEMO = "capacity.flat-ledger"

#: the attribute fields a flat session reads, compared by the self-check
_COMPARED = ("deserved", "guarantee", "capability", "real_capability", *FIELDS)


@dataclass(frozen=True)
class _FlatLimits:
    """Every queue's flat-mode attributes with no accounting, for the inputs they were built from. The
    ledger's `tree` (its `limits` name the queues); shared by the sessions that take them, so never
    changed once built."""

    inputs: tuple[Any, ...]
    limits: dict[str, QueueAttr]
    total_guarantee: Resource

    def session_attr(self, name: str) -> QueueAttr:
        """The queue's attributes for a session: its limits (shared), an account of its own, empty."""
        return self.limits[name].own_copy()


class FlatLedgerSetup(TreeSetup):
    """Flat mode's session-open build, from the ledger when the session carries a memo."""

    def build_flat_queue_attrs(self, ssn: Session) -> None:
        """Flat mode: from the ledger (a memo, every amount exact), else the recount (`build_queue_attrs`)."""
        if ssn.memo is not None and self._flat_from_ledger(ssn):
            return
        self.attrs = {}
        self._shared, self._owned, self._ledger = set(), [], None
        self.total_guarantee = Resource()
        self.build_queue_attrs(ssn)

    def _flat_limits(self, ssn: Session) -> _FlatLimits:
        assert ssn.memo is not None
        inputs = self._tree_inputs(ssn)
        cached = ssn.memo.get(FLAT_MEMO)
        if isinstance(cached, _FlatLimits) and cached.inputs == inputs:
            return cached
        # as build_queue_attrs builds them, for every queue (a queue's limits do not depend on its jobs)
        self.total_guarantee = Resource()
        for q in sorted(ssn.queues.values(), key=lambda q: q.name):
            self.total_guarantee.add(self._guarantee_of(q))
        limits: dict[str, QueueAttr] = {}
        for name in sorted(ssn.queues):
            attr = self.new_flat_queue_attr(ssn.queues[name])
            self.finish_flat_queue_attr(attr)
            limits[name] = attr
        cached = ssn.memo[FLAT_MEMO] = _FlatLimits(inputs, limits, self.total_guarantee)
        return cached

    def _flat_from_ledger(self, ssn: Session) -> bool:
        """Build the attributes from the limits and the ledger kept in the memo; only the jobs that are new
        or changed are charged. False (nothing built) when some job's amounts are not exact."""
        assert ssn.memo is not None
        flat = self._flat_limits(ssn)
        self.total_guarantee = flat.total_guarantee
        ledger = ssn.memo.get(FLAT_LEDGER_MEMO)
        if not isinstance(ledger, Ledger) or ledger.tree is not flat or ledger.elastic_enabled != self.elastic_enabled:
            ledger = ssn.memo[FLAT_LEDGER_MEMO] = Ledger(flat, self.elastic_enabled)
        plan: list[tuple[JobInfo, tuple[Amount | None, ...]]] = []
        for job in ledger.split(ssn.jobs, ssn.snapshot.jobs_delta):
            if job.queue not in flat.limits:
                continue
            amounts = job_amounts(job, self.elastic_enabled)
            if amounts is None:
                return False
            plan.append((job, amounts))
        rest: list[tuple[JobInfo, tuple[Amount | None, ...]]] = []
        kept: list[tuple[JobInfo, tuple[str, ...], tuple[Amount | None, ...]]] = []
        for job, amounts in plan:
            if Ledger.keeps(job):
                kept.append((job, (job.queue,), amounts))
            else:
                rest.append((job, amounts))
        ledger.admit_many(kept)
        ledger.refresh(flat.session_attr)
        # a kept job always charges allocated, so a queue has a kept job exactly when it has sums
        names = sorted({*ledger.sums, *(job.queue for job, _ in rest)})
        self.attrs = {name: ledger.base[name] for name in names}
        self._shared = set(self.attrs)
        self._owned = []
        self._ledger = ledger
        # the queue report made from the ledger's last one assumes the same queues: else it is made afresh
        ledger.rebuilt &= self._shared
        if ledger.report is not None and ledger.report.statuses.keys() != self._shared:
            ledger.report = None
        rest.sort(key=lambda x: x[0].uid)
        self._charge_rest(ledger, rest)
        if check.enabled():
            self._check_flat_ledger(ssn)
        return True

    def _charge_rest(self, ledger: Ledger, rest: list[tuple[JobInfo, tuple[Amount | None, ...]]]) -> None:
        """Charge the jobs the ledger does not keep (uid order) on copies of their queues' attributes, with
        each sum's scalar names in a recount's order (as tree.py `charge_from_ledger` does along a
        path)."""
        moved: set[str] = set()
        listers: Listers = {}
        for job, amounts in rest:
            self._charge_jobs(self.attrs[job.queue], [job])
            moved.add(job.queue)
            note_listers(listers, job.queue, job.uid, amounts)
        order_scalars(self.attrs, ledger, listers)
        for name in moved:
            self.attrs[name].update_share()

    def flat_recount(self, ssn: Session) -> dict[str, QueueAttr]:
        """The attributes `build_queue_attrs` gives for this session (the reference the ledger must equal);
        the plugin's own state is left as it was."""
        saved = self.attrs, self.total_guarantee, self._shared, self._owned
        self.attrs, self.total_guarantee, self._shared, self._owned = {}, Resource(), set(), []
        try:
            self.build_queue_attrs(ssn)
            return self.attrs
        finally:
            self.attrs, self.total_guarantee, self._shared, self._owned = saved

    def _check_flat_ledger(self, ssn: Session) -> None:
        """The self-check (APPORTION_CHECK_STATE): the ledger's attributes against a recount."""
        ref = self.flat_recount(ssn)
        if list(ref) != list(self.attrs):
            raise InternalError(f"capacity flat ledger: queues {list(self.attrs)}, a recount gives {list(ref)}")
        for name, want in ref.items():
            got = self.attrs[name]
            if got.share != want.share:
                raise InternalError(f"capacity flat ledger: queue {name} share is {got.share}, a recount gives "
                                    f"{want.share}")
            for f in _COMPARED:
                g, w = getattr(got, f), getattr(want, f)
                if (g is None) != (w is None) or (g is not None and not (
                        g == w and list(g.scalars) == list(w.scalars))):
                    raise InternalError(f"capacity flat ledger: queue {name} {f} is {g}, a recount gives {w}")
            if got.terms != want.terms:
                raise InternalError(f"capacity flat ledger: queue {name} realCapability terms differ from a recount")
