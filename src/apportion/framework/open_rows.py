"""A touched row of session open's node side (framework/open_state.py): its entries in the full
placement's order and the node's task map made from them, from the row's last entries and map.

A row holds the placements on one node in the full placement's order: by the job's position in the
session's job order, then the task's position in its job, the tasks outside jobs last
(docs/semantics.md K28, K31)."""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Callable

from apportion.cluster.model import TaskInfo
from apportion.framework.open_parts import Entry, OpenBase, Session
from apportion.state import check


def tasks_map(entries: list[Entry]) -> dict[str, TaskInfo]:
    """A node's task map from its row (the reference of `row_tasks`)."""
    return {e[1].key: e[1] for e in entries}


def row_tasks(merged: list[Entry], old_row: list[Entry], old_map: dict[str, TaskInfo]) -> dict[str, TaskInfo]:
    """`tasks_map(merged)`, from the row's last list and map (`old_map` is `tasks_map(old_row)`) when
    the row holds as many entries as before, their keys distinct, and every entry that is not the old
    one at its place is a task with the old one's key (a job built again with its tasks where they
    were): the old map with those tasks put in, and only their keys made (K28). A row that holds
    fewer entries than before is `row_tasks_less`'s."""
    n = len(merged)
    if n < len(old_row):
        return row_tasks_less(merged, old_row, old_map)
    if n > len(old_row) and GROWN_ROWS:
        return row_tasks_more(merged, old_row, old_map)
    if n != len(old_row) or n != len(old_map):
        return tasks_map(merged)
    out = old_map.copy()
    for k, o, e in zip(old_map, old_row, merged):
        if e is not o:
            t = e[1]
            if t.key != k:
                return tasks_map(merged)
            out[k] = t
    return out


def row_tasks_less(merged: list[Entry], old_row: list[Entry], old_map: dict[str, TaskInfo]) -> dict[str, TaskInfo]:
    """`tasks_map(merged)` for a row that lost entries (tasks that completed or left), from its last
    list and map (`old_map` is `tasks_map(old_row)`) when their keys are distinct and `merged` is the
    last row with some entries taken out and others in their places as the old entry itself or a task
    with its key: the old map less the keys taken out, with those tasks put in (a dict keeps the
    order of the keys left), without making every key (K35); else the map made from the row."""
    n = len(merged)
    if len(old_row) != len(old_map):
        return tasks_map(merged)
    out = old_map.copy()
    j = 0
    # old_map's keys are the old row's, in its order (one per entry: they are distinct)
    for k, o in zip(old_map, old_row):
        if j < n:
            e = merged[j]
            if e is o:
                j += 1
                continue
            t = e[1]
            if t.key == k:
                out[k] = t
                j += 1
                continue
        del out[k]
    # every entry of the row was met at an old key, in order: its keys are those left, in that order
    return out if j == n else tasks_map(merged)


#: tests switch this off: a row that gained entries then has its map made from every entry of the row
#: (the reference of `row_tasks_more`, docs/semantics.md K53)
GROWN_ROWS = True


def row_tasks_more(merged: list[Entry], old_row: list[Entry], old_map: dict[str, TaskInfo]) -> dict[str, TaskInfo]:
    """`tasks_map(merged)` for a row that gained entries (a gang bound on the node), from its last
    list and map (`old_map` is `tasks_map(old_row)`) when their keys are distinct: the row is walked
    with a cursor on the last one, and an entry that is the last row's entry at the cursor takes that
    entry's key from the map instead of making it (K53); only the other entries' keys are made. An
    entry whose key is a later one of the last row's moves the cursor there (the entries passed left
    the row). Any key met twice sends the row to `tasks_map`.

    Every key put in is the key of its entry's task (an entry at the cursor is the last row's, whose
    key the map holds at that place, the keys being distinct), in the row's order, with its entry's
    task, and no key is put in twice, so the map is the one made from the row."""
    m = len(old_row)
    if m != len(old_map):
        return tasks_map(merged)
    keys = list(old_map)
    out: dict[str, TaskInfo] = {}
    j = 0
    for e in merged:
        t = e[1]
        if j < m and e is old_row[j]:
            out[keys[j]] = t
            j += 1
            continue
        k = t.key
        if k in out:
            return tasks_map(merged)
        if k in old_map:
            # a key of the last row's at or after the cursor is taken there (those passed left the row);
            # one before the cursor was passed over (its entry left) and is put in as any new key
            at = j
            while at < m and keys[at] != k:
                at += 1
            if at < m:
                j = at + 1
        out[k] = t
    return out


def replace_in_row(row: list[Entry], old_map: dict[str, TaskInfo],
                   pairs: list[tuple[Entry, Entry]]) -> tuple[list[Entry], dict[str, TaskInfo]]:
    """The row with each pair's first entry (one of the row's) replaced by its second, a task with the
    same key, and the node's task map made from it, from the row's last map (`tasks_map(row)`, which
    names as many tasks as the row holds: no key repeats). Both are new objects."""
    out = row.copy()
    tasks = old_map.copy()
    for o, n in pairs:
        i = 0
        while out[i] is not o:
            i += 1
        out[i] = n
        t = n[1]
        tasks[t.key] = t
    return out, tasks


def row_key(pos: dict[str, int], big: int) -> Callable[[Entry], tuple[int, int]]:
    """A row's order, the full placement's: by the job's position (`pos`), then the task's position in
    its job; the orphans (no job) last, in the snapshot's order."""
    return lambda e: (pos[e[4]], e[5]) if e[4] is not None else (big, e[5])


def merge_row(kept: list[Entry], new: list[Entry], key: Callable[[Entry], tuple[int, int]]) -> list[Entry]:
    """`merge_row_reference`'s list, made from `kept` (taken over, and edited): each new entry is
    inserted where it goes, looking at the keys of a few kept ones, instead of keying every entry of
    the row. `kept` is in `key` order: a base row less what left, and the kept jobs' relative order is
    the base's (framework/open_state.py, `_classify`); no two entries have one key (a task is placed
    once, and an entry kept from the last open holds its task's position now, K31), so where an entry
    goes is unique and the order is the sort's (docs/semantics.md K28)."""
    if not kept:
        return merge_row_reference(kept, new, key)
    lo = 0
    for e in sorted(new, key=key) if len(new) > 1 else new:
        lo = bisect_left(kept, key(e), lo, key=key)
        kept.insert(lo, e)
        lo += 1
    return kept


def merge_row_reference(kept: list[Entry], new: list[Entry], key: Callable[[Entry], tuple[int, int]]) -> list[Entry]:
    """A touched row's entries in the full placement's order (the reference of `merge_row`)."""
    return sorted(kept + new, key=key)


#: tests switch this off: an incremental open then looks at every node's task map, as after a full
#: placement (the reference of looking only at the rows it or the last session gave a new map, K46)
WRITE_REMAPPED = True


class MapTurns:
    """How many opens have handed nodes their task maps in this process. An open's base keeps the count
    after its own (`OpenBase.map_turn`), and a later open looks only at the rows that base names when no
    open came in between: an open of another memo, or one without a memo, may have written the maps of
    the same node objects (sessions run one at a time, each opened before it writes a map)."""

    count = 0

    @classmethod
    def take(cls) -> int:
        """Count one more open that handed out maps; its number."""
        cls.count += 1
        return cls.count


def hand_maps(ssn: Session, base: OpenBase, nxt: OpenBase) -> None:
    """Give every node its task map of `nxt` (a node already holding it is not written: a write is what
    costs). When the snapshot's maker wrote no map and the nodes are the objects of `base`'s open (the
    session's map by name is the one that open had), a node holds the map that open's session left it:
    the last open's map unless that session copied it (`written`). Only those rows and the ones this
    open made anew can differ, and only they are looked at, while no other open wrote maps since
    (`MapTurns`; docs/semantics.md K46)."""
    nodes = ssn.nodes
    node_tasks = nxt.node_tasks
    written = base.written
    if (WRITE_REMAPPED and written is not None and ssn.snapshot.node_maps_as_left
            and base.node_map is ssn.node_by_name and base.map_turn == MapTurns.count):
        for row in itertools.chain(nxt.remapped, written):
            node = nodes[row]
            tasks = node_tasks[row]
            if node.tasks is not tasks:
                node.tasks = tasks
        if check.enabled():
            stale = [n.name for n, tasks in zip(nodes, node_tasks) if n.tasks is not tasks]
            if stale:
                raise check.StateCheckError(f"{check.ENV}: session open wrote the task maps of the rows it and the "
                                            f"last session replaced, but nodes {stale[:5]} hold another map")
        return
    for node, tasks in zip(nodes, node_tasks):
        # a node handed out again holds the map it was given at the last open unless that
        # session or the snapshot replaced it: only the others are written
        if node.tasks is not tasks:
            node.tasks = tasks


__all__: list[str] = ["GROWN_ROWS", "WRITE_REMAPPED", "MapTurns", "hand_maps", "merge_row", "merge_row_reference", "replace_in_row", "row_key",
                      "row_tasks", "row_tasks_less", "row_tasks_more", "tasks_map"]
