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
from typing import TYPE_CHECKING

import numpy as np

from apportion.framework import extension as ep

if TYPE_CHECKING:
    from apportion.cluster.model import TaskInfo
    from apportion.framework.session import Session


class _Answers:
    """Per-node answers for one placement key, current as of `pos` in the node table's touch log."""

    __slots__ = ("pos", "fit", "idle_fit", "ok", "unresolvable", "scores")

    def __init__(self, pos: int, fit: np.ndarray, idle_fit: np.ndarray, ok: np.ndarray,
                 unresolvable: np.ndarray, scores: np.ndarray) -> None:
        self.pos = pos
        self.fit = fit  # request <= FutureIdle
        self.idle_fit = idle_fit  # request <= Idle
        self.ok = ok  # the plugin predicates pass
        self.unresolvable = unresolvable  # a plugin predicate failed unresolvably
        self.scores = scores


class PlacementCache:
    """Per-key node answers for `Session.choose_node`, refreshed on touched rows only."""

    #: tests switch this off to compare against the full recomputation
    enabled = True

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.answers: dict[Hashable, _Answers] = {}
        self.keys: dict[str, Hashable | None] = {}

    def key(self, task: TaskInfo) -> Hashable | None:
        """The task's placement key, or None when some plugin in use cannot vouch for it.

        What the key summarises (request, constraints, configuration) is fixed for the session, so it
        is computed once per task."""
        if not self.enabled:
            return None
        try:
            return self.keys[task.uid]
        except KeyError:
            k = self.keys[task.uid] = self._key(task)
            return k

    def _key(self, task: TaskInfo) -> Hashable | None:
        ssn = self.ssn
        if ssn.has_fn(ep.BEST_NODE):
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

    def choose(self, task: TaskInfo) -> tuple[int, bool] | None:
        """The node row allocate would pick for `task` and whether it fits Idle, or None when there is
        no feasible node or the task is not cacheable (the caller then takes the full path, which also
        explains failures)."""
        key = self.key(task)
        if key is None:
            return None
        a = self._current(key, task)
        feasible = a.fit & a.ok
        if not feasible.any():
            return None
        unres = a.fit & a.unresolvable
        if unres.any():
            self.ssn.unresolvable_nodes.setdefault(task.uid, set()).update(np.flatnonzero(unres).tolist())
        preferred = feasible & a.idle_fit
        fits_idle = bool(preferred.any())
        cand = np.flatnonzero(preferred if fits_idle else feasible)
        # first maximum in row (node-name) order, as best_node's argmax over the candidate rows
        return int(cand[int(np.argmax(a.scores[cand]))]), fits_idle

    def _current(self, key: Hashable, task: TaskInfo) -> _Answers:
        table = self.ssn.table
        log = table.touched
        a = self.answers.get(key)
        n = len(table.names)
        if a is None or len(log) - a.pos > max(8, n // 4):
            a = self._compute(task, np.arange(n), len(log))
            self.answers[key] = a
        elif len(log) > a.pos:
            rows = np.unique(np.asarray(log[a.pos:], dtype=np.int64))
            fresh = self._compute(task, rows, len(log))
            a.fit[rows] = fresh.fit
            a.idle_fit[rows] = fresh.idle_fit
            a.ok[rows] = fresh.ok
            a.unresolvable[rows] = fresh.unresolvable
            a.scores[rows] = fresh.scores
            a.pos = fresh.pos
        return a

    def _compute(self, task: TaskInfo, rows: np.ndarray, pos: int) -> _Answers:
        ssn = self.ssn
        table = ssn.table
        vec, cols = ssn.task_vec(task), ssn.task_cols(task)
        pf = ssn.plugin_predicates(task, rows)
        return _Answers(pos, table.fits(vec, cols, table.future[rows]), table.fits(vec, cols, table.idle[rows]),
                        pf.ok.copy(), pf.unresolvable.copy(), ssn.node_scores(task, rows))
