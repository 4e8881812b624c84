"""The session's node choice: the predicates and scores that pick a node for a task.

Follows Volcano's `util/predicate_helper.go` (PredicateNodes: a node failing one plugin is not asked by
the next; unresolvable failures remembered for reclaim and preempt) and `util/scheduler_helper.go`
(PrioritizeNodes, SelectBestNode), with allocate's resource test (`actions/allocate/allocate.go`:
request <= FutureIdle, then Idle preferred). Vectorised over the node table's rows; allocate's hot path
goes through the placement cache (framework/placement.py) first. `Session` inherits this.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from apportion.cluster.model import NodeInfo, TaskInfo
from apportion.cluster.node_table import NodeTable
from apportion.framework import extension as ep
from apportion.framework.dispatch import Dispatch
from apportion.framework.interface import NodeFilter
from apportion.framework.placement import PlacementCache
from apportion.lean_dataclass import dataclass
from apportion.resources import format_amount
from apportion.state import check

#: Up to this many touch-log entries since a failure, `FailedChoice.stands` compares the touched rows
#: only, else every row (both are a few numpy calls; the whole table costs more than a handful of rows)
TOUCHED_ROWS_COMPARED = 32
#: False: a task's compared columns come from the session's table (`NodeTable.compare_columns`, the
#: reference); True: from arrays kept across sessions by the table's columns (`task_cols`, docs/semantics.md K58)
CARRIED_COLUMNS = True
#: the kept compared columns, by (table columns, request scalar names); read-only arrays (the table's)
_COMPARED: dict[tuple[tuple[str, ...], tuple[str, ...]], np.ndarray] = {}
#: past this many entries the kept columns are let go (a process sees a handful of request shapes)
_MOST_COMPARED = 1024
#: False: `choose_node` is `choose_node_reference` (the step-by-step choice the property tests compare with)
LEAN_CHOICE = True


@dataclass(slots=True)
class FailedChoice:
    """allocate's choice of a node for a task that found none, as of the node table's touch log at `pos`.

    The full choice is a function of the node table, the plugins' per-node state (which every change to
    a node moves along with the table, and the table logs the row) and what the task's placement key
    summarises: its request and what each predicate and node-order plugin reads of it (a plugin that
    vouches for node-local answers words its reasons from the same reads). So until a row is touched,
    a task with the same key fails with the same summary and the same unresolvable rows, which are
    recorded for it as the full predicate records them (reclaim and preempt read them per task).
    A request that fits no node's FutureIdle asks no plugin: that failure is a function of the request
    and the FutureIdle alone, is kept by the request, and stands past touches that left FutureIdle
    as it was (`stands`)."""

    pos: int
    summary: list[tuple[str, int]]
    unresolvable: list[int]
    #: for a request no node's FutureIdle fits: the FutureIdle it was compared with, on the compared
    #: columns (the failure is a function of those values alone, see `stands`); None otherwise
    future: np.ndarray | None = None
    cols: np.ndarray | None = None

    def stands(self, table: NodeTable) -> bool:
        """Whether the failure holds at the table's current touch position: nothing touched since, or,
        for a request that fit nowhere, every node's FutureIdle on the compared columns the same bit for
        bit (a gang placed and discarded since, say). Bits, not `==`: -0.0 and 0.0 compare equal but a
        best-node amount of -0.0 is worded differently; NaN never equals itself but has the same bits."""
        pos = len(table.touched)
        if self.pos == pos:
            return True
        if self.future is None or self.cols is None:
            return False
        since = table.touched[self.pos:]
        if len(since) <= TOUCHED_ROWS_COMPARED:
            # only touched rows can have changed (the table logs every change)
            rows = list(set(since))
            now, then = table.future[rows][:, self.cols], self.future[rows]
        else:
            now, then = table.future[:, self.cols], self.future
        if not np.array_equal(now.view(np.int64), then.view(np.int64)):
            return False
        self.pos = pos
        return True

    def replay(self, ssn: NodeChoice, task: TaskInfo) -> list[tuple[str, int]]:
        """What the full choice would record and return for `task`: its summary (a copy)."""
        if self.unresolvable:
            ssn.unresolvable_nodes.setdefault(task.uid, set()).update(self.unresolvable)
        return list(self.summary)


class NodeChoice(Dispatch):
    """Predicates, scores and the node choice of allocate, reclaim and preempt, over the node table."""

    nodes: list[NodeInfo]
    table: NodeTable
    placement: PlacementCache
    #: nodes that allocate found unresolvable for a task (filtered out by reclaim/preempt).
    unresolvable_nodes: dict[str, set[int]]
    #: allocate's failed node choices, by placement key, or by request for one that fit nowhere (FailedChoice)
    failed_choices: dict[Hashable, FailedChoice]
    #: False: every failed choice is worked out again (the reference the property tests compare with)
    remember_failed_choices = True

    # ================================================================= task rows

    def task_vec(self, t: TaskInfo) -> np.ndarray:
        """The task's request as a node-table row, computed once per task."""
        if t.vec is None:
            t.vec = self.table.vector(t.resreq)
        return t.vec

    def task_cols(self, t: TaskInfo) -> np.ndarray:
        """The node-table columns rule (a) compares for the task's request, computed once per task.

        With `CARRIED_COLUMNS` the arrays are kept across sessions by the table's columns and the request's
        scalar names (what `NodeTable.compare_columns` reads: its columns' indices by name, and those
        names), where the table's own memo lives one session (a forecast's: ~25 us a session to make
        the first array again)."""
        cols = t.cols
        if cols is None:
            if CARRIED_COLUMNS:
                names = tuple(t.resreq.scalars)
                columns = self.table.columns
                try:
                    held, here = self._compared_here
                except AttributeError:  # the session's first request
                    held, here = self._compared_here = (columns, {})
                if held is not columns:  # another table (the open hands the session its own)
                    held, here = self._compared_here = (columns, {})
                cols = here.get(names)
                if cols is None:
                    cols = here[names] = self._compared_kept(t, names)
            else:
                cols = self.table.compare_columns(t.resreq)
            t.cols = cols
        return cols

    #: the session's compared columns by request scalar names, with the table columns they are for
    #: (`task_cols`; made at its first use)
    _compared_here: tuple[list[str], dict[tuple[str, ...], np.ndarray]]

    def _compared_kept(self, t: TaskInfo, names: tuple[str, ...]) -> np.ndarray:
        """`task_cols`' first look in a session for the scalar names: the array kept across sessions for
        the table's columns and the names, else the table's (then kept)."""
        table = self.table
        key = (tuple(table.columns), names)
        cols = _COMPARED.get(key)
        if cols is None:
            if len(_COMPARED) >= _MOST_COMPARED:
                _COMPARED.clear()
            cols = _COMPARED[key] = table.compare_columns(t.resreq)
        elif check.enabled() and cols.tobytes() != table.compare_columns(t.resreq).tobytes():
            raise check.StateCheckError(f"{check.ENV}: the compared columns kept for task {t.key}'s request "
                                        "differ from the table's")
        return cols

    def fits_idle_rows(self, t: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """Rule (a) of the request against Idle, for every row at once."""
        return self.table.fits(self.task_vec(t), self.task_cols(t), self.table.idle[rows])

    # ================================================================= predicates and scoring
    def plugin_predicates(self, task: TaskInfo, rows: np.ndarray) -> NodeFilter:
        """Every plugin predicate over the rows; a node failing one plugin is not asked by the next."""
        ok = np.ones(len(rows), dtype=bool)
        unresolvable = np.zeros(len(rows), dtype=bool)
        reasons: list[tuple[str, np.ndarray]] = []
        for _, _, fn in self._consulted(ep.PREDICATE):
            live = np.nonzero(ok)[0]
            if len(live) == 0:
                break
            verdict: NodeFilter = fn(task, rows[live])
            fail = ~verdict.ok
            ok[live[fail]] = False
            unresolvable[live[verdict.unresolvable & fail]] = True
            for text, mask in verdict.reasons:
                full = np.zeros(len(rows), dtype=bool)
                full[live[mask]] = True
                reasons.append((text, full))
        return NodeFilter(ok, unresolvable, reasons)

    def predicate_for_allocate(self, task: TaskInfo, rows: np.ndarray | None = None) -> tuple[np.ndarray, list[tuple[str, int]]]:
        """allocate's predicate: request <= FutureIdle, then the plugin predicates.

        Returns the feasible rows and the failure summary (reason, node count) for explanations.
        """
        feasible, summary, _ = self._predicate_for_allocate(task, rows)
        return feasible, summary

    def _predicate_for_allocate(self, task: TaskInfo, rows: np.ndarray | None = None,
                                ) -> tuple[np.ndarray, list[tuple[str, int]], list[int]]:
        """`predicate_for_allocate`, and the rows it recorded as unresolvable for the task."""
        if rows is None:
            rows = np.arange(len(self.nodes))
        vec = self.task_vec(task)
        cols = self.task_cols(task)
        future = self.table.future_idle()[rows]
        fit = self.table.fits(vec, cols, future)
        summary: list[tuple[str, int]] = [] if fit.all() else self.short_summary(vec, cols, future)
        cand = rows[fit]
        pf = self.plugin_predicates(task, cand)
        for text, mask in pf.reasons:
            n = int(mask.sum())
            if n:
                summary.append((text, n))
        unresolvable: list[int] = []
        if pf.unresolvable.any():
            unresolvable = cand[pf.unresolvable].tolist()
            self.unresolvable_nodes.setdefault(task.uid, set()).update(unresolvable)
        return cand[pf.ok], summary, unresolvable

    def short_summary(self, vec: np.ndarray, cols: np.ndarray, future: np.ndarray) -> list[tuple[str, int]]:
        """The resource part of allocate's failure summary: per compared column on which some row falls
        short of the request, the reason and how many rows fall short. One pass over the columns at once;
        `short_summary_reference` is the column-by-column definition it is tested against."""
        if not len(future) or not len(cols):
            return []
        need = vec[cols]
        avail = future[:, cols]
        short = (need >= avail + 0.1) & (np.abs(need - avail) >= 0.1)
        counts = short.sum(axis=0).tolist()
        if not any(counts):
            return []
        best = avail.max(axis=0).tolist()
        summary: list[tuple[str, int]] = []
        for i, j in enumerate(cols.tolist()):
            if counts[i]:
                name = self.table.columns[j]
                summary.append((f"insufficient {name} (need {format_amount(name, vec[j])}, "
                                f"best node has {format_amount(name, max(best[i], 0.0))})", counts[i]))
        return summary

    def short_summary_reference(self, vec: np.ndarray, cols: np.ndarray,
                                future: np.ndarray) -> list[tuple[str, int]]:
        """`short_summary` column by column (the definition the tests compare it with)."""
        summary: list[tuple[str, int]] = []
        for j in cols:
            short = (vec[j] >= future[:, j] + 0.1) & (np.abs(vec[j] - future[:, j]) >= 0.1)
            n = int(short.sum())
            if n:
                name = self.table.columns[j]
                best = float(future[:, j].max()) if len(future) else 0.0
                summary.append(
                    (f"insufficient {name} (need {format_amount(name, vec[j])}, "
                     f"best node has {format_amount(name, max(best, 0.0))})", n)
                )
        return summary

    def predicate_for_preempt(self, task: TaskInfo) -> np.ndarray:
        """reclaim/preempt's predicate: no resource test; only unresolvable failures reject a node."""
        skip = self.unresolvable_nodes.get(task.uid, set())
        rows = np.array([i for i in range(len(self.nodes)) if i not in skip], dtype=np.int64)
        pf = self.plugin_predicates(task, rows)
        return rows[~pf.unresolvable]

    def node_scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """NodeOrder: the consulted plugins' scores of the rows, summed."""
        scores = np.zeros(len(rows))
        for _, _, fn in self._consulted(ep.NODE_ORDER):
            scores += fn(task, rows)
        return scores

    def best_node(self, task: TaskInfo, rows: np.ndarray) -> int:
        """Pick the node for a task among candidate rows: best-node plugins, else the top score.

        Ties go to the smallest node name (rows are in name order), not at random as in Volcano.
        """
        if len(rows) == 1:
            return int(rows[0])
        scores = self.node_scores(task, rows)
        for _, _, fn in self._consulted(ep.BEST_NODE):
            choice = fn(task, rows, scores)
            if choice is not None:
                return int(choice)
        return int(rows[int(np.argmax(scores))])

    def choose_node(self, task: TaskInfo) -> tuple[int | None, bool, list[tuple[str, int]]]:
        """allocate's node choice: feasible nodes (FutureIdle and the predicates), those that fit Idle
        if any, then the best score. Returns (row, whether it fits Idle, failure summary); the row is
        None, with the summary, when no node is feasible.

        A task whose placement key failed since the last node change fails the same way: it gets that
        failure again without the predicates being asked (`FailedChoice`).

        `choose_node_reference` is the same choice step by step; this one (with `LEAN_CHOICE`) looks up
        failures only when some are kept, makes the placement key once, and hands the resource test of
        every row it made for a key without current answers to the placement cache, which would make
        it again over the same table (a run session's first choice). Under `APPORTION_CHECK_STATE=1`
        every choice is made both ways and compared (the second way finds what the first left: the
        cache refreshed, a failure kept, the same unresolvable rows recorded again)."""
        if not LEAN_CHOICE:
            return self.choose_node_reference(task)
        got = self._choose_lean(task)
        if self.placement.checking:
            want = self.choose_node_reference(task)
            if got != want:
                raise check.StateCheckError(f"{check.ENV}: allocate's node choice for task {task.key} is {got}, "
                                            f"made step by step it is {want}")
        return got

    def _choose_lean(self, task: TaskInfo) -> tuple[int | None, bool, list[tuple[str, int]]]:
        """`choose_node` with `LEAN_CHOICE` (see there)."""
        remember = self.remember_failed_choices and self.placement.enabled
        failed_choices = self.failed_choices
        if remember and failed_choices:
            failed = failed_choices.get(self._request_key(task))
            if failed is not None and failed.stands(self.table):
                return None, False, failed.replay(self, task)
        placement = self.placement
        key: Hashable | None = None
        if not remember:
            choice = placement.choose(task)
        else:
            key = placement.key(task)
            fit: np.ndarray | None = None
            if key is not None:
                if failed_choices:
                    failed = failed_choices.get(key)
                    if failed is not None and failed.stands(self.table):
                        return None, False, failed.replay(self, task)
                if not placement.keeps_answers(key) and len(self.nodes):
                    # as in the reference: no node's FutureIdle fitting decides and explains the failure
                    vec, cols = self.task_vec(task), self.task_cols(task)
                    future = self.table.future_idle()
                    fit = self.table.fits(vec, cols, future)
                    if not fit.any():
                        return None, False, self._failed_nowhere(task, vec, cols, future)
            choice = placement.choose_keyed(task, key, fit)
        if choice is not None:
            return choice[0], choice[1], []
        return self._choose_in_full(task, key)

    def choose_node_reference(self, task: TaskInfo) -> tuple[int | None, bool, list[tuple[str, int]]]:
        """`choose_node` step by step: both failure lookups, the key made where each step needs it, and
        the cache's own resource test (the definition the property tests compare `choose_node` with)."""
        remember = self.remember_failed_choices and self.placement.enabled
        if remember:
            # a request no node's FutureIdle fits fails without a plugin asked, whatever the rest of the
            # task: that failure is looked up by the request alone, before the placement key is made
            failed = self.failed_choices.get(self._request_key(task))
            if failed is not None and failed.stands(self.table):
                return None, False, failed.replay(self, task)
        key = self.placement.key(task) if remember else None
        if key is not None:
            failed = self.failed_choices.get(key)
            if failed is not None and failed.stands(self.table):
                return None, False, failed.replay(self, task)
            if not self.placement.keeps_answers(key) and len(self.nodes):
                # The cache would predicate and score every node for this key; when no node's FutureIdle
                # fits (most tasks of gangs that wait), the full predicate asks no plugin, so the resource
                # test alone, over arrays, decides and explains the failure.
                vec, cols = self.task_vec(task), self.task_cols(task)
                future = self.table.future_idle()
                if not self.table.fits(vec, cols, future).any():
                    return None, False, self._failed_nowhere(task, vec, cols, future)
        choice = self.placement.choose(task)
        if choice is not None:
            return choice[0], choice[1], []
        return self._choose_in_full(task, key)

    def _choose_in_full(self, task: TaskInfo, key: Hashable | None) -> tuple[int | None, bool, list[tuple[str, int]]]:
        """The choice where the placement cache gave none: a request it found fitting nowhere, else the
        full predicate and scores (a failure kept under `key` when there is one)."""
        if self.placement.fits_nowhere(task):
            return None, False, self._failed_nowhere(task, self.task_vec(task), self.task_cols(task),
                                                     self.table.future_idle())
        feasible, summary, unresolvable = self._predicate_for_allocate(task)
        if len(feasible) == 0:
            if key is not None:
                self.failed_choices[key] = FailedChoice(len(self.table.touched), list(summary), unresolvable)
            return None, False, summary
        idle_ok = self.fits_idle_rows(task, feasible)
        fits_idle = bool(idle_ok.any())
        return self.best_node(task, feasible[idle_ok] if fits_idle else feasible), fits_idle, summary

    def _failed_nowhere(self, task: TaskInfo, vec: np.ndarray, cols: np.ndarray,
                        future: np.ndarray) -> list[tuple[str, int]]:
        """allocate's failure for a task no node's FutureIdle fits: the full predicate asks no plugin and
        records no unresolvable node, so its failure is the resource summary alone, a function of the
        request and the FutureIdle it read (remembered by the request, see FailedChoice.stands)."""
        summary = self.short_summary(vec, cols, future)
        self.failed_choices[self._request_key(task)] = FailedChoice(
            len(self.table.touched), list(summary), [], future[:, cols], cols)
        return summary

    def _request_key(self, task: TaskInfo) -> Hashable:
        """What a failure to fit any node's FutureIdle is a function of, besides the table: the request
        on the compared columns (tagged: never equal to a placement key)."""
        return ("fits nowhere", self.task_vec(task).tobytes(), self.task_cols(task).tobytes())

    def sorted_by_score(self, task: TaskInfo, rows: np.ndarray) -> list[int]:
        """The rows, best score first (ties by row, that is by node name)."""
        scores = self.node_scores(task, rows)
        order = sorted(range(len(rows)), key=lambda i: (-scores[i], rows[i]))
        return [int(rows[i]) for i in order]
