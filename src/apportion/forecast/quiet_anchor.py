"""What the early quiet test (forecast/quiet_early.py, semantics F3) keeps of the last session it opened:
`_Anchor`, FutureIdle as opened and kept current as tasks leave node rows or come to them (`move`),
allocate's bound over it row by row (`KeptBound`, F5), whether it is whole (F8), and capacity's backlog
watch."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import field

import numpy as np

from apportion.cluster.model import QueueInfo, TaskInfo
from apportion.cluster.node_table import NodeTable
from apportion.forecast.quiet_bound import KeptBound, RowsMade
from apportion.forecast.quiet_whole import EXACT, whole_request
from apportion.framework.interface import Plugin
from apportion.framework.session import Session
from apportion.lean_dataclass import dataclass
from apportion.plugins.capacity.backlog_watch import BacklogWatch
from apportion.resources import Resource
from apportion.state import check

#: `_Anchor.move` takes whether a request it moves is whole from the request objects the test has found
#: whole already (`WholeRequests`, which asked `whole_request` of each when its job's facts were
#: added); False: `whole_request` asked of each request moved (the reference)
WHOLE_BY_ID = True
#: `_Anchor.future_whole` judges the rows moved since its last answer in one numpy pass over them;
#: False: row by row in Python floats (the reference)
ROWS_AT_ONCE = True
#: up to this many rows are judged in Python all the same (under callgrind a numpy pass costs about
#: 60k instructions and 1.5k a row, a row read and judged in Python about 5k)
_FEW_ROWS = 8


#: one task's placement as FutureIdle reads it: its row, its request and that as a table row
_Placed = tuple[int, Resource, np.ndarray]


@dataclass
class _Anchor:
    """What the early test keeps of the last session it opened (see the module)."""

    actions: list[str]
    gang: Plugin[Session] | None
    decides: bool
    enqueue: bool
    queues: dict[str, QueueInfo]
    #: the session's node table (its columns, rows and `vector`; never its arrays, which the session
    #: changes when it runs) and a copy of its FutureIdle as opened, kept current
    table: NodeTable
    future: np.ndarray
    #: capacity's backlog test without a session (None: the conf has no enqueue)
    watch: BacklogWatch | None
    uid: str = ""
    #: whether an early test has looked at the jobs the session logged or noted (`EarlyView.live`)
    live_seen: bool = False
    #: rows made for requests, as `NodeTable.vector` makes them (`RowsMade`)
    rows: RowsMade = field(default_factory=RowsMade)
    #: allocate's bound over `future`, kept row by row (told each row `move` changes)
    bound: KeptBound = field(init=False)
    #: the rows `move` changed since `future_whole` last looked, and those not whole then (`future`
    #: is whole when the anchor is made: `_anchor_of`)
    unchecked: set[int] = field(default_factory=set)
    not_whole: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.bound = KeptBound(self.future)

    def task_vec(self, t: TaskInfo) -> np.ndarray:
        """The task's request as a row of the session's node table (kept on the task, as a session does)."""
        if t.vec is None:
            t.vec = self.rows.row(self.table, t.resreq)
        return t.vec

    def future_whole(self) -> bool:
        """`whole_table(self.future)`, looking again only at the rows moved since the last answer."""
        if self.unchecked:
            future, not_whole = self.future, self.not_whole
            rows = list(self.unchecked)
            if ROWS_AT_ONCE and len(rows) > _FEW_ROWS:
                # `whole_table`'s two tests per row (NaN and the infinities fail the first)
                sub = future[rows]
                whole = ((np.abs(sub) < EXACT).all(axis=1) & (sub == np.floor(sub)).all(axis=1)).tolist()
                if check.enabled() and whole != [_row_whole(future[row].tolist()) for row in rows]:
                    raise check.StateCheckError(f"{check.ENV}: rows {rows} of FutureIdle judged whole at once "
                                                f"{whole}, one by one otherwise")
            else:
                whole = [_row_whole(future[row].tolist()) for row in rows]
            for row, ok in zip(rows, whole):
                if ok:
                    not_whole.discard(row)
                else:
                    not_whole.add(row)
            self.unchecked = set()
        return not self.not_whole

    def move(self, old: dict[str, _Placed], new: dict[str, _Placed], keys: list[str] | None = None,
             whole_ids: AbstractSet[int] = frozenset(), checking: bool = False) -> bool:
        """FutureIdle as the node table has it once the job's placed tasks are `new` rather than
        `old`: a task that left a row gives its request back, one that came takes it; a task on the
        same row with the same request does neither. False when a request moved is not a whole
        amount below 2**50 (then the sums could depend on their order). `keys`, when given, holds
        every task key whose entry may differ between `old` and `new` (the others are one entry).
        `whole_ids`: ids of request objects known to be whole (`WholeRequests.whole`, which keeps
        them alive, so that an id is not another object's): those are not asked again
        (`WHOLE_BY_ID`; compared with `whole_request` under the self-check, `checking`)."""
        if keys is None:
            olds: Iterable[tuple[str, _Placed]] = old.items()
            news: Iterable[tuple[str, _Placed]] = new.items()
        else:
            # the other keys are one entry in both: looked up in the whole maps, they give what the
            # maps cut down to `keys` give
            olds = [(k, old[k]) for k in keys if k in old]
            news = [(k, new[k]) for k in keys if k in new]
        if not WHOLE_BY_ID:
            whole_ids = frozenset()
        # `_whole` written out, as in `move_keys`
        future, stale, unchecked = self.future, self.bound.stale, self.unchecked
        for key, (row, r, vec) in olds:
            n = new.get(key)
            if n is None or n[0] != row or n[1] is not r:
                if (checking or id(r) not in whole_ids) and not _whole(r, whole_ids, checking):
                    return False
                future[row] += vec
                stale.add(row)
                unchecked.add(row)
        for key, (row, r, vec) in news:
            o = old.get(key)
            if o is None or o[0] != row or o[1] is not r:
                if (checking or id(r) not in whole_ids) and not _whole(r, whole_ids, checking):
                    return False
                future[row] -= vec
                stale.add(row)
                unchecked.add(row)
        return True


    def move_keys(self, old: dict[str, _Placed], new: dict[str, _Placed], keys: list[str],
                  whole_ids: AbstractSet[int] = frozenset(), checking: bool = False) -> bool:
        """`move(old, new, keys, whole_ids, checking)` without the lists of entries it makes: the
        same entries given back, then the same taken, in `keys`' order."""
        if not WHOLE_BY_ID:
            whole_ids = frozenset()
        # `_whole` written out: a request known whole by its id is not asked (unless the self-check
        # compares)
        future, stale, unchecked = self.future, self.bound.stale, self.unchecked
        for key in keys:
            o = old.get(key)
            if o is not None:
                n = new.get(key)
                row, r, vec = o
                if n is None or n[0] != row or n[1] is not r:
                    if (checking or id(r) not in whole_ids) and not _whole(r, whole_ids, checking):
                        return False
                    future[row] += vec
                    stale.add(row)
                    unchecked.add(row)
        for key in keys:
            n = new.get(key)
            if n is not None:
                o = old.get(key)
                row, r, vec = n
                if o is None or o[0] != row or o[1] is not r:
                    if (checking or id(r) not in whole_ids) and not _whole(r, whole_ids, checking):
                        return False
                    future[row] -= vec
                    stale.add(row)
                    unchecked.add(row)
        return True


def _row_whole(row: list[float]) -> bool:
    """Every amount of the row a whole number below 2**50 (`whole_table` on one row; a NaN fails the
    bounds, an infinity too)."""
    for v in row:  # noqa: SIM110 - per row moved: no generator
        if not (-EXACT < v < EXACT and v.is_integer()):
            return False
    return True


def _whole(r: Resource, whole_ids: AbstractSet[int], checking: bool) -> bool:
    """`whole_request(r)`, taken from `whole_ids` when it names `r` (see `_Anchor.move`)."""
    if id(r) in whole_ids:
        if checking and not whole_request(r):
            raise check.StateCheckError(f"{check.ENV}: request {r} known whole by its id is not whole")
        return True
    return whole_request(r)
