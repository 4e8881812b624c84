"""What the early quiet test (forecast/quiet_early.py, semantics F3) keeps of each job beside its facts,
`_Held`, and the lean step's pieces (`LEAN_STEP`, semantics F15): whether a job's facts are in any of
the test's sums (`in_no_sum`), and the backlog watch charged from the held records' kept sums
(`charge_kept`); a held record's placements, entered in the walk that judges the tasks' requests whole
(`whole_and_placed`, semantics F18)."""

from __future__ import annotations

from collections.abc import Iterable

from apportion.cluster.model import TaskInfo
from apportion.cluster.node_table import NodeTable
from apportion.forecast.quiet_anchor import _Placed
from apportion.forecast.quiet_bound import RowsMade
from apportion.forecast.quiet_kept import Facts
from apportion.forecast.quiet_whole import _MOST_SEEN, EXACT, WHOLE_AT_ONCE, WholeRequests
from apportion.framework.open_parts import KIND_OF
from apportion.lean_dataclass import dataclass
from apportion.plugins.capacity.backlog_watch import BacklogWatch, _delta, _delta_reference, _nonzero
from apportion.plugins.capacity.ledger import Amount
from apportion.resources import CPU, MEMORY
from apportion.state import check

#: a job's tasks are judged whole (`WholeRequests`) and their placements entered (`placements`) in one
#: walk over them (`whole_and_placed`: the first session's ten thousand tasks, a bound gang's, a task that
#: finished); False: the two walks (the reference)
ONE_WALK = True
#: in that walk a request whose amounts equal (as numbers) those of the request judged just before it takes
#: that one's answer (`whole_request` reads the amounts alone); False: each judged (the reference)
EQUAL_AS_LAST = True
#: per status, whether a task of it takes its request off its node's FutureIdle (`KIND_OF`: used or
#: pipelined; releasing ones change no FutureIdle)
_TAKES = {st: kind is not None and kind != "releasing" for st, kind in KIND_OF.items()}

#: `_watched` sums a held record's charged amounts written out; False: through `_delta` from no amounts
#: (the reference)
WATCHED_AT_ONCE = True


@dataclass(slots=True)
class _Held:
    """What a job's change is measured from, by value (a session run after the facts were worked out
    may have changed the job object in place): its queue, what capacity charged for it (None: not
    exact) and its tasks that take their request off a node's FutureIdle, by task key."""

    queue: str
    amounts: tuple[Amount | None, ...] | None
    placed: dict[str, _Placed]
    #: `amounts`' allocated + inqueue - elastic per dimension (`_watched`), once read (`LEAN_STEP`)
    watched: tuple[int, int, dict[str, int]] | None = None


def in_no_sum(f: Facts) -> bool:
    """The facts put their job in none of `QuietTest`'s sums (`drop` and `add` touch only the facts and
    inexact entries of such a job)."""
    return (f.moved is None and f.key is None and f.admission is None and not f.unschedulable and not f.best_effort
            and not f.pending and not f.no_min_resources)


def _watched(held: _Held, checking: bool = False) -> tuple[int, int, dict[str, int]] | None:
    """What capacity's backlog test reads of the held record's charged amounts: allocated + inqueue -
    elastic as integers per dimension (cpu, memory, then each scalar as first met: `_delta` from no
    amounts), kept on the record; None when a scalar is named cpu or memory (`_delta` then leaves the
    sum to `_delta_reference`). Summed written out (`WATCHED_AT_ONCE`; compared with `_delta` under
    the self-check, `checking`)."""
    amounts = held.amounts
    assert amounts is not None
    if not WATCHED_AT_ONCE:
        return _watched_reference(held)
    cpu = memory = 0
    scalars: dict[str, int] = {}
    # `_delta(None, amounts)`'s walk: allocated and inqueue added, elastic taken off, each scalar
    # entered where first met (the same integers in the same order: the same sums, the same keys' order)
    a, q, e = amounts[0], amounts[2], amounts[3]
    if a is not None:
        cpu, memory = a[0], a[1]
        for n, v in a[2]:
            scalars[n] = scalars.get(n, 0) + v
    if q is not None:
        cpu += q[0]
        memory += q[1]
        for n, v in q[2]:
            scalars[n] = scalars.get(n, 0) + v
    if e is not None:
        cpu -= e[0]
        memory -= e[1]
        for n, v in e[2]:
            scalars[n] = scalars.get(n, 0) - v
    if CPU in scalars or MEMORY in scalars:
        got = None
    else:
        got = held.watched = (cpu, memory, scalars)
    if checking:
        want = _watched_reference(_Held(held.queue, amounts, held.placed))
        if got != want or (got is not None and want is not None and list(got[2]) != list(want[2])):
            raise check.StateCheckError(f"{check.ENV}: the backlog watch's sums of charged amounts {amounts} are "
                                        f"{got} written out, {want} through `_delta`")
    return got


def _watched_reference(held: _Held) -> tuple[int, int, dict[str, int]] | None:
    """`_watched` through `_delta` from no amounts (the reference)."""
    assert held.amounts is not None
    total = _delta(None, held.amounts)
    if total is None:
        return None
    cpu, memory = total.pop(CPU), total.pop(MEMORY)
    got = held.watched = (cpu, memory, total)
    return got


def charge_kept(watch: BacklogWatch, old: _Held, now: _Held, checking: bool) -> None:
    """`watch.charge(now.queue, old.amounts, now.amounts)` from the held records' kept sums
    (`_watched`, made when first read): the difference in `_delta`'s order (cpu, memory, then the
    scalars of `old` and those only `now` names, each as first met), compared with `_delta_reference`
    under the self-check. A scalar named cpu or memory: `charge` (which sums them with those)."""
    was = old.watched if old.watched is not None else _watched(old, checking)
    got = _watched(now, checking)
    assert old.amounts is not None and now.amounts is not None
    if was is None or got is None:
        watch.charge(now.queue, old.amounts, now.amounts)
        return
    delta = {CPU: got[0] - was[0], MEMORY: got[1] - was[1]}
    before, after = was[2], got[2]
    for n, v in before.items():
        delta[n] = after.get(n, 0) - v
    for n, v in after.items():
        if n not in before:
            delta[n] = v
    if checking and _nonzero(delta) != _nonzero(_delta_reference(old.amounts, now.amounts)):
        raise check.StateCheckError(f"{check.ENV}: job of queue {now.queue}: the backlog watch's difference "
                                    f"from the kept sums is {delta}, from the charged amounts "
                                    f"{_delta_reference(old.amounts, now.amounts)}")
    watch.charge_delta(now.queue, delta)


def placements(table: NodeTable, rows: RowsMade, tasks: Iterable[tuple[str, TaskInfo]],
               placed: dict[str, _Placed]) -> None:
    """Enter in `placed` those of the tasks (by key) that take their request off a row's FutureIdle:
    allocated and pipelined tasks on a node of the table (each task's table row kept on it)."""
    index = table.index
    row_of = rows.row
    for key, t in tasks:
        kind = KIND_OF[t.status]
        if kind is None or kind == "releasing" or not t.node_name:
            continue
        row = index.get(t.node_name)
        if row is not None:
            if t.vec is None:
                t.vec = row_of(table, t.resreq)
            placed[key] = (row, t.resreq, t.vec)


def whole_and_placed(whole_of: WholeRequests, table: NodeTable, rows: RowsMade,
                     tasks: Iterable[tuple[str, TaskInfo]], placed: dict[str, _Placed]) -> bool:
    """`whole_of(the tasks)`, and `placements(table, rows, tasks, placed)`, in one walk over the tasks
    (`ONE_WALK`): each task's request judged as `WholeRequests.__call__` judges it (a request known
    whole by its id passed over, one not seen judged written out and kept, any other asked through
    `_ask`), then its placement entered as `placements` enters it. The judging and the entering touch
    separate state (the requests' sets, `placed` and the task's row), so interleaving them per task
    leaves what the two walks leave; under the self-check `_ask` judges every request not known whole,
    as `WholeRequests` does then. A request not seen whose cpu, memory and scalars equal (`==`) those of
    the request judged written out just before it gets that one's answer (`EQUAL_AS_LAST`): `whole_request`
    is a conjunction over the amounts alone, and numbers equal as numbers give the same answer (0.0 and
    -0.0 too; an int equal to a float converts to it exactly; a NaN equals nothing)."""
    if not ONE_WALK:
        tasks = list(tasks)
        whole = whole_of(t for _, t in tasks)
        placements(table, rows, tasks, placed)
        return whole
    known, seen = whole_of.whole, whole_of.seen
    checking = check.enabled()
    index = table.index
    row_of = rows.row
    takes = _TAKES
    out = True
    # the amounts of the last request judged written out, and its answer
    last_cpu: object = None
    last_memory: object = None
    last_scalars: object = None
    last_whole = False
    for key, t in tasks:
        r = t.resreq
        i = id(r)
        if i not in known:
            if checking or not WHOLE_AT_ONCE or i in seen or len(seen) >= _MOST_SEEN:
                if not whole_of._ask(r, checking):
                    out = False
            else:
                seen[i] = r
                cpu, memory, scalars = r.cpu, r.memory, r.scalars
                if cpu == last_cpu and memory == last_memory and scalars == last_scalars and EQUAL_AS_LAST:
                    # the amounts of the request judged last (a gang's tasks ask alike), equal as numbers:
                    # its answer (a NaN equals nothing, so is judged)
                    if last_whole:
                        known.add(i)
                    else:
                        out = False
                else:
                    # `_whole_amounts(r)` written out, as in `WholeRequests.__call__`
                    last_cpu, last_memory, last_scalars, last_whole = cpu, memory, scalars, False
                    cpu, memory = float(cpu), float(memory)
                    if cpu.is_integer() and memory.is_integer() and abs(cpu) < EXACT and abs(memory) < EXACT:
                        for v in scalars.values():
                            v = float(v)
                            if not (v.is_integer() and abs(v) < EXACT):
                                out = False
                                break
                        else:
                            known.add(i)
                            last_whole = True
                    else:
                        out = False
        if takes[t.status] and t.node_name:
            row = index.get(t.node_name)
            if row is not None:
                vec = t.vec
                if vec is None:
                    vec = t.vec = row_of(table, r)
                placed[key] = (row, r, vec)
    return out
