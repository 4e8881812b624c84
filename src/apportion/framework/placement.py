"""Incremental node choice for interchangeable tasks: allocate's hot path.

allocate fits, filters and scores every node for every task. Tasks with identical placement inputs
(the same request and the same constraints: one *placement key*) get the same per-node answers,
except on the nodes that placements have touched since those answers were computed. When every
predicate and node-order plugin in use vouches that its answer for a node depends only on that node
and the task's key (no normalisation across nodes, no global state), this cache keeps the per-node
arrays per key and recomputes only the touched rows. The choice is the one a full recomputation
makes, bit for bit; `tests/framework/test_placement.py` checks that on random sessions.

A plugin vouches by registering a key function with `Session.add_node_local_key`; it returns a
hashable summary of what the plugin reads from the task, or None when, for this task, its answers
are not node-local (nodeorder's normalised affinity and soft-taint scores, for instance).

A placement changes one node, so the common refresh is one row. Numpy's per-call overhead on a
one-row array costs more than the arithmetic, so the plugins also register one-node functions in
plain floats (the same operations in the same order, hence the same values), and the cache keeps the
best nodes ranked (`_Answers.top`) so that choosing does not pass over every node either. A session
over a memo starts from the last session's answers, the rows that may have changed since pending
(framework/placement_carry.py, docs/semantics.md K44).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from apportion.cluster.model import TaskInfo
from apportion.framework import extension as ep
from apportion.framework.placement_carry import (
    PlacementSession,
    RowState,
    carried_answers,
    check_carried,
    fail,
    same_rows,
)
from apportion.resources import MIN_RESOURCE
from apportion.state import check

#: How many of the best nodes a key keeps ranked at least (see _Answers.top).
TOP = 32
#: ... and at least one node in this many: a placement usually drops one node from every key's ranking
#: (the spread puts the next task on the least-loaded node, which every key ranks high), so a ranking
#: of TOP runs empty every TOP placements, and ranking again passes over every node: on 5,000 nodes
#: 3,000 rankings in 50,000 placements, 280 with one node in 16 kept; on 1,000 nodes TOP stays
#: (a longer ranking costs its insertions more than it saves)
TOP_SHARE = 16
#: Up to this many touched rows are refreshed one node at a time (`_row`), more with the array functions
#: (callgrind, the 1k cycle's session: 4 -> 3.756G instructions, 12 -> 3.724G, 24 -> 3.756G).
ROW_REFRESH = 12
#: False: every session works its placement answers out afresh (the reference the property tests
#: compare with); True: a session carries the last session's answers over the memo
#: (framework/placement_carry.py, K44)
CARRY_ANSWERS = True
#: False: answers worked out over arrays for many touched rows are recorded row by row (`_Answers.update_each`,
#: the reference); True: at once (`_Answers.update_rows`, docs/semantics.md K48)
UPDATE_AT_ONCE = True
#: "not computed yet" where None is an answer
_UNSET: Any = object()
#: The bound when `top` holds every feasible node.
_ALL: tuple[int, float, int] = (0, 0.0, 0)
#: `_Answers.pending` of answers worked out in this session
_NO_ROWS: frozenset[int] = frozenset()


class _Answers:
    """Per-node answers for one placement key, current as of `pos` in the node table's touch log.

    Besides the per-node arrays it keeps the best nodes ranked: `top` is the sorted list of rank keys
    (-class, -score, row) of every feasible node whose key is <= `bound` (class 2: fits Idle, 1: fits
    FutureIdle only), and every node outside it ranks after `bound`. The best node is then `top[0]`,
    and a placement, which changes one node, costs a bisect instead of a pass over every node.
    When `top` runs empty the next choice ranks the arrays again.

    Answers carried from the last session (framework/placement_carry.py) are current as of `pos` but
    for the `pending` rows, which the next refresh works out again as well.
    """

    __slots__ = ("pos", "fit", "idle_fit", "ok", "unresolvable", "scores", "top", "in_top", "bound",
                 "unres_rows", "nan", "request", "carried", "pending", "maybe")

    def __init__(self, pos: int, fit: np.ndarray, idle_fit: np.ndarray, ok: np.ndarray,
                 unresolvable: np.ndarray, scores: np.ndarray) -> None:
        self.pos = pos
        #: the key's compared columns and amounts (`compared_request`), set by the cache
        self.request: list[tuple[int, float]] = []
        self.fit = fit  # request <= FutureIdle
        self.idle_fit = idle_fit  # request <= Idle
        self.ok = ok  # the plugin predicates pass
        self.unresolvable = unresolvable  # a plugin predicate failed unresolvably
        self.scores = scores
        self.top: list[tuple[int, float, int]] = []
        self.in_top: dict[int, tuple[int, float, int]] = {}
        self.bound = _ALL
        #: rows that fit FutureIdle but fail a predicate for good (reclaim and preempt skip them)
        self.unres_rows: set[int] = set(np.flatnonzero(fit & unresolvable).tolist())
        #: a NaN score: argmax's treatment of it is left to the full path
        self.nan = bool(np.isnan(scores).any())
        #: carried from the last session and not used since: the `pending` rows are worked out again
        #: at the next refresh (and, under the self-check, the answers then compared with fresh ones)
        self.carried = False
        #: rows whose answers may be stale besides those the table logged since `pos` (carried answers)
        self.pending: frozenset[int] | set[int] = _NO_ROWS
        #: of the pending rows, those that keep their answers if their state is the last session's (K54)
        self.maybe: frozenset[int] = _NO_ROWS
        self.rank()

    def rank(self) -> None:
        """Rank the best max(TOP, nodes / TOP_SHARE) feasible nodes from the arrays: `rank_reference`'s
        ranking with one stable sort per class instead of a partition and a sort of the rows at or above
        the cut. Node-order scores take few distinct values (sums of integer scores over nodes of a few
        shapes), and numpy's partition is slow on many equal values (about 50 us on 875 rows of four
        scores, against 5 us for the stable sort, which finds their runs). Rows come in row order, so the
        stable sort of -score breaks ties by row as the reference's lexsort does. With a NaN score
        nothing is ranked: `choose` leaves the key to the full path then and reads no `top` (the
        reference's partition can put the NaN at the cut, keep no row and fail on the empty ranking)."""
        if self.nan:
            self.top, self.in_top, self.bound = [], {}, _ALL
            return
        feasible = self.fit & self.ok
        idle = feasible & self.idle_fit
        top: list[tuple[int, float, int]] = []
        self.bound = _ALL
        size = max(TOP, len(self.scores) // TOP_SHARE)
        for cls, mask in ((2, idle), (1, feasible & ~self.idle_fit)):
            rows = np.flatnonzero(mask)
            if not len(rows):
                continue
            need = size - len(top)
            if need == 0:
                self.bound = top[-1]
                break
            scores = self.scores[rows]
            order = np.argsort(-scores, kind="stable")[:need]
            top += [(-cls, -score, row)
                    for score, row in zip(scores[order].tolist(), rows[order].tolist(), strict=True)]
            if len(rows) > need:
                self.bound = top[-1]
                break
        self.top = top
        self.in_top = {rank_key[2]: rank_key for rank_key in top}

    def rank_reference(self) -> None:
        """`rank` as a partition at the need-th best score and a lexsort of the rows at or above it (the
        definition the property tests compare `rank` with)."""
        feasible = self.fit & self.ok
        idle = feasible & self.idle_fit
        top: list[tuple[int, float, int]] = []
        self.bound = _ALL
        size = max(TOP, len(self.scores) // TOP_SHARE)
        for cls, mask in ((2, idle), (1, feasible & ~self.idle_fit)):
            rows = np.flatnonzero(mask)
            if not len(rows):
                continue
            need = size - len(top)
            if need == 0:
                self.bound = top[-1]
                break
            scores = self.scores[rows]
            cut = len(rows) > need
            if cut:
                # only the rows scoring at least the need-th best can be among the need best
                kth = np.partition(scores, len(scores) - need)[len(scores) - need]
                rows = rows[scores >= kth]
                scores = self.scores[rows]
            order = np.lexsort((rows, -scores))[:need]
            top += [(-cls, -score, row)
                    for score, row in zip(scores[order].tolist(), rows[order].tolist(), strict=True)]
            if cut:
                self.bound = top[-1]
                break
        self.top = top
        self.in_top = {rank_key[2]: rank_key for rank_key in top}

    def update_each(self, rows: list[int], fit: np.ndarray, idle_fit: np.ndarray, ok: np.ndarray,
                    unres: np.ndarray, scores: np.ndarray) -> None:
        """`update` of each of the rows in turn, from their answers as arrays (the reference of
        `update_rows`)."""
        update = self.update
        for row, *answers in zip(rows, fit.tolist(), idle_fit.tolist(), ok.tolist(), unres.tolist(),
                                 scores.tolist(), strict=True):
            update(row, *answers)

    def update_rows(self, rows: list[int], at: np.ndarray, fit: np.ndarray, idle_fit: np.ndarray, ok: np.ndarray,
                    unres: np.ndarray, scores: np.ndarray) -> None:
        """`update_each` made at once over arrays (docs/semantics.md K48): the rows are distinct (`at`: the
        same rows as an array), and each `update` sets its own row's answers, its own membership of
        `unres_rows`, and takes its own row's rank key out of the ranking and puts the new one in when it
        is at most `bound`, which no update moves. So the end state is the arrays set at the rows, the
        ranking without the rows' old keys and with their new keys at most `bound`, sorted: one state,
        whatever the order, since rank keys of distinct rows are distinct and totally ordered. A NaN
        score is not (a tuple holding one compares unlike a number): with one, or once the answers hold one,
        the rows go one by one, and no ranking is kept (`update`)."""
        if self.nan or np.isnan(scores).any():
            self.update_each(rows, fit, idle_fit, ok, unres, scores)
            return
        self.fit[at] = fit
        self.idle_fit[at] = idle_fit
        self.ok[at] = ok
        self.unresolvable[at] = unres
        self.scores[at] = scores
        unres_rows = self.unres_rows
        if unres_rows:
            unres_rows.difference_update(rows)
        both = fit & unres
        if both.any():
            unres_rows.update(at[both].tolist())
        in_top = self.in_top
        gone = [row for row in rows if row in in_top]
        top = self.top
        if gone:
            for row in gone:
                del in_top[row]
            top = [k for k in top if k[2] in in_top]
        feasible = np.flatnonzero(fit & ok)
        if len(feasible):
            bound = self.bound
            new = [k for k in zip(np.where(idle_fit[feasible], -2, -1).tolist(), (-scores[feasible]).tolist(),
                                  at[feasible].tolist(), strict=True) if k <= bound]
            if new:
                for k in new:
                    in_top[k[2]] = k
                top = sorted(top + new)
        self.top = top

    def update(self, row: int, fit: bool, idle_fit: bool, ok: bool, unres: bool, score: float) -> None:
        """Record one node's fresh answers in the arrays and in the ranking."""
        self.fit[row] = fit
        self.idle_fit[row] = idle_fit
        self.ok[row] = ok
        self.unresolvable[row] = unres
        self.scores[row] = score
        if fit and unres:
            self.unres_rows.add(row)
        else:
            self.unres_rows.discard(row)
        if self.nan or score != score:
            # a NaN rank key compares unlike a number and would break the bisects; `choose` reads no
            # ranking once a score is NaN (the flag stays), so none is kept, as `rank` keeps none
            self.nan = True
            self.top, self.in_top, self.bound = [], {}, _ALL
            return
        old = self.in_top.pop(row, None)
        if old is not None:
            del self.top[bisect.bisect_left(self.top, old)]
        if fit and ok:
            key = (-2 if idle_fit else -1, -score, row)
            if key <= self.bound:
                bisect.insort(self.top, key)
                self.in_top[row] = key


class PlacementCache:
    """Per-key node answers for `Session.choose_node`, refreshed on touched rows only."""

    #: tests switch this off to compare against the full recomputation
    enabled = True

    def __init__(self, ssn: PlacementSession) -> None:
        self.ssn = ssn
        self.answers: dict[Hashable, _Answers] = {}
        self.keys: dict[str, Hashable | None] = {}
        self._row_fns: tuple[list[RowPredicate], list[RowScore]] | None = None
        self._key_fns: object = _UNSET
        #: the self-check's switch, read once per session (the session's node choice compares its two
        #: ways of choosing under it)
        self.checking = check.enabled()
        #: per plugin, the per-node state its node-local answers read (`placement_carry.row_state`), and the
        #: last session's node table and row states when answers were carried from it
        self.row_states: dict[str, RowState] = {}
        self.since: tuple[Any, dict[str, RowState]] | None = None
        if CARRY_ANSWERS and self.enabled:
            self.answers = carried_answers(ssn, self)

    def let_go(self) -> None:
        """Forget every answer (the next session over the memo carried them on)."""
        self.answers = {}

    def key(self, task: TaskInfo) -> Hashable | None:
        """The task's placement key, or None when some plugin in use cannot vouch for it.

        What the key summarises (request, constraints, configuration) is fixed for the session, so it
        is computed once per task."""
        if not self.enabled:
            return None
        keys = self.keys
        k = keys.get(task.uid, _UNSET)
        if k is _UNSET:
            k = keys[task.uid] = self._key(task)
        return k

    def _key(self, task: TaskInfo) -> Hashable | None:
        ssn = self.ssn
        key_fns = self._key_functions()
        if key_fns is None:
            return None
        parts: list[Hashable] = [ssn.task_vec(task).tobytes(), ssn.task_cols(task).tobytes()]
        for point, name, key_fn in key_fns:
            summary = key_fn(task) if key_fn is not None else None
            if summary is None:
                return None
            parts.append((point, name, summary))
        return tuple(parts)

    def _key_functions(self) -> list[tuple[str, str, Callable[[TaskInfo], Hashable | None] | None]] | None:
        """(point, plugin, its key function or None) of every consulted predicate and node-order plugin,
        in order; None when a best-node plugin is consulted (no task has a key). Fixed once the plugins
        have registered, as `_row_functions` is."""
        if self._key_fns is _UNSET:
            ssn = self.ssn
            if ssn.has_fn(ep.BEST_NODE):
                self._key_fns = None
            else:
                self._key_fns = [(point, opt.name, ssn.node_local_keys.get(opt.name))
                                 for point in (ep.PREDICATE, ep.NODE_ORDER) for _, opt, _fn in ssn.consulted(point)]
        return self._key_fns  # type: ignore[return-value]

    def choose(self, task: TaskInfo) -> tuple[int, bool] | None:
        """The node row allocate would pick for `task` and whether it fits Idle, or None when there is
        no feasible node or the task is not cacheable (the caller then takes the full path, which also
        explains failures)."""
        return self.choose_keyed(task, self.key(task))

    def choose_keyed(self, task: TaskInfo, key: Hashable | None, fit: np.ndarray | None = None,
                     ) -> tuple[int, bool] | None:
        """`choose` for a task whose key the caller made (`key(task)`). `fit`: the resource test against
        FutureIdle of every row (`NodeTable.fits`) made over the table as it stands, or None; answers
        worked out over arrays then take it instead of making it again."""
        if key is None:
            return None
        cached = self._current(key, task, fit)
        if cached.nan:
            return None
        if not cached.top and cached.bound is not _ALL:
            cached.rank()
        if not cached.top:
            return None
        if cached.unres_rows:
            self.ssn.unresolvable_nodes.setdefault(task.uid, set()).update(cached.unres_rows)
        cls, _, row = cached.top[0]
        # the first maximum in row (node-name) order, as best_node's argmax over the candidate rows
        return row, cls == -2

    def fits_nowhere(self, task: TaskInfo) -> bool:
        """Whether the cache's current answers for the task's key say that no node's FutureIdle fits the
        request (False when it holds no current answers for it, as when the task has no key)."""
        key = self.key(task)
        if key is None:
            return False
        cached = self.answers.get(key)
        return (cached is not None and cached.pos == len(self.ssn.table.touched) and not cached.carried
                and len(cached.fit) > 0 and not cached.fit.any())

    def keeps_answers(self, key: Hashable) -> bool:
        """Whether a choice for `key` now would bring answers it holds up to date rather than work them
        out over every node: answers current or touched on at most ROW_REFRESH entries of the log since
        (refreshed one node at a time), or carried from the last session and not to be worked out again
        (their pending rows refreshed over arrays: a handful of rows, the first choice of a run session);
        False when there are none yet, or many rows were touched (the caller then tests every row's
        FutureIdle first, which that pass would test anyway)."""
        cached = self.answers.get(key)
        if cached is None:
            return False
        behind = len(self.ssn.table.touched) - cached.pos + len(cached.pending)
        return behind <= ROW_REFRESH or (cached.carried and behind <= max(8, len(cached.fit) // 4))

    def _current(self, key: Hashable, task: TaskInfo, fit_all: np.ndarray | None = None) -> _Answers:
        table = self.ssn.table
        log = table.touched
        cached = self.answers.get(key)
        n_nodes = len(table.names)
        if cached is None or len(log) - cached.pos + len(cached.pending) > max(8, n_nodes // 4):
            cached = self._compute(task, np.arange(n_nodes), len(log), fit_all)
            self.answers[key] = cached
        elif len(log) > cached.pos or cached.carried:
            carried = cached.carried
            if carried:
                stale = cached.pending
                if cached.maybe:
                    stale = stale - same_rows(self, table, self._key_functions() or [], cached.maybe)
                rows = sorted(stale.union(log[cached.pos:]))
                cached.carried, cached.pending, cached.maybe = False, _NO_ROWS, _NO_ROWS
            # one entry since (the common case: this key's own last placement) needs no set or sort
            elif len(log) - cached.pos == 1:
                rows = [log[cached.pos]]
            else:
                rows = sorted(set(log[cached.pos:]))
            if len(rows) <= ROW_REFRESH:
                for row in rows:
                    cached.update(row, *self._row(task, row, cached.request))
            else:
                at = np.array(rows, dtype=np.int64)
                fit, idle_fit, ok, unres, scores = self._arrays(task, at, None if fit_all is None else fit_all[at])
                if UPDATE_AT_ONCE:
                    cached.update_rows(rows, at, fit, idle_fit, ok, unres, scores)
                else:
                    cached.update_each(rows, fit, idle_fit, ok, unres, scores)
            cached.pos = len(log)
            if carried and self.checking:
                what = check_carried(cached, self._compute(task, np.arange(n_nodes), len(log)))
                if what is not None:
                    fail(key, what)
        return cached

    def _compute(self, task: TaskInfo, rows: np.ndarray, pos: int, fit: np.ndarray | None = None) -> _Answers:
        answers = _Answers(pos, *self._arrays(task, rows, fit))
        answers.request = compared_request(self.ssn.task_vec(task), self.ssn.task_cols(task))
        return answers

    def _arrays(self, task: TaskInfo, rows: np.ndarray, fit: np.ndarray | None = None,
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The rows' answers as arrays: fit (FutureIdle), idle fit, predicates pass, unresolvable, score.
        `rows` are distinct and in row order (every row, or the touched ones); `fit`, when given, is the
        rows' resource test against FutureIdle made by the caller over the table as it stands (an array
        of the caller's, taken over)."""
        ssn = self.ssn
        table = ssn.table
        vec, cols = ssn.task_vec(task), ssn.task_cols(task)
        future, idle = table.future, table.idle
        if len(rows) != len(future):
            # distinct rows in order as many as the table's are every row: gathered, they would be a copy
            # of the arrays in the same order (about 10 us each on 1,000 nodes)
            future, idle = future[rows], idle[rows]
        verdict = ssn.plugin_predicates(task, rows)
        return (table.fits(vec, cols, future) if fit is None else fit, table.fits(vec, cols, idle),
                verdict.ok.copy(), verdict.unresolvable.copy(), ssn.node_scores(task, rows))

    def _row(self, task: TaskInfo, row: int, request: list[tuple[int, float]] | None = None,
             ) -> tuple[bool, bool, bool, bool, float]:
        """One node's answers (fit, idle fit, predicates pass, unresolvable, score) without arrays where the
        plugins offer one-node functions; the same values `_compute` gives for that row. `request` is
        the task's compared columns and amounts (`compared_request`), when the caller holds them."""
        ssn = self.ssn
        table = ssn.table
        if request is None:
            request = compared_request(ssn.task_vec(task), ssn.task_cols(task))
        preds, scorers = self._row_functions()
        fit = _fits(request, table.future[row].tolist())
        idle_fit = _fits(request, table.idle[row].tolist())
        ok, unres = True, False
        for pred in preds:
            p_ok, p_unres = pred(task, row)
            if not p_ok:
                # plugin_predicates: a node failing one plugin is not asked by the next
                ok, unres = False, p_unres
                break
        score = 0.0
        for scorer in scorers:
            score += scorer(task, row)
        return fit, idle_fit, ok, unres, score

    def _row_functions(self) -> tuple[list[RowPredicate], list[RowScore]]:
        """Per consulted predicate / node-order plugin, its one-node function, else its array function on
        a one-row array."""
        if self._row_fns is None:
            ssn = self.ssn
            preds: list[RowPredicate] = []
            for _, opt, fn in ssn.consulted(ep.PREDICATE):
                preds.append(ssn.node_row_fns.get(opt.name) or functools.partial(_predicate_on_one_row, fn))
            scorers: list[RowScore] = []
            for _, opt, fn in ssn.consulted(ep.NODE_ORDER):
                scorers.append(ssn.node_row_fns.get(opt.name) or functools.partial(_score_on_one_row, fn))
            self._row_fns = (preds, scorers)
        return self._row_fns


#: a plugin's one-node predicate: (task, row) -> (passes, fails for good)
RowPredicate = Callable[[TaskInfo, int], tuple[bool, bool]]
#: a plugin's one-node score: (task, row) -> score
RowScore = Callable[[TaskInfo, int], float]


def compared_request(req: np.ndarray, cols: np.ndarray) -> list[tuple[int, float]]:
    """(column, amount) of the request on each column rule (a) compares, in plain floats."""
    request = req.tolist()
    return [(column, request[column]) for column in cols.tolist()]


def _fits(request: list[tuple[int, float]], available: list[float]) -> bool:
    """NodeTable.fits on one row, in plain floats (same comparisons, same tolerance)."""
    for column, amount in request:
        have = available[column]
        if not (amount < have or abs(amount - have) < MIN_RESOURCE):
            return False
    return True


def _predicate_on_one_row(fn: Callable[..., Any], task: TaskInfo, row: int) -> tuple[bool, bool]:
    verdict = fn(task, np.array([row]))
    return bool(verdict.ok[0]), bool(verdict.unresolvable[0])


def _score_on_one_row(fn: Callable[..., Any], task: TaskInfo, row: int) -> float:
    return float(fn(task, np.array([row]))[0])
