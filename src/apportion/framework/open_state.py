"""Session open's node side kept between sessions: the node table after the initial placement, every
node's task map, and the node-table columns' scalar names, updated by the jobs that changed.

Every task that occupies a node joins that node when a session opens (`place_full`, in job then task
order, the orphans last). A caller that sessions the same cluster again and again carries a memo
(`Snapshot.memo`) and hands out again, as the same JobInfo object, every job that nothing changed since
the last session (`SchedulerCache.snapshot(keep=True)`); a job's `version` moves with every task status
change and every task added. So while the nodes are those of the last open (`Snapshot.nodes_key`) and
the columns too, the table and the task maps are the last open's, less the placements of the jobs that
left or changed, plus those of the jobs that are new or changed (`place_incremental`); a changed job's
task placed as it was (same position in its job, node, kind and request) keeps its place and the table
is not touched for it (K31; the rows' helpers are in framework/open_rows.py).

Exactness (docs/semantics.md, cluster-state K9): the table's sums equal a full placement's bit for bit
because every amount involved is an integer below 2**53, so every partial sum is exact and the order of
additions cannot matter; a base holding any other amount is not kept, and a delta holding one falls back
to the full placement; the base carries a bound on its amounts, so an incremental open knows its sums
exact without looking at the table while the bound stays below 2**52 (K18). A node's task map is
rebuilt, in the full placement's order, on every node a change reached; the relative order of the kept
jobs is checked to be the last open's. Under
`APPORTION_CHECK_STATE=1` every incremental open is compared with a full placement.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np

from apportion.cluster.model import JobInfo, NodeInfo, TaskInfo
from apportion.cluster.node_table import NodeTable
from apportion.framework.open_classify import classify, positions, same_relative_order
from apportion.framework.open_moves import _BOUND, _apply_moves, _exact, _table_bound, _table_exact
from apportion.framework.open_pairing import Slot, check_walked, pair_job, placed_as_held, walk_paired
from apportion.framework.open_parts import (
    KIND_OF,
    Entry,
    Held,
    OpenBase,
    OpenDelta,
    Session,
    fork_table,
    nodes_scalar_names,
    snapshot_number,
    table_columns,
    table_for,
)
from apportion.framework.open_reference import check_against_full
from apportion.framework.open_rows import (
    MapTurns,
    hand_maps,
    merge_row,
    replace_in_row,
    row_key,
    row_tasks,
    tasks_map,
)
from apportion.resources import Resource
from apportion.state import check

#: the memo's entry: the last open's OpenBase
OPEN_MEMO = "session.open"
#: the memo's entry: the node table's columns of the last session over it (rows of kept tasks are kept)
COLUMNS_MEMO = "session.node-columns"
#: every open's generation, unique in the process: state kept from an open is matched to the open a
#: delta starts from by it, also across memos and after a memo lost its base
_GENERATIONS = itertools.count(1)


def _job_entries(job: JobInfo, uid: str, node_by_name: dict[str, NodeInfo], entries: list[Entry]) -> list[Entry]:
    """The job's placements, in task order, added to `entries` too (vectors filled in later); every
    task's status at open is recorded on it."""
    return _task_entries(job.tasks.values(), uid, node_by_name, entries, record_status=True)


def _task_entries(tasks: Iterable[TaskInfo], uid: str | None, node_by_name: dict[str, NodeInfo],
                  entries: list[Entry], *, record_status: bool) -> list[Entry]:
    """The placements of the tasks that occupy a node, in their order, added to `entries` too."""
    mine: list[Entry] = []
    kind_of = KIND_OF
    for i, t in enumerate(tasks):
        if record_status:
            t.initial_status = t.status
        kind = kind_of[t.status]
        if kind is None or not t.node_name:
            continue
        node = node_by_name.get(t.node_name)
        if node is None:
            continue
        mine.append((node.index, t, kind, None, uid, i))  # type: ignore[arg-type]
    entries.extend(mine)
    return mine


def _changed_job(job: JobInfo, uid: str, node_by_name: dict[str, NodeInfo]) -> tuple[list[Entry], frozenset[str]]:
    """`_job_entries` (in a list of their own) and `job_scalar_names` of a job, in one pass over its
    tasks: every job of a full placement, and a carried open's changed ones (a job built again has its
    scalar names to count afresh)."""
    mine: list[Entry] = []
    seen: set[str] = set()
    kind_of = KIND_OF
    # (bound methods taken once: the loop runs for every task of every job of a full placement)
    see = seen.update
    node_of = node_by_name.get
    put = mine.append
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
        put((node.index, t, kind, None, uid, i))  # type: ignore[arg-type]
    return mine, job.derive("scalar-names", None, lambda: frozenset(seen))


def _with_vectors(entries: list[Entry], table: NodeTable, reuse_rows: bool) -> list[Entry]:
    return _with_matrix(entries, table, reuse_rows)[0]


def _with_matrix(entries: list[Entry], table: NodeTable, reuse_rows: bool) -> tuple[list[Entry], np.ndarray | None]:
    """`_with_vectors`, and the vectors made as the rows of one array when every entry's task got one
    (then in the entries' order: its rows are the entries' vectors), else None."""
    fresh = [e[1] for e in entries if not reuse_rows or e[1].vec is None]
    made = None
    if fresh:
        made = table.vectors([t.resreq for t in fresh])
        for t, v in zip(fresh, made):
            t.vec = v
    return [(r, t, k, t.vec, j, i) for r, t, k, _, j, i in entries], (made if len(fresh) == len(entries) else None)


def _orphan_entries(ssn: Session, node_by_name: dict[str, NodeInfo], out: list[Entry]) -> None:
    """Append the entries of the tasks on nodes that belong to no job (other schedulers' pods), in
    the snapshot's order."""
    _task_entries(ssn.snapshot.orphan_tasks, None, node_by_name, out, record_status=False)


#: tests switch this off: a full placement then stacks its entries' vectors again even when they are
#: the rows of the one array it made them in (the reference of taking that array)
STACK_MADE = True


def place_full(ssn: Session, nodes_key: Any, generation: int) -> OpenBase:
    """Every task that occupies a node joins it, in job then task order, the orphans last; the node
    table takes them all in one vectorised step. Returns the base a next open may start from.

    A task's node-table row (`vec`) and compared columns (`cols`) depend only on its request and the
    table's columns: those of a task handed out again are taken as they are while the columns are the
    last session's over the memo, and cleared otherwise."""
    jobs = ssn.jobs
    node_by_name = ssn.node_by_name
    # every job's placements (vectors filled in below) and scalar names in one pass over its tasks
    entries: list[Entry] = []
    per_job: dict[str, list[Entry]] = {}
    names: dict[str, frozenset[str]] = {}
    counts: Counter[str] = Counter()
    for uid, job in jobs.items():
        mine, ns = _changed_job(job, uid, node_by_name)
        per_job[uid] = mine
        names[uid] = ns
        entries.extend(mine)
        counts.update(ns)
    extra = set(counts)
    extra.update(n for t in ssn.snapshot.orphan_tasks for n in t.resreq.scalars)
    node_scalars = nodes_scalar_names(ssn.nodes)
    table = table_for(ssn, node_scalars, extra)
    columns = tuple(table.columns)
    memo = ssn.memo
    reuse_rows = memo is not None and memo.get(COLUMNS_MEMO) == columns
    if memo is not None:
        memo[COLUMNS_MEMO] = columns
    if not reuse_rows:
        # a task handed out again may carry a row and compared columns made for other columns
        for job in jobs.values():
            for t in job.tasks.values():
                t.vec = t.cols = None
    _orphan_entries(ssn, node_by_name, entries)
    entries, made = _with_matrix(entries, table, reuse_rows)
    rows: list[list[Entry]] = [[] for _ in ssn.nodes]
    for e in entries:
        rows[e[0]].append(e)
    # every task's vector made here is a row of `made`, in the entries' order: the stack of the
    # entries' vectors is that array (STACK_MADE off: stacked again, the reference)
    if made is not None and STACK_MADE:
        vecs = made
    else:
        vecs = np.array([e[3] for e in entries]) if entries else np.zeros((0, len(columns)))
    table.add_many([e[0] for e in entries], vecs, [e[2] for e in entries])
    node_tasks = [tasks_map(r) for r in rows]
    for node, tasks in zip(ssn.nodes, node_tasks):
        node.tasks = tasks
    total = Resource()
    for n in ssn.nodes:
        total.add(n.allocatable)
    # rebuild the per-job entries with their vectors
    at = 0
    kept_jobs: dict[str, Held] = {}
    for uid, job in jobs.items():
        k = len(per_job[uid])
        kept_jobs[uid] = (job, job.version, entries[at:at + k], names[uid], job.phase)
        at += k
    base = OpenBase(nodes_key, columns, generation, table, total, node_scalars, rows, node_tasks, kept_jobs,
                    entries[at:], counts, list(jobs), snapshot_number(ssn))
    ssn.table = fork_table(table)
    ssn.total_resource = total.clone()
    if nodes_key is not None and not (_table_exact(table) and (not len(vecs) or _exact(vecs))):
        base.nodes_key = None  # not exact: never a base
    elif nodes_key is not None:
        base.bound = _table_bound(table)
    return base


#: tests switch this off: every placement of a changed job is then taken out and put in again (the
#: reference of `pair_job`, docs/semantics.md K31)
PAIR_PLACEMENTS = True
#: tests switch this off: a changed job whose placements are its held ones as they stand is then
#: walked and paired task by task like any other (the reference of `placed_as_held`, K35)
KEEP_HELD = True
#: tests switch this off: a changed job the base holds is then walked (`_changed_job`) and its
#: placements paired with the held ones afterwards (`pair_job`), the reference of `walk_paired`
PAIR_IN_WALK = True
#: tests switch this off: the scalar names' counts are then counted out for every job taken out and
#: in for every changed job (the reference of the counts left as they were, `_scalar_counts`, K38)
NET_COUNTS = True


def place_incremental(ssn: Session, base: OpenBase, generation: int) -> tuple[OpenBase, OpenDelta] | None:
    """`place_full`'s outcome from the last open's base and the jobs that changed; None when it cannot
    be exact (the columns moved, the kept jobs' order moved, an amount is not an exact integer). A
    changed job's placements that occupy the table as they did are not taken out and put in again
    (`pair_job`) while the jobs of both opens keep their relative order."""
    now = list(ssn.jobs)
    same_order = now == base.order
    split = classify(ssn, base, now, same_order)
    if split is None:
        return None
    gone, changed = split
    jobs_now = ssn.jobs
    node_by_name = ssn.node_by_name
    names: dict[str, frozenset[str]] = {}
    placed: dict[str, list[Entry]] = {}
    held_jobs = base.jobs
    # a changed job held by the base is among `gone`, and is in this open's jobs (a job that left is not)
    pairing = PAIR_PLACEMENTS and bool(gone) and (same_order or same_relative_order(now, base, jobs_now))
    fresh: list[Entry] = []
    replaced: list[tuple[Entry, Entry]] = []
    slots: dict[str, list[Slot]] = {}
    # with pairing, each changed job is walked and paired in one pass (`walk_paired`), its fresh entries
    # in `fresh` in the changed jobs' order as the pairing loop below would put them, and what it takes
    # out kept aside to follow the gone jobs' and the orphans' entries in `removed`, as there
    walked = pairing and PAIR_IN_WALK
    paired_out: list[Entry] = []
    # changed jobs placed as they were held (only their phase moved): neither walked nor paired (K35)
    as_held: set[str] = set()
    for uid in changed:
        job = jobs_now[uid]
        held = held_jobs.get(uid)
        if KEEP_HELD and pairing and placed_as_held(job, held):
            assert held is not None
            as_held.add(uid)
            names[uid] = held[3]
        elif walked and held is not None:
            slots[uid], names[uid] = walk_paired(job, uid, node_by_name, held[2], paired_out, fresh, replaced)
        else:
            mine, names[uid] = _changed_job(job, uid, node_by_name)
            placed[uid] = mine
            if walked:
                at = len(fresh)
                fresh.extend(mine)
                slots[uid] = list(range(at, at + len(mine)))
    counts = _scalar_counts(base, gone, names)
    extra = {n for n, c in counts.items() if c > 0}
    extra.update(n for t in ssn.snapshot.orphan_tasks for n in t.resreq.scalars)
    if table_columns(base.node_scalars, extra) != base.columns:
        return None
    table = base.table
    removed: list[Entry] = []
    for uid in gone:
        if not pairing or uid not in jobs_now:
            removed.extend(base.jobs[uid][2])
    removed.extend(base.orphans)
    if walked:
        removed.extend(paired_out)
        if check.enabled():
            check_walked([(uid, jobs_now[uid], held_jobs.get(uid)) for uid in changed if uid not in as_held],
                         lambda job, uid: _changed_job(job, uid, node_by_name)[0],
                         removed[:len(removed) - len(paired_out)], slots, removed, fresh, replaced)
    else:
        for uid in changed:
            if uid in as_held:
                continue
            mine = placed[uid]
            held = base.jobs.get(uid) if pairing else None
            if held is None:
                at = len(fresh)
                fresh.extend(mine)
                slots[uid] = list(range(at, at + len(mine)))
            else:
                slots[uid] = pair_job(held[2], mine, removed, fresh, replaced)
    of_jobs = len(fresh)
    _orphan_entries(ssn, node_by_name, fresh)
    added = _with_vectors(fresh, table, True)
    # the base's arrays are its own (a session works on a fork) and only this open reads the base from
    # here on (taken out of the memo): they are brought up to date where they are
    new = table
    bound = base.bound
    moves: tuple[np.ndarray, np.ndarray] | None = None
    if removed or added:
        step = _apply_moves(new, removed, added)
        if step is None:
            return None
        moved, at_rows, signs = step
        moves = (at_rows, signs)
        # every amount is an integer (the base's and the vectors' are); its magnitude is at most the
        # base's bound plus every vector's largest, else the table is looked at
        bound += moved
        if not bound < _BOUND:
            if not _table_exact(new):
                return None
            bound = _table_bound(new)
    if check.enabled() and not _table_exact(new):
        raise check.StateCheckError(f"{check.ENV}: session open's node table bound {bound} holds but the "
                                    "table is not exact")
    # the rows a change reached get new task maps, in the full placement's order. The base's row
    # lists go on to the next base as they are (only the next open reads a base's rows and task maps;
    # every way out that keeps this base was taken above)
    rows = base.rows
    node_tasks = base.node_tasks
    # per entry of the base that does not stay as it is: its replacement, or None (taken out)
    swap: dict[int, Entry | None] = {id(e): None for e in removed}
    touched: dict[int, list[Entry]] = {}
    # the rows where `swap` names an entry (taken out or replaced): the only ones whose kept entries
    # are not the base row's as they stand
    lost: set[int] = set()
    for e in removed:
        touched.setdefault(e[0], [])
        lost.add(e[0])
    for e in added:
        touched.setdefault(e[0], []).append(e)
    checking = check.enabled()
    # a row that only replacements reached keeps its order and keys: each is put in its old one's place
    # (`replace_in_row`) when the row's map names each task once; the other rows are merged
    only_replaced: dict[int, list[tuple[Entry, Entry]]] = {}
    for o, n in replaced:
        r = o[0]
        if r in touched or len(node_tasks[r]) != len(rows[r]):
            swap[id(o)] = n
            touched.setdefault(r, [])
            lost.add(r)
        else:
            only_replaced.setdefault(r, []).append((o, n))
    for row, pairs in only_replaced.items():
        rows[row], got = replace_in_row(rows[row], node_tasks[row], pairs)
        node_tasks[row] = got
        if checking and [(k, id(t)) for k, t in got.items()] != [(k, id(t)) for k, t in tasks_map(rows[row]).items()]:
            raise check.StateCheckError(f"{check.ENV}: session open's task map of row {row} with tasks replaced "
                                        "differs from one made from the row")
    if touched:
        merging: list[tuple[int, list[Entry], list[Entry]]] = []
        uids: set[str] = set()
        for row, new_entries in touched.items():
            # a row that only gained entries keeps the base row's as they are (`swap` names none of them)
            keep_entries = ([k for e in rows[row] if (k := swap.get(id(e), e)) is not None]
                            if row in lost or not SKIP_UNSWAPPED else rows[row].copy())
            if new_entries and not same_order:  # (the positions below are the base's otherwise)
                uids.update(u for e in itertools.chain(keep_entries, new_entries) if (u := e[4]) is not None)
            merging.append((row, keep_entries, new_entries))
        # the positions in the session's job order of the jobs on those rows (in the base's order when
        # that is the session's: only their relative order counts)
        pos = positions(base) if same_order else {uid: i for i, uid in enumerate([u for u in now if u in uids])}
        key = row_key(pos, len(now))
        for row, kept, new_entries in merging:
            # without new entries the kept ones (replacements in their places) are in order as they are
            merged = merge_row(kept, new_entries, key) if new_entries else kept
            got = node_tasks[row] = row_tasks(merged, rows[row], node_tasks[row])
            rows[row] = merged
            if checking and [(k, id(t)) for k, t in got.items()] != [(k, id(t)) for k, t in tasks_map(merged).items()]:
                raise check.StateCheckError(f"{check.ENV}: session open's task map of row {row} made from the last "
                                            "one differs from one made from the row")
    # the job map goes on to the next base as it is: only the next open reads a base's job map, and
    # the memo holds the next base from here on (every way out that keeps this base was taken above)
    jobs = base.jobs
    # a job placed as held keeps its entries' list: only the held tuple being replaced named it
    held_entries = {uid: jobs[uid][2] for uid in as_held}
    for uid in gone:
        del jobs[uid]
    for uid in changed:
        job = jobs_now[uid]
        entries = (held_entries[uid] if uid in held_entries
                   else [added[s] if isinstance(s, int) else s for s in slots[uid]])
        jobs[uid] = (job, job.version, entries, names[uid], job.phase)
    orphans = added[of_jobs:]
    nxt = OpenBase(base.nodes_key, base.columns, generation, new, base.total, base.node_scalars, rows,
                   node_tasks, jobs, orphans, counts, base.order if same_order else now, snapshot_number(ssn),
                   bound, base.positions if same_order else None, [*only_replaced, *touched])
    return nxt, OpenDelta(base.generation, generation, removed, added, gone, changed, replaced, moves)


#: tests switch this off: a touched row that lost no entry and had none replaced then looks up every
#: entry of its base row in `swap` as the others do (the reference of copying the row, K53)
SKIP_UNSWAPPED = True


def _scalar_counts(base: OpenBase, gone: list[str], names: dict[str, frozenset[str]]) -> Counter[str]:
    """How many jobs list each scalar name after the open: the base's counts less the jobs taken out,
    plus the changed jobs' `names`; only names listed by some job. A changed job that lists the names
    it was held with (a job built again lists its tasks' names again) leaves them as they were, and
    when every one does the base's counts are the answer (`NET_COUNTS` off: counted out and in)."""
    held = base.jobs
    if not NET_COUNTS:
        counts = Counter(base.scalar_counts)
        for uid in gone:
            counts.subtract(held[uid][3])
        for ns in names.values():
            counts.update(ns)
        return +counts
    # a changed job the base holds is among `gone`
    same = {uid for uid, ns in names.items() if (h := held.get(uid)) is not None and (h[3] is ns or h[3] == ns)}
    out = [held[uid][3] for uid in gone if uid not in same]
    come = [ns for uid, ns in names.items() if uid not in same]
    if not out and not come:
        return base.scalar_counts
    counts = Counter(base.scalar_counts)
    for ns in out:
        counts.subtract(ns)
    for ns in come:
        counts.update(ns)
    return +counts


def open_nodes(ssn: Session) -> OpenDelta | None:
    """Fill in the session's node table, total resource and every node's task map: from the last
    open's base when that is exact, else by a full placement. Returns the delta from the last open
    (None after a full placement)."""
    memo = ssn.memo
    nodes_key = ssn.snapshot.nodes_key if memo is not None else None
    # taken out: an incremental open hands parts of it on to the next base (an open that fails
    # half-way leaves no base to carry)
    base: OpenBase | None = memo.pop(OPEN_MEMO, None) if memo is not None else None
    generation = next(_GENERATIONS)
    delta: OpenDelta | None = None
    step = None
    if base is not None and nodes_key is not None and base.nodes_key == nodes_key:
        step = place_incremental(ssn, base, generation)
    if step is None:
        nxt = place_full(ssn, nodes_key, generation)
    else:
        nxt, delta = step
        ssn.table = fork_table(nxt.table)
        ssn.total_resource = nxt.total.clone()
        assert base is not None
        hand_maps(ssn, base, nxt)
        ssn.shared_node_tasks = True
        if check.enabled():
            check_against_full(ssn, nxt)
    ssn.open_generation = None
    # what the next open needs to know which maps may have moved since: the nodes' identity, and the
    # rows whose map this session replaces (the set it fills in as it goes)
    nxt.node_map = ssn.node_by_name
    nxt.written = ssn._own_rows
    nxt.map_turn = MapTurns.take()
    if memo is not None:
        if nxt.nodes_key is None:
            memo.pop(OPEN_MEMO, None)
        else:
            memo[OPEN_MEMO] = nxt
            ssn.shared_node_tasks = True
            ssn.open_generation = nxt.generation
    return delta


__all__: list[str] = ["KEEP_HELD", "NET_COUNTS", "OPEN_MEMO", "PAIR_IN_WALK", "PAIR_PLACEMENTS", "STACK_MADE", "open_nodes", "place_full", "place_incremental"]
