"""enqueue's pops through one open tie of the tree picker, without the picker's tree bookkeeping.

No upstream file: this is the tree picker's `_steps` over an open group (picker.py, `drain_order`)
when every tied child is a leaf or a parent of leaves only (the benchmark's and most real trees:
organisations over team queues). The picker's own loop finds each pop's winner on its sorted lists
(the tied children's winners, the smallest (creation, name) under each) and takes every popped leaf
out of them again: four sorted-list removals and a fresh descent per leaf, about 30 % of enqueue in
the full simulation benchmark (benchmarks/README.md, issue 16's sixth session). Here the same answers
come from two short sorted lists per tied child, private to the group:

* a parent of leaves wins, among its active leaves, with the smallest (key, creation, name): the
  picker's `_winner` takes the children with the smallest key and, among them, the one with the
  smallest (creation, name), which beats the others;
* a leaf child is its own winner;
* the group's winner is the winner with the smallest (creation, name), if that is smaller than the
  smallest (creation, name) under every other tied child (`TreePicker._group_winner`).

A drained picker is spent (QueuePicker.drain_order), and no later unit of the drain reads this group's
lists (units are disjoint subtrees), so the picker's own lists are left as they were. The picker's loop
stays the reference: `tests/plugins/capacity/test_capacity_picker.py` compares the two on random
backlogs in open groups, and both with the reference scan's pops.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from apportion.cluster.model import QueueInfo


class TreePicker(Protocol):
    """What a FlatGroup reads of the tree picker (picker.py imports this module, not the reverse)."""

    order: dict[str, QueueInfo]
    kids: dict[str, Any]
    key_of: dict[str, tuple[float, int]]
    cn: dict[str, tuple[str, str]]
    seq: dict[str, int]

    def _scan_group(self, leaves: list[str], home: dict[str, str], bests: list[str] | None = None) -> str:
        """pop_best_index over a tied group's leaves, in list order."""


class FlatGroup:
    """One open group whose tied children are leaves or parents of leaves: the leaves' pops, in order."""

    def __init__(self, picker: TreePicker, unit: list[str],
                 by_key: dict[str, list[tuple[tuple[float, int], tuple[str, str], str]]],
                 by_cn: dict[str, list[tuple[str, str]]], home: dict[str, str]) -> None:
        self.picker = picker
        self.unit = unit
        #: per tied child, its active leaves as (key, (creation, name), name), sorted: [0] is its winner
        self.by_key = by_key
        #: per tied child, its active leaves' (creation, name), sorted
        self.by_cn = by_cn
        #: the tied child each active leaf is under
        self.home = home

    @classmethod
    def of(cls, picker: TreePicker, unit: list[str]) -> FlatGroup | None:
        """The group's lists, or None when a tied child has a non-leaf child (the picker's loop then)."""
        kids, key_of, cn = picker.kids, picker.key_of, picker.cn
        by_key: dict[str, list[tuple[tuple[float, int], tuple[str, str], str]]] = {}
        by_cn: dict[str, list[tuple[str, str]]] = {}
        home: dict[str, str] = {}
        for m in unit:
            if m not in key_of:
                continue  # not active (the picker files every active queue in key_of)
            below = kids.get(m)
            if below is None:
                by_key[m] = [(key_of[m], cn[m], m)]
                by_cn[m] = [cn[m]]
                home[m] = m
                continue
            entries = []
            for _, leaf in below:
                if leaf in kids:
                    return None
                entries.append((key_of[leaf], cn[leaf], leaf))
                home[leaf] = m
            entries.sort()
            by_key[m] = entries
            by_cn[m] = sorted(e[1] for e in entries)
        return cls(picker, unit, by_key, by_cn, home)

    def winner(self) -> str | None:
        """TreePicker._group_winner over the active tied children, from the group's own lists."""
        by_key, by_cn = self.by_key, self.by_cn
        if len(by_key) == 1:
            for entries in by_key.values():
                return entries[0][2]
        best: tuple[tuple[str, str], str, str] | None = None
        for m, entries in by_key.items():
            _, cn, w = entries[0]
            if best is None or cn < best[0]:
                best = (cn, w, m)
        assert best is not None
        cn, w, home = best
        for m in by_key:
            if m != home and not cn < by_cn[m][0]:
                return None
        return w

    def _remove(self, leaf: str) -> None:
        m = self.home.pop(leaf)
        picker = self.picker
        cn = picker.cn[leaf]
        entries = self.by_key[m]
        del entries[bisect.bisect_left(entries, (picker.key_of[leaf], cn, leaf))]
        cns = self.by_cn[m]
        del cns[bisect.bisect_left(cns, cn)]
        if not entries:
            del self.by_key[m]
            del self.by_cn[m]

    def steps(self, has_work: Callable[[str], bool], check: Callable[[], None]) -> Iterator[QueueInfo]:
        """The pops that find work, as the picker's `_steps` gives them for this unit: each pop's
        leaf is the group's winner, else the scan over the group's leaves in list order (resumed where
        the last popped leaf stood); a leaf with work is worked on until it has none, then dropped."""
        picker = self.picker
        home = dict(self.home)  # _scan_group's view: every leaf not yet popped, with its tied child
        listed = sorted(home, key=picker.seq.__getitem__)
        waiting = sum(1 for leaf in listed if has_work(leaf))
        bests: list[str] = []
        while waiting:
            best = self.winner()
            if best is None:
                best = picker._scan_group(listed, home, bests)
            at = listed.index(best)
            del listed[at]
            del bests[at:]
            queue = picker.order[best]
            if has_work(best):
                while has_work(best):
                    check()
                    yield queue
                waiting -= 1
            self._remove(best)
            del home[best]
