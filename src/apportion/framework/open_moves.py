"""Session open's node-table step (framework/open_state.py): the exactness tests of a table and of
the vectors an open adds, the bound an open carries on the table's amounts (docs/semantics.md K9,
K18), and the one step that takes out what left and puts in what came (K41, K46)."""

from __future__ import annotations

import numpy as np

from apportion.cluster.node_table import NodeTable
from apportion.framework.open_parts import Entry

#: magnitudes below this are exact as float integers
_EXACT = float(2**53)


def _exact(arr: np.ndarray) -> bool:
    """Whether every amount of the array is an integer below 2**53."""
    return bool(np.all(np.abs(arr) < _EXACT) and np.all(arr == np.floor(arr)))


def _table_exact(t: NodeTable) -> bool:
    """Whether every amount of the table is an integer below 2**53 (then any order of sums is exact)."""
    return all(_exact(a) for a in (t.allocatable, t.idle, t.used, t.releasing, t.pipelined, t.future))


def _table_bound(t: NodeTable) -> float:
    """The largest magnitude of any amount of the table (0 for a table without rows)."""
    arrays = (t.allocatable, t.idle, t.used, t.releasing, t.pipelined, t.future)
    return max((float(np.abs(a).max()) for a in arrays if a.size), default=0.0)


#: the bound below which sums of integers are exact, with room for the float rounding of the bound's
#: own sum (each term is below 2**53, so the sum is off by far less than 2**52)
_BOUND = float(2**52)


#: tests switch this off: the table then takes what left and what came through
#: `NodeTable.apply_placements` whatever their kinds (the reference of `_apply_moves`' used-only step)
LEAN_MOVES = True


def _apply_moves(table: NodeTable, removed: list[Entry],
                 added: list[Entry]) -> tuple[float, np.ndarray, np.ndarray] | None:
    """Take the removed placements out of the table and put the added ones in, in one step (the removed
    vectors negated); the sum of every vector's largest magnitude, and the rows and signs (-1 taken out,
    1 put in) of `removed + added` as the table took them; or None (nothing done) when an added vector
    is not all integers below 2**53. When every placement occupies its node as `used` (a forecast
    open's: tasks that bound or ended) the four sums `apply_placements` makes for that kind are made
    directly, the same `ufunc.at` steps over the same rows and vectors, without its masks."""
    cut = len(removed)
    both = removed + added
    vecs = np.array([e[3] for e in both])
    largest = np.abs(vecs).max(axis=1)
    if added:
        # `_exact` of the added vectors: magnitudes below 2**53 (a NaN fails the comparison) and integers
        fresh = vecs[cut:]
        if not (largest[cut:].max() < _EXACT and (fresh == np.floor(fresh)).all()):
            return None
    signs = np.ones(len(vecs), dtype=np.int64)
    signs[:cut] = -1
    at_rows = np.fromiter([e[0] for e in both], dtype=np.int64, count=len(both))
    # the stack is this step's own: the removed rows negated where they are (`x * -1.0` is what
    # `vecs * signs[:, None]` makes of them, and `x * 1.0` is x)
    signed = vecs
    if cut:
        signed[:cut] *= -1
    kinds = [e[2] for e in both]
    if LEAN_MOVES and kinds.count("used") == len(kinds):
        np.subtract.at(table.idle, at_rows, signed)
        np.add.at(table.used, at_rows, signed)
        np.subtract.at(table.future, at_rows, signed)
        np.add.at(table.pod_count, at_rows, signs)
    else:
        table.apply_placements(at_rows, signed, kinds, signs)
    return float(largest.sum()), at_rows, signs


__all__: list[str] = ["LEAN_MOVES"]
