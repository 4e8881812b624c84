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
