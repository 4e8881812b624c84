"""What the incremental plan follower (`follower_inc.py`) keeps per active reservation, and its sums.

A row is one active reservation as the last step left it; the children's capacity sum is kept across
steps; the single-precision sum is the full step's loop (`PlanFollower.step`) done in numpy where the
values are exact in single precision.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from apportion.reservation.follower import ReservationShare, _ChildSums
from apportion.reservation.resmath import Res, f32

if TYPE_CHECKING:
    from apportion.reservation.plan import ReservationAllocation

#: the full step's sort key of one reservation: its change per resource type, then its id's numbers
Key = tuple[int, ...]


class Row:
    """One active reservation as the last step left it."""

    __slots__ = ("r", "name", "hi", "v", "target", "key", "share")

    def __init__(self, r: ReservationAllocation, name: str, hi: int, v: Res) -> None:
        self.r = r
        self.name = name
        self.hi = hi  # its resources stay `v` until this time (its piece's end, at most its end)
        self.v = v
        self.target = 0.0
        self.key: Key = ()
        self.share: ReservationShare | None = None


class LiveSums(_ChildSums):
    """The children's capacity sum kept across steps: a deleted child's slot becomes 0.0, which leaves
    the sequential single-precision sum as it is (x + 0 is x), and the slots are packed again from the
    queue dict (in its order) when holes are most of them."""

    def remove(self, name: str) -> None:
        """A child deleted from the dict."""
        self.set(name, 0.0)
        del self.index[name]
        if self.n > 64 and self.n > 2 * len(self.index):
            self.__init__(self.queues)  # type: ignore[misc]


def single_sum(values: object) -> float:
    """The values summed in order in single precision (as the full step's loop does)."""
    vals = np.fromiter(values, dtype=np.float64)  # type: ignore[call-overload]
    if not len(vals):
        return 0.0
    singles = vals.astype(np.float32)
    if np.array_equal(singles.astype(np.float64), vals):
        return float(np.cumsum(singles)[-1])
    total = 0.0
    for x in vals.tolist():
        total = f32(total + x)
    return total
