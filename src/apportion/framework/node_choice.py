"""The session's node choice: the predicates and scores that pick a node for a task.

Follows Volcano's `util/predicate_helper.go` (PredicateNodes: a node failing one plugin is not asked by
the next; unresolvable failures remembered for reclaim and preempt) and `util/scheduler_helper.go`
(PrioritizeNodes, SelectBestNode), with allocate's resource test (`actions/allocate/allocate.go`:
request <= FutureIdle, then Idle preferred). Vectorised over the node table's rows; allocate's hot path
goes through the placement cache (framework/placement.py) first. `Session` inherits this.
"""

from __future__ import annotations

import numpy as np

from apportion.cluster.model import NodeInfo, TaskInfo
from apportion.cluster.node_table import NodeTable
from apportion.framework import extension as ep
from apportion.framework.dispatch import Dispatch
from apportion.framework.interface import NodeFilter
from apportion.framework.placement import PlacementCache
from apportion.resources import format_amount


class NodeChoice(Dispatch):
    """Predicates, scores and the node choice of allocate, reclaim and preempt, over the node table."""

    nodes: list[NodeInfo]
    table: NodeTable
    placement: PlacementCache
    #: nodes that allocate found unresolvable for a task (filtered out by reclaim/preempt).
    unresolvable_nodes: dict[str, set[int]]

    # ================================================================= task rows

    def task_vec(self, t: TaskInfo) -> np.ndarray:
        """The task's request as a node-table row, computed once per task."""
        if t.vec is None:
            t.vec = self.table.vector(t.resreq)
        return t.vec

    def task_cols(self, t: TaskInfo) -> np.ndarray:
        """The node-table columns rule (a) compares for the task's request, computed once per task."""
        if t.cols is None:
            t.cols = self.table.compare_columns(t.resreq)
        return t.cols

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
        if rows is None:
            rows = np.arange(len(self.nodes))
        vec = self.task_vec(task)
        cols = self.task_cols(task)
        future = self.table.future_idle()[rows]
        fit = self.table.fits(vec, cols, future)
        summary: list[tuple[str, int]] = []
        if not fit.all():
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
        cand = rows[fit]
        pf = self.plugin_predicates(task, cand)
        for text, mask in pf.reasons:
            n = int(mask.sum())
            if n:
                summary.append((text, n))
        if pf.unresolvable.any():
            self.unresolvable_nodes.setdefault(task.uid, set()).update(int(x) for x in cand[pf.unresolvable])
        return cand[pf.ok], summary

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
        None, with the summary, when no node is feasible."""
        choice = self.placement.choose(task)
        if choice is not None:
            return choice[0], choice[1], []
        feasible, summary = self.predicate_for_allocate(task)
        if len(feasible) == 0:
            return None, False, summary
        idle_ok = self.fits_idle_rows(task, feasible)
        fits_idle = bool(idle_ok.any())
        return self.best_node(task, feasible[idle_ok] if fits_idle else feasible), fits_idle, summary

    def sorted_by_score(self, task: TaskInfo, rows: np.ndarray) -> list[int]:
        """The rows, best score first (ties by row, that is by node name)."""
        scores = self.node_scores(task, rows)
        order = sorted(range(len(rows)), key=lambda i: (-scores[i], rows[i]))
        return [int(rows[i]) for i in order]
