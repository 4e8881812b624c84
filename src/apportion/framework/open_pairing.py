"""A changed job's placements against the last open's (framework/open_state.py): a task placed as it
was keeps its place, and the node table is not touched for it (docs/semantics.md K31, K35)."""

from __future__ import annotations

from apportion.cluster.model import JobInfo
from apportion.framework.open_parts import Entry, Held

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


def placed_as_held(job: JobInfo, held: Held | None) -> bool:
    """Whether a changed job's placements are its held ones as they stand (docs/semantics.md K35): the
    last open's object with the task statuses it had then (`version`; only its phase moved), every
    placed task still holding the row vector it was placed with. Its tasks are then where they were,
    with the statuses recorded at that open, and `pair_job` would give back each held entry itself
    and take nothing out and put nothing in."""
    return (held is not None and held[0] is job and held[1] == job.version
            and all(e[1].vec is e[3] for e in held[2]))


__all__: list[str] = ["Slot", "pair_job", "placed_as_held"]
