"""Incremental node choice for interchangeable tasks: allocate's hot path.

allocate fits, filters and scores every node for every task. Tasks with identical placement inputs
(the same request and the same constraints: one *placement key*) get the same per-node answers,
except on the nodes that placements have touched since those answers were computed. When every
predicate and node-order plugin in use vouches that its answer for a node depends only on that node
and the task's key (no normalisation across nodes, no global state), this cache keeps the per-node
arrays per key and recomputes only the touched rows. The choice is the one a full recomputation
makes, bit for bit; `tests/test_placement.py` checks that on random sessions.

A plugin vouches by registering a key function with `Session.add_node_local_key`; it returns a
hashable summary of what the plugin reads from the task, or None when, for this task, its answers
are not node-local (nodeorder's normalised affinity and soft-taint scores, for instance).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from sortedcontainers import SortedList

from apportion.framework import extension as ep

if TYPE_CHECKING:
    from apportion.cluster.model import TaskInfo
    from apportion.framework.session import Session


class _Fresh(NamedTuple):
    """Newly computed answers for some rows, in the order of those rows."""

    fit: np.ndarray
    idle_fit: np.ndarray
    ok: np.ndarray
    unresolvable: np.ndarray
    scores: np.ndarray


class _Answers:
    """Per-node answers for one placement key, current as of `pos` in the node table's touch log.

    Besides the per-node arrays, the feasible nodes and the preferred ones (feasible and fitting Idle)
    are kept in lists sorted by (-score, row), so the choice (the first maximum in row order) is the head
    of a list rather than a pass over every node. A NaN score orders with nothing: while one exists the
    choice falls back to numpy's argmax over the arrays, which is what the full recomputation does.
    """

    __slots__ = ("pos", "fit", "idle_fit", "ok", "unresolvable", "scores", "feasible", "preferred", "unresolved",
                 "nan_rows")

    def __init__(self, pos: int, fresh: _Fresh) -> None:
        fit, idle_fit, ok, unresolvable, scores = fresh
        self.pos = pos
        self.fit = fit  # request <= FutureIdle
        self.idle_fit = idle_fit  # request <= Idle
        self.ok = ok  # the plugin predicates pass
        self.unresolvable = unresolvable  # a plugin predicate failed unresolvably
        self.scores = scores
        feasible = fit & ok
        rows = np.flatnonzero(feasible)
        neg = -scores[rows]
        nan = np.isnan(neg)
        self.nan_rows: set[int] = set(rows[nan].tolist())
        good = ~nan
        self.feasible = SortedList(zip(neg[good].tolist(), rows[good].tolist(), strict=True))
        pref = idle_fit[rows] & good
        self.preferred = SortedList(zip(neg[pref].tolist(), rows[pref].tolist(), strict=True))
        self.unresolved: set[int] = set(np.flatnonzero(fit & unresolvable).tolist())

    def refresh(self, rows: np.ndarray, fresh: _Fresh, pos: int) -> None:
        """Take the fresh answers for `rows` (touched since `pos`)."""
        for i, r in enumerate(rows.tolist()):
            old = -float(self.scores[r])
            was_feasible = bool(self.fit[r] and self.ok[r])
            if was_feasible and r not in self.nan_rows:
                self.feasible.remove((old, r))
                if self.idle_fit[r]:
                    self.preferred.remove((old, r))
            self.nan_rows.discard(r)
            fit, ok, idle, unres = bool(fresh.fit[i]), bool(fresh.ok[i]), bool(fresh.idle_fit[i]), bool(fresh.unresolvable[i])
            score = float(fresh.scores[i])
            self.fit[r], self.ok[r], self.idle_fit[r], self.unresolvable[r], self.scores[r] = fit, ok, idle, unres, score
            if fit and unres:
                self.unresolved.add(r)
            else:
                self.unresolved.discard(r)
            if fit and ok:
                if score != score:
                    self.nan_rows.add(r)
                else:
                    self.feasible.add((-score, r))
                    if idle:
                        self.preferred.add((-score, r))
        self.pos = pos

    def choice(self) -> int | None:
        """best_node's pick: the preferred nodes if any, else the feasible ones; the top score, ties to
        the smaller row."""
        if self.nan_rows:
            feasible = self.fit & self.ok
            preferred = feasible & self.idle_fit
            cand = np.flatnonzero(preferred if preferred.any() else feasible)
            return int(cand[int(np.argmax(self.scores[cand]))])
        pick = self.preferred or self.feasible
        return int(pick[0][1]) if pick else None


class PlacementCache:
    """Per-key node answers for `Session.choose_node`, refreshed on touched rows only."""

    #: tests switch this off to compare against the full recomputation
    enabled = True

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.answers: dict[Hashable, _Answers] = {}

    def key(self, task: TaskInfo) -> Hashable | None:
        """The task's placement key, or None when some plugin in use cannot vouch for it."""
        ssn = self.ssn
        if not self.enabled or ssn.has_fn(ep.BEST_NODE):
            return None
        parts: list[Hashable] = [ssn.task_vec(task).tobytes(), ssn.task_cols(task).tobytes()]
        for point in (ep.PREDICATE, ep.NODE_ORDER):
            for _, opt, _fn in ssn.consulted(point):
                key_fn = ssn.node_local_keys.get(opt.name)
                k = key_fn(task) if key_fn is not None else None
                if k is None:
                    return None
                parts.append((point, opt.name, k))
        return tuple(parts)

    def choose(self, task: TaskInfo) -> int | None:
        """The node row allocate would pick for `task`, or None when there is no feasible node or the
        task is not cacheable (the caller then takes the full path, which also explains failures)."""
        key = self.key(task)
        if key is None:
            return None
        a = self._current(key, task)
        if not a.feasible and not a.nan_rows:
            return None
        if a.unresolved:
            self.ssn.unresolvable_nodes.setdefault(task.uid, set()).update(a.unresolved)
        return a.choice()

    def _current(self, key: Hashable, task: TaskInfo) -> _Answers:
        table = self.ssn.table
        log = table.touched
        a = self.answers.get(key)
        n = len(table.names)
        if a is None or len(log) - a.pos > max(8, n // 4):
            a = self.answers[key] = _Answers(len(log), self._compute(task, np.arange(n)))
        elif len(log) > a.pos:
            rows = np.unique(np.asarray(log[a.pos:], dtype=np.int64))
            a.refresh(rows, self._compute(task, rows), len(log))
        return a

    def _compute(self, task: TaskInfo, rows: np.ndarray) -> _Fresh:
        ssn = self.ssn
        table = ssn.table
        vec, cols = ssn.task_vec(task), ssn.task_cols(task)
        pf = ssn.plugin_predicates(task, rows)
        return _Fresh(table.fits(vec, cols, table.future[rows]), table.fits(vec, cols, table.idle[rows]),
                      pf.ok.copy(), pf.unresolvable.copy(), ssn.node_scores(task, rows))
