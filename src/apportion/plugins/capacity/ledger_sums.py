"""The integer sums capacity's ledger keeps per queue and field (ledger.py): one `QueueSum` per (queue, field),
counted in and out one member's amount at a time (`_add`, `_sub`), with per scalar name the members that
list it, so that a recount's order of the names (by the first lister in uid order) is known."""

from __future__ import annotations

from dataclasses import field

from apportion.lean_dataclass import dataclass
from apportion.plugins.capacity.charged import Amount


@dataclass
class QueueSum:
    """One field of one queue: the sums, and per scalar name the members that list it."""

    cpu: int = 0
    memory: int = 0
    scalars: dict[str, int] = field(default_factory=dict)
    #: per scalar name, (uid, position in that job's scalars) of every member that lists it: the
    #: smallest is the name's first lister in a recount
    listers: dict[str, set[tuple[str, int]]] = field(default_factory=dict)
    #: per scalar name, its smallest lister, when known: worked out when first asked for (only a sum
    #: with two names or more is ordered by it), kept while members come, forgotten when it leaves
    first: dict[str, tuple[str, int]] = field(default_factory=dict)
    members: int = 0

    def first_lister(self, name: str) -> tuple[str, int]:
        """The smallest (uid, position) listing `name`."""
        got = self.first.get(name)
        if got is None:
            got = self.first[name] = min(self.listers[name])
        return got


def same_names(was: tuple[tuple[str, int], ...], now: tuple[tuple[str, int], ...]) -> bool:
    """Whether two amounts list the same scalar names in the same order."""
    if len(was) != len(now):
        return False
    if len(was) < 2:  # most amounts list one name or none: no generator for them
        return not was or was[0][0] == now[0][0]
    return all(n == m for (n, _), (m, _) in zip(was, now))


def count_in(s: QueueSum, uid: str, a: Amount) -> None:
    """Count one member's amount of one field in."""
    s.members += 1
    s.cpu += a[0]
    s.memory += a[1]
    for i, (n, v) in enumerate(a[2]):
        s.scalars[n] = s.scalars.get(n, 0) + v
        at = (uid, i)
        listers = s.listers.get(n)
        if listers is None:
            s.listers[n] = {at}
            s.first[n] = at
            continue
        listers.add(at)
        first = s.first.get(n)
        if first is not None and at < first:
            s.first[n] = at


def count_out(s: QueueSum, uid: str, a: Amount) -> None:
    """Count one member's amount of one field out."""
    s.members -= 1
    s.cpu -= a[0]
    s.memory -= a[1]
    for i, (n, v) in enumerate(a[2]):
        s.scalars[n] -= v
        at = (uid, i)
        listers = s.listers[n]
        listers.remove(at)
        if not listers:
            del s.listers[n]
            del s.scalars[n]
            s.first.pop(n, None)
        elif s.first.get(n) == at:
            del s.first[n]


Listers = dict[tuple[str, int], dict[str, tuple[str, int]]]


def note_listers(listers: Listers, queue: str, uid: str, amounts: tuple[Amount | None, ...]) -> None:
    """Record, per sum of `queue`, where each scalar name was first listed by the jobs charged beside
    the ledger (call in uid order): `order_scalars` needs it."""
    for f, amount in enumerate(amounts):
        if amount is None or not amount[2]:
            continue
        got = listers.setdefault((queue, f), {})
        for i, (n, _) in enumerate(amount[2]):
            got.setdefault(n, (uid, i))


#: one job of a batch counted in together: its uid, its path (leaf first) and its amounts per field
NewJob = tuple[str, tuple[str, ...], tuple[Amount | None, ...]]


def count_in_many(all_sums: dict[str, list[QueueSum]], dirty: dict[str, int], batch: list[NewJob],
                  nfields: int) -> None:
    """`count_in` of every job of the batch, each charged field at every queue of its path, and the
    queues marked dirty with the fields charged, as the ledger's `_admit_new` does job by job; but the
    jobs of one path are summed first (one `count_in` per job and field) and each path's sums are then
    merged into each of its queues once (`merge_in`), where job by job does a `count_in` per job, field
    and queue (docs/semantics.md K61).

    The same sums, members and listers: the sums are Python integers (any order of the additions gives
    the same ones), a name's listers are a set, and a name is present exactly while it has listers. A
    name's cached first lister, where known, is still the smallest of its listers (each part's is, as
    `count_in` keeps it). Only the insertion order of a sum's names may differ, which nothing reads (a
    resource built from a sum orders its names by their first listers)."""
    groups: dict[tuple[str, ...], tuple[list[QueueSum], list[int]]] = {}
    for uid, path, amounts in batch:
        g = groups.get(path)
        if g is None:
            g = groups[path] = ([QueueSum() for _ in range(nfields)], [0])
        parts, charged = g
        for f, a in enumerate(amounts):
            if a is not None:
                count_in(parts[f], uid, a)
                charged[0] |= 1 << f
    for path, (parts, mask) in groups.items():
        moved = mask[0]
        if not moved:
            continue  # no job of the path charges anything: `_admit_new` makes no sums and no mark
        last = len(path) - 1
        for i, q in enumerate(path):
            sums = all_sums.get(q)
            if sums is None:
                sums = all_sums[q] = [QueueSum() for _ in range(nfields)]
            for s, p in zip(sums, parts):
                if p.members:
                    merge_in(s, p, i == last)
            dirty[q] = dirty.get(q, 0) | moved


def merge_in(s: QueueSum, p: QueueSum, last: bool) -> None:
    """Count the members of `p` (a sum whose every first lister is known) into `s`, as `count_in` of
    each would; `p`'s lister sets are copied unless `last` (its final merge) hands them over."""
    s.members += p.members
    s.cpu += p.cpu
    s.memory += p.memory
    scalars, listers, first = s.scalars, s.listers, s.first
    for n, v in p.scalars.items():
        scalars[n] = scalars.get(n, 0) + v
        mine = p.listers[n]
        at = p.first[n]
        got = listers.get(n)
        if got is None:
            listers[n] = mine if last else set(mine)
            first[n] = at
            continue
        got |= mine
        known = first.get(n)
        if known is not None and at < known:
            first[n] = at
