"""A changed job's placements against the last open's (framework/open_state.py): a task placed as it
was keeps its place, and the node table is not touched for it (docs/semantics.md K31, K35)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from apportion.cluster.model import JobInfo, NodeInfo
from apportion.framework.open_parts import KIND_OF, Entry, Held
from apportion.state import check

#: one slot of a changed job's placements, in task order: the entry itself (kept from the last open, or
#: a replacement), or the position of a new one among those whose vectors are still to be filled in
Slot = Entry | int


def pair_job(old: list[Entry], mine: list[Entry], removed: list[Entry], fresh: list[Entry],
             replaced: list[tuple[Entry, Entry]]) -> list[Slot]:
    """A changed job's placements (`mine`, vectors not filled in) against its last open's (`old`): a
    task at the same position in its job, row and kind as the last open's task at that position, with
    the same name, namespace and request, occupies the same table row as before (the same key, so the
    same place in its node's map), and the table needs neither; it is the last entry itself when it is
    the same task object with the same vector, else a replacement (the new task with its vector: the
    one it holds, its request's for these columns as `_with_vectors` takes it, or else the old one,
    which equal requests give). The rest of `old` goes to `removed`, the rest of `mine` to `fresh`
    (docs/semantics.md K31)."""
    # a job's placements hold distinct positions (`_task_entries` numbers its tasks)
    by_pos = {e[5]: e for e in old}
    slots: list[Slot] = []
    for e in mine:
        o = by_pos.pop(e[5], None)
        if o is not None:
            t, ot = e[1], o[1]
            if o[0] == e[0] and o[2] == e[2]:
                if t is ot:
                    if t.vec is o[3]:
                        slots.append(o)
                        continue
                elif (t.name == ot.name and t.namespace == ot.namespace
                      and (t.resreq is ot.resreq or t.resreq.equal(ot.resreq))):
                    if t.vec is None:
                        t.vec = o[3]
                    n: Entry = (e[0], t, e[2], t.vec, e[4], e[5])
                    replaced.append((o, n))
                    slots.append(n)
                    continue
            removed.append(o)
        slots.append(len(fresh))
        fresh.append(e)
    removed.extend(by_pos.values())
    return slots


#: past every task position (a held entry's position is its task's index in a job)
_END = sys.maxsize


def walk_paired(job: JobInfo, uid: str, node_by_name: dict[str, NodeInfo], old: list[Entry], removed: list[Entry],
                fresh: list[Entry], replaced: list[tuple[Entry, Entry]]) -> tuple[list[Slot], frozenset[str]]:
    """`_changed_job` (open_state.py) and then `pair_job` against `old` in one pass over the job's tasks:
    the same slots, the same entries added to `removed` (the ones met at their position first, then
    the rest of `old` in its order), `fresh` and `replaced`, and the job's scalar names; every task's
    status at open is recorded on it. A task placed as the held entry at its position (the same object
    with the same vector, row and kind: most tasks of a job built again when one of its tasks ended,
    docs/semantics.md K36) is taken as that entry without an entry of its own being made first.

    `old` is in task position order (a job's placements are made in task order, and a base's are those
    or a pairing's slots, which keep that order), so it is read with one cursor instead of a map."""
    slots: list[Slot] = []
    seen: set[str] = set()
    kind_of = KIND_OF
    k = 0
    n_old = len(old)
    # the task position of the held entry at the cursor (`_END` past the last one)
    at = old[0][5] if n_old else _END
    left: list[Entry] = []
    # (bound methods taken once: the loop runs for every task of every changed job)
    see = seen.update
    node_of = node_by_name.get
    keep = slots.append
    for i, t in enumerate(job.tasks.values()):
        t.initial_status = st = t.status
        scalars = t.resreq.scalars
        if scalars:
            see(scalars)
        kind = kind_of[st]
        if kind is None:
            continue
        name = t.node_name
        if not name:
            continue
        node = node_of(name)
        if node is None:
            continue
        row = node.index
        # held entries at earlier positions have no placement at their position now: they leave last
        while at < i:
            left.append(old[k])
            k += 1
            at = old[k][5] if k < n_old else _END
        if at == i:
            o = old[k]
            k += 1
            at = old[k][5] if k < n_old else _END
            if o[0] == row and o[2] == kind:
                ot = o[1]
                if t is ot:
                    if t.vec is o[3]:
                        keep(o)
                        continue
                elif (t.name == ot.name and t.namespace == ot.namespace
                      and (t.resreq is ot.resreq or t.resreq.equal(ot.resreq))):
                    if t.vec is None:
                        t.vec = o[3]
                    n: Entry = (row, t, kind, t.vec, uid, i)
                    replaced.append((o, n))
                    keep(n)
                    continue
            removed.append(o)
        keep(len(fresh))
        fresh.append((row, t, kind, None, uid, i))  # type: ignore[arg-type]
    if k < n_old:
        left.extend(old[k:])
    removed.extend(left)
    return slots, job.derive("scalar-names", None, lambda: frozenset(seen))


def check_walked(jobs: list[tuple[str, JobInfo, Held | None]], walk: Callable[[JobInfo, str], list[Entry]],
                 removed_before: list[Entry], slots: dict[str, list[Slot]], removed: list[Entry],
                 fresh: list[Entry], replaced: list[tuple[Entry, Entry]]) -> None:
    """The self-check (APPORTION_CHECK_STATE) of an open that walked and paired its changed jobs in one
    pass (`walk_paired`): the changed jobs (uid, job, held) walked (`walk`, `_changed_job`'s
    entries) and then paired (`pair_job`) give the same slots, `removed` (after `removed_before`),
    `fresh` and `replaced`, entry for entry."""
    r_removed: list[Entry] = list(removed_before)
    r_fresh: list[Entry] = []
    r_replaced: list[tuple[Entry, Entry]] = []
    r_slots: dict[str, list[Slot]] = {}
    for uid, job, held in jobs:
        mine = walk(job, uid)
        if held is None:
            r_slots[uid] = list(range(len(r_fresh), len(r_fresh) + len(mine)))
            r_fresh.extend(mine)
        else:
            r_slots[uid] = pair_job(held[2], mine, r_removed, r_fresh, r_replaced)

    def same(a: Entry, b: Entry) -> bool:
        return a is b or (a[0] == b[0] and a[1] is b[1] and a[2] == b[2] and a[3] is b[3] and a[4] == b[4]
                          and a[5] == b[5])

    def same_slot(a: Slot, b: Slot) -> bool:
        return a == b if isinstance(a, int) or isinstance(b, int) else same(a, b)

    ok = (len(r_removed) == len(removed) and all(a is b for a, b in zip(r_removed, removed))
          and len(r_fresh) == len(fresh) and all(map(same, r_fresh, fresh))
          and len(r_replaced) == len(replaced)
          and all(o is p and same(n, m) for (o, n), (p, m) in zip(r_replaced, replaced))
          and r_slots.keys() == slots.keys()
          and all(len(r_slots[u]) == len(slots[u]) and all(map(same_slot, r_slots[u], slots[u])) for u in slots))
    if not ok:
        raise check.StateCheckError(f"{check.ENV}: session open's changed jobs walked and paired in one pass "
                                    "differ from the walk and then the pairing")


def placed_as_held(job: JobInfo, held: Held | None) -> bool:
    """Whether a changed job's placements are its held ones as they stand (docs/semantics.md K35): the
    last open's object with the task statuses it had then (`version`; only its phase moved), every
    placed task still holding the row vector it was placed with. Its tasks are then where they were,
    with the statuses recorded at that open, and `pair_job` would give back each held entry itself
    and take nothing out and put nothing in."""
    return (held is not None and held[0] is job and held[1] == job.version
            and all(e[1].vec is e[3] for e in held[2]))


__all__: list[str] = ["Slot", "check_walked", "pair_job", "placed_as_held", "walk_paired"]
