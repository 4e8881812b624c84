"""Placement answers carried from session to session over a memo (docs/semantics.md K44).

A placement key's answers (framework/placement.py `_Answers`: per node the resource fits, the plugin
predicates' verdict, the score, and the ranking of the best nodes) are a function of the key, the
plugins' configuration, the nodes and each node's own placements: the plugins that give keys vouch
that a node's answer reads that node only (`Session.add_node_local_key`). So a session whose open
carried the last open's node side (framework/open_state.py, K9: same nodes, same columns, the delta
of placements that changed) can take the last session's answers for a key and work out again only
the rows whose placements may differ: every row that session's node table logged (its own moves,
which the next open does not hold: a forecast's binds come back through the delta), every row the
open's delta reaches, and the rows still pending from earlier sessions. A forecast's run sessions
place one gang each, most often of the key the last run session placed, and each one's first choice
then refreshes ~25 rows instead of working out every node.

A key compared across sessions must mean the same in both: its summaries are values (requests, the
node view's requests of the task) or objects compared by identity that the key itself holds (predicates'
signature, never written once built and read from the nodes alone), never an `id()`, which a later
object could take over once the first is freed.

The session protocol the placement cache reads (`PlacementSession`) lives here too, beside the part of
it carrying reads (`CarrySession`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from apportion.cluster.node_table import NodeTable
from apportion.framework.open_parts import OpenDelta
from apportion.lean_dataclass import dataclass
from apportion.state import check

if TYPE_CHECKING:
    from apportion.cluster.model import TaskInfo
    from apportion.framework.conf import PluginOption
    from apportion.framework.interface import Fn, NodeFilter

#: the memo's entry: the answers of the last session opened over it (`Carried`)
ANSWERS_MEMO = "placement.answers"
#: False: every row a carried key's answers may be stale on is worked out again (the reference); True: a row
#: the last session changed before the key's answers were last brought up to date, whose state is now
#: what it was at that session's end, keeps its answers (`same_rows`, docs/semantics.md K54)
SKIP_SAME_ROWS = True
#: False: `same_rows` compares each row's bytes in turn (the reference); True: it compares the rows' bytes
#: gathered at once first, and row by row only when they differ (docs/semantics.md K58)
SAME_AT_ONCE = True
#: the node table's arrays a key's answers read of a row besides the plugins' (`row_state`): the resource
#: tests' FutureIdle and Idle (allocatable and max_pods are the nodes', fixed while the nodes are)
_TABLE_READS = ("future", "idle")
#: a plugin's per-node state its node-local answers read, as arrays indexed by node-table row (`row_state`)
RowState = tuple[np.ndarray, ...]


class Answers(Protocol):
    """What carrying reads and sets of a key's answers (framework/placement.py `_Answers`; named here
    rather than imported: placement imports this module)."""

    pos: int
    carried: bool
    pending: frozenset[int] | set[int]
    fit: np.ndarray
    idle_fit: np.ndarray
    ok: np.ndarray
    unresolvable: np.ndarray
    scores: np.ndarray
    unres_rows: set[int]
    #: rows among `pending` whose answers stand if the row's state is what it was at the last session's end
    maybe: frozenset[int]
    nan: bool
    top: list[tuple[int, float, int]]
    bound: tuple[int, float, int]


class CarrySession(Protocol):
    """What carrying reads of the session (the session implements it)."""

    @property
    def memo(self) -> dict[str, Any] | None:
        """The caller's memo carried across snapshots (None: nothing carried)."""
        ...

    @property
    def conf(self) -> object:
        """The session's configuration."""
        ...

    @property
    def open_generation(self) -> int | None:
        """The generation of the open state kept in the memo for this session (None: none kept)."""
        ...

    @property
    def open_delta(self) -> OpenDelta | None:
        """What changed since the last open over the memo (None: the node side was placed in full)."""
        ...

    @property
    def table(self) -> NodeTable:
        """The session's node table."""
        ...


class Owner(Protocol):
    """The placement cache that holds carried answers (framework/placement.py `PlacementCache`)."""

    #: per plugin, the per-node state its node-local answers read (`row_state`)
    row_states: dict[str, RowState]
    #: the last session's node table and row states, when answers were carried from it (`same_rows`)
    since: tuple[NodeTable, dict[str, RowState]] | None

    def let_go(self) -> None:
        """Forget every answer (the next session over the memo carried them on)."""
        ...


@dataclass(slots=True)
class Carried:
    """What the memo holds for the next session: the answers by key, the session's open generation and
    node table (whose log names the rows it changed), its configuration, and its placement cache
    (weakly: the next session takes the answers away from that cache; a plain weak reference, which a
    deep copy of the memo, a forecast's fork, copies as it is)."""

    generation: int
    conf: object
    table: NodeTable
    answers: dict[Hashable, Any]
    owner: Callable[[], Owner | None]
    #: the session's plugins' row states (`row_state`; filled as they open)
    row_states: dict[str, RowState]


def carried_answers(ssn: CarrySession, owner: Owner) -> dict[Hashable, Any]:
    """The answers dict the session's placement cache starts with: the last session's, each with the
    rows that may have changed since it was current added to its `pending` rows (answers with more
    than a quarter of the nodes pending are dropped: they would be worked out again over every node),
    when the session's open carried the last session's open and the configuration is the same object;
    else an empty one. Either way the memo then holds this session's for the next one. `owner`: the
    session's placement cache."""
    memo = ssn.memo
    answers: dict[Hashable, Any] = {}
    if memo is None:
        return answers
    held: Carried | None = memo.pop(ANSWERS_MEMO, None)
    generation = ssn.open_generation
    if generation is None:
        return answers  # the open keeps no base: no next open carries this one
    delta = ssn.open_delta
    table = ssn.table
    if (held is not None and delta is not None and delta.since == held.generation and held.conf is ssn.conf
            and held.table.columns == table.columns and len(held.table.names) == len(table.names)):
        last = held.owner()
        if last is not None:
            # the last session's cache (still open, or not yet freed) no longer reaches the answers
            last.let_go()
        logged = held.table.touched
        # per row the last session changed, the position of its last change in that session's log
        last_change = {row: at for at, row in enumerate(logged)} if SKIP_SAME_ROWS else {}
        changed = set(logged)
        changed.update(e[0] for e in delta.removed)
        changed.update(e[0] for e in delta.added)
        changed.update(old[0] for old, _ in delta.replaced)
        at = len(table.touched)
        limit = max(8, len(table.names) // 4)
        for key, got in held.answers.items():
            pending = changed.union(got.pending)
            if len(pending) > limit:
                continue
            # a row whose last change came before the answers' position, and whose answers were not
            # pending then, has the answers of its state at the last session's end (`same_rows`)
            maybe = frozenset(row for row, last in last_change.items() if last < got.pos and row not in got.pending)
            got.carried, got.pending, got.maybe, got.pos = True, pending, maybe, at
            answers[key] = got
        owner.since = (held.table, held.row_states)
    memo[ANSWERS_MEMO] = Carried(generation, ssn.conf, table, answers, weakref.ref(owner), owner.row_states)
    return answers


def row_state(owner: Owner, plugin: str, arrays: RowState) -> None:
    """Vouch that, of the per-node state that moves with placements, the plugin's node-local answers for a
    row read that row of the node table's FutureIdle and Idle and of `arrays` alone (arrays indexed by
    node-table row, kept current by the session's events, never replaced during it). A row of a key's
    carried answers then keeps its answers when none of these rows differs from the last session's end
    (`same_rows`); a consulted plugin that vouches for nothing leaves every row to be worked out again."""
    owner.row_states[plugin] = arrays


def same_rows(owner: Owner, table: NodeTable, plugins: list[tuple[str, str, Any]], rows: frozenset[int]) -> set[int]:
    """Of `rows` (a key's `maybe`: answers current for their state at the last session's end), those whose
    state now is that state bit for bit: the node table's FutureIdle and Idle and every consulted
    predicate and node-order plugin's row state (`plugins`: (point, name, key function) of each), compared with the last
    session's table and row states as that session left them. Empty when a plugin vouched for nothing,
    in either session, or the arrays do not match in shape."""
    since = owner.since
    if since is None or not rows or not SKIP_SAME_ROWS:
        return set()
    last_table, last_states = since
    pairs = [(getattr(table, name), getattr(last_table, name)) for name in _TABLE_READS]
    for _, plugin, _ in plugins:
        now, then = owner.row_states.get(plugin), last_states.get(plugin)
        if now is None or then is None or len(now) != len(then):
            return set()
        pairs.extend(zip(now, then, strict=True))
    at = sorted(rows)
    for now, then in pairs:
        # (an array the two sessions share would compare equal to itself whatever happened to the row)
        if now.shape != then.shape or now.dtype != then.dtype or np.may_share_memory(now, then):
            return set()
    if SAME_AT_ONCE:
        # most often every row is the same (a forecast's run session: 1,333 of 1,339 rows): the rows'
        # bytes gathered at once are equal exactly when each row's are (same shape and type, so every
        # row takes the same number of bytes at the same offset of the gathered arrays)
        index = np.array(at, dtype=np.intp)
        if all(now[index].tobytes() == then[index].tobytes() for now, then in pairs):
            return set(at)
    return same_rows_each(pairs, at)


def same_rows_each(pairs: list[tuple[np.ndarray, np.ndarray]], at: list[int]) -> set[int]:
    """Of the rows `at`, those on which every pair of arrays (now, then) holds the same bytes, row by row
    (the reference of `same_rows`' test of the rows at once)."""
    # bits, not `==`: NaN and -0.0 are states of their own
    same = [row for row in at if all(now[row].tobytes() == then[row].tobytes() for now, then in pairs)]
    return set(same)


def check_carried(got: Answers, fresh: Answers) -> str | None:
    """Under the self-check, carried answers just brought up to date against answers worked out over
    every node: the arrays bit for bit, the unresolvable rows, and the ranking (every feasible node
    whose rank key is at most the bound, in order). What differs, or None."""
    for name in ("fit", "idle_fit", "ok", "unresolvable"):
        if not np.array_equal(getattr(got, name), getattr(fresh, name)):
            return name
    if got.scores.tobytes() != fresh.scores.tobytes():
        return "scores"
    if got.unres_rows != fresh.unres_rows:
        return "unresolvable rows"
    if fresh.nan:
        return None if got.nan else "NaN score"
    if got.nan:
        return None  # a NaN once seen leaves the key to the full path, as within a session
    feasible = np.flatnonzero(fresh.fit & fresh.ok).tolist()
    keys = sorted((-2 if fresh.idle_fit[row] else -1, -float(fresh.scores[row]), row) for row in feasible)
    if got.top != [k for k in keys if k <= got.bound]:
        return "ranking"
    return None


def fail(key: Any, what: str) -> None:
    """Raise the self-check's error for carried answers that differ from fresh ones."""
    raise check.StateCheckError(f"{check.ENV}: the placement answers of key {key!r} carried from the last session "
                                f"and brought up to date differ from answers worked out afresh ({what})")


class PlacementSession(CarrySession, Protocol):
    """What the cache reads from the session that owns it (the session implements it; naming the members
    here rather than importing the session keeps the framework free of import cycles), carrying's
    members (memo, conf, the open's generation and delta) among them."""

    @property
    def table(self) -> NodeTable:
        """The session's node table."""
        ...

    @property
    def node_local_keys(self) -> dict[str, Callable[[TaskInfo], Hashable | None]]:
        """Plugin name -> its placement-key function (Session.add_node_local_key)."""
        ...

    @property
    def node_row_fns(self) -> dict[str, Callable[[TaskInfo, int], Any]]:
        """Plugin name -> its one-node answer (Session.add_node_local_key)."""
        ...

    @property
    def unresolvable_nodes(self) -> dict[str, set[int]]:
        """Task uid -> rows that fail a predicate for good."""
        ...

    def has_fn(self, point: str) -> bool:
        """Whether any enabled plugin registered the point."""
        ...

    def consulted(self, point: str) -> list[tuple[int, PluginOption, Fn]]:
        """(tier, option, fn) of every plugin the point's dispatcher consults, in order."""
        ...

    def task_vec(self, t: TaskInfo) -> np.ndarray:
        """The task's request as a node-table vector."""
        ...

    def task_cols(self, t: TaskInfo) -> np.ndarray:
        """The node-table columns the task's request compares."""
        ...

    def plugin_predicates(self, task: TaskInfo, rows: np.ndarray) -> NodeFilter:
        """Every plugin predicate over the rows."""
        ...

    def node_scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """The summed node-order scores of the rows."""
        ...
