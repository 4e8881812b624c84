"""capacity's bucket plans carried from session to session (`Admission._plan`, K40/K47): kept per bucket
with the QueueInfo they were worked out with, and a session's plans taken whole by the next session over
the same queues.
"""

from __future__ import annotations

from collections.abc import Callable

from apportion.cluster.model import QueueInfo
from apportion.framework.kept_queues import KeptQueues
from apportion.plugins.capacity.buckets import Buckets
from apportion.plugins.capacity.buckets import ReqKey as _ReqKey
from apportion.resources import Resource
from apportion.state import check

#: the answer for a job of one leaf and minResources when it reads no level's accounting (answer, why,
#: None), else (PERMIT, None, the levels to walk: the leaf, then its ancestors up to the root)
_Plan = tuple[int, str | None, tuple[str, ...] | None]
#: the memo's entry: the buckets' plans and the levels' texts, with the tree they hold for (`_KeptPlans`)
PLANS_MEMO = "capacity.admission-plans"

#: tests switch this off: a session whose queues are the last one's (over the same tree) looks each
#: bucket's plan up in the kept ones (`_carried_plan`) rather than taking the last session's plans whole
#: (`Admission._shared_plans`, K47)
share_plans = True

#: a bucket's plan as `bare_answers` reads it when it walks the levels (bare_answers.py `_spec`): its
#: minResources by value, a minResources of that value, and the levels root first after the first
_Walk = tuple[_ReqKey, Resource, tuple[str, ...]]


class Plans(dict[int, _Plan]):
    """Per bucket number, its plan (`Admission._plan`); with `walks`, `fixed` and `group`, the plan as
    `bare_answers` reads it, worked out from the plan and the bucket once for as long as these plans are
    (K55): per bucket number, the levels to walk after the first (`_Walk`) and its group, or the answer
    without text; per group (a first level and a minResources by value), its level, minResources by
    value and a minResources of that value."""

    __slots__ = ("fixed", "group", "group_of", "groups", "walks")

    def __init__(self) -> None:
        super().__init__()
        self.walks: dict[int, _Walk] = {}
        self.fixed: dict[int, str | None] = {}
        self.group: dict[int, int] = {}
        self.group_of: dict[tuple[str, _ReqKey], int] = {}
        self.groups: list[tuple[str, _ReqKey, Resource]] = []


class _KeptPlans:
    """The buckets' plans (`Admission._plan`) carried from session to session, with the levels' paths and
    `queue NAME: ` texts.

    Besides the bucket's queue (its QueueInfo: there or not, Open or not) and its minResources (fixed
    per bucket), a plan reads the tree: which queues have attributes, whether one is a leaf, its
    ancestors and whether a realCapability is set, and whether the plugin refuses every decision. The
    tree kept in the memo (tree.py, TREE_MEMO) stays one object while the queue specs, the cluster total
    and the arguments it was built from are unchanged, and a session takes its attributes from it then;
    a memo's snapshots replace a QueueInfo that changes rather than edit it (Snapshot.memo). So while
    the session's tree is this object and nothing is refused, a bucket's plan holds while its queue is
    the same object (or still absent), and the paths and texts hold as they are."""

    __slots__ = ("buckets", "epoch", "names", "plans", "queues", "session_plans", "tree", "wheres")

    def __init__(self, tree: object) -> None:
        self.tree = tree
        #: per bucket number: the QueueInfo (or None) its plan was worked out with, and the plan
        self.plans: dict[int, tuple[QueueInfo | None, _Plan]] = {}
        #: the queues (names and objects, in order) of the last session that took its plans from here,
        #: and that session's plans per bucket number: a session with the same queues takes them as
        #: they are (each holds while its queue is the same object), not bucket by bucket
        self.queues = KeptQueues({})
        self.session_plans = Plans()
        #: the numbering `session_plans` is keyed in: the buckets object and its epoch
        self.buckets: Buckets | None = None
        self.epoch = -1
        #: the plugin's `_names` and `_wheres`, which depend on the tree alone
        self.names: dict[str, tuple[str, ...]] = {}
        self.wheres: dict[tuple[str, str], str] = {}


def shared_plans(kept: _KeptPlans, known: dict[str, QueueInfo], buckets: Buckets,
                 plan_of: Callable[[str, Resource | None, _ReqKey | None], _Plan]) -> Plans:
    """The plans of the last session over this tree when this session's queues (`known`) are its queues
    (the same names and objects, in order) and its bucket numbering is the same: each of them is the
    one `Admission._carried_plan` gives this session (it holds while its bucket's queue is the same
    object), and those this session adds hold for the next one over the same queues too. Else a new
    dict, kept for the sessions after. `plan_of` is `Admission._plan` (the self-check's reference)."""
    mine = kept.queues
    if kept.buckets is buckets and kept.epoch == buckets.epoch and mine.same(known):
        plans = kept.session_plans
        if check.enabled():
            for i, plan in plans.items():
                queue, key, min_req = buckets.info[i]
                if plan != plan_of(queue, min_req, key):
                    raise check.StateCheckError(f"{check.ENV}: capacity's plan for the jobs of queue {queue} with "
                                                f"minResources {key} kept from the last session over the same "
                                                "queues differs from the one worked out now")
        return plans
    kept.queues = KeptQueues(known)
    kept.buckets, kept.epoch = buckets, buckets.epoch
    plans = kept.session_plans = Plans()
    return plans
