"""capacity's queue orders: flat, hierarchical, and the victim-queue order (§6.10, §6.11).

Follows `compareShareWithDeserved`, the `QueueOrderFn` of both modes and `VictimQueueOrderFn` of
`plugins/capacity/capacity.go`. capacity's tree picker (picker.py) gives the hierarchical order's scan
answer faster.
"""

from __future__ import annotations

from apportion.cluster.model import QueueInfo
from apportion.plugins.capacity.attrs import QueueAttr, queue_level
from apportion.plugins.capacity.base import CapacityBase


def compare_share_with_deserved(l: QueueAttr, r: QueueAttr) -> int:
    """compareShareWithDeserved: lower share first; at equal share a queue with a deserved first."""
    if l.share == r.share:
        lh, rh = not l.deserved.is_empty(), not r.deserved.is_empty()
        if lh == rh:
            return 0
        return -1 if lh else 1
    return -1 if l.share < r.share else 1



class Ordering(CapacityBase):
    """QueueOrderFn (flat and tree) and VictimQueueOrderFn."""

    def queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        """QueueOrderFn (flat): higher priority first, then the lower share, a queue with deserved first."""
        if l.priority != r.priority:
            return r.priority - l.priority
        la, ra = self.attrs.get(l.name), self.attrs.get(r.name)
        if la is None or ra is None:
            return 0
        return compare_share_with_deserved(la, ra)

    def hierarchical_queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        """QueueOrderFn (tree): priority; a leaf first; two leaves compare the queues just below their
        deepest common ancestor (or themselves)."""
        if l.priority != r.priority:
            return r.priority - l.priority
        plan = self._pair_plans.get((l.name, r.name))
        if plan is None:
            plan = self._pair_plans[(l.name, r.name)] = self._pair_plan(l.name, r.name)
        fixed, lp, rp, l_has, r_has = plan
        if fixed:
            return fixed
        # compareShareWithDeserved on the two queues the plan names; only their shares move in a session
        ls, rs = self.attrs[lp].share, self.attrs[rp].share
        if ls == rs:
            return 0 if l_has == r_has else (-1 if l_has else 1)
        return -1 if ls < rs else 1

    def _pair_plan(self, l: str, r: str) -> tuple[int, str, str, bool, bool]:
        """What hierarchical_queue_order needs of a pair, all fixed for the session (the tree, leafness,
        whether a deserved is set): (leaf-rule result or 0, the two queues whose shares decide, and
        whether each of those has a deserved)."""
        la, ra = self.attrs[l], self.attrs[r]
        if la.is_leaf() != ra.is_leaf():
            return (-1 if la.is_leaf() else 1), l, r, False, False
        lp, rp = l, r
        if la.is_leaf():
            level = queue_level(la, ra)
            lp = la.ancestors[level + 1] if level + 1 < len(la.ancestors) else l
            rp = ra.ancestors[level + 1] if level + 1 < len(ra.ancestors) else r
        return 0, lp, rp, not self.attrs[lp].deserved.is_empty(), not self.attrs[rp].deserved.is_empty()

    def victim_queue_order(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> int:
        """VictimQueueOrderFn (tree): the victim queue whose common ancestor with the preemptor's queue is
        deeper goes first."""
        p = self.attrs[preemptor.name]
        ll, rl = queue_level(self.attrs[l.name], p), queue_level(self.attrs[r.name], p)
        if ll == rl:
            return 0
        return -1 if ll > rl else 1
