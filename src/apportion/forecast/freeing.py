"""Which running jobs to free so that a waiting job starts: the search behind the "free running
jobs" suggestion (`fit.Search.free`), apart from the sessions that answer it.

`works(uids)` runs the next session with those jobs gone (every answer a session: nothing is
guessed). Candidates are the running jobs in two orders, smallest holding first and largest first;
in each, the shortest prefix that works is found by halving, then the last few jobs of it are
dropped one at a time where the rest still works; the cheaper of the two sets (by `cost`, then by
how many jobs; the smallest-first one on a tie) is the answer.

`choose_reference` does exactly that. `choose` gives the same answer whenever freeing more jobs
never stops the job from starting (what halving a prefix already assumes) with fewer sessions:

* a session's answer is remembered by the set of jobs freed (the prefix just short of the one
  found is the first drop tried; "free everything" is the same set in both orders);
* the largest-first order is searched first, and the smallest-first order then only looks at
  prefixes whose set, less the jobs a drop could take out, costs no more than the answer in hand: a
  longer one can never be cheaper. One session at that bound tells whether the order can win at all;
* the drops are tried a block at a time (when the rest works with a whole block gone, each drop in
  it would have worked one by one), a failing block halved, and a drop already known to fail (the
  prefix just short) skipped.

A property test (tests/forecast/test_freeing.py) compares both on monotone predicates.
"""

from __future__ import annotations

from collections.abc import Callable

from apportion.resources import Resource

#: most jobs tried one by one when shrinking a set of jobs to free
PRUNE_LIMIT = 16
#: slack when comparing costs summed in another order
_EPS = 1e-9

#: (cost, uid, what it holds) of one running job
Candidate = tuple[float, str, Resource]


def _orders(running: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
    return sorted(running), sorted(running, key=lambda r: (-r[0], r[1]))


def _held(running: list[Candidate], chosen: list[str]) -> Resource:
    held_by = {u: h for _, u, h in running}
    freed = Resource()
    for u in chosen:
        freed.add(held_by[u])
    return freed


def choose_reference(running: list[Candidate], works: Callable[[list[str]], bool],
                     cost: Callable[[Resource], float]) -> list[str] | None:
    """The jobs to free (in the order searched), or None when freeing every one does not help."""
    best: tuple[float, int, list[str]] | None = None
    for order in _orders(running):
        names = [u for _, u, _ in order]
        if not works(names):
            break  # freeing every running job does not help: neither order will
        lo, hi = 1, len(names)  # the shortest prefix that works
        while lo < hi:
            mid = (lo + hi) // 2
            if works(names[:mid]):
                hi = mid
            else:
                lo = mid + 1
        chosen = names[:lo]
        for u in list(reversed(chosen))[:PRUNE_LIMIT]:
            trial = [x for x in chosen if x != u]
            if trial and works(trial):
                chosen = trial
        c = cost(_held(running, chosen))
        if best is None or (c, len(chosen)) < (best[0], best[1]):
            best = (c, len(chosen), chosen)
    return None if best is None else best[2]


class _Memo:
    """`works` remembered by the set of jobs freed."""

    def __init__(self, works: Callable[[list[str]], bool]) -> None:
        self.works = works
        self.known: dict[frozenset[str], bool] = {}

    def __call__(self, uids: list[str]) -> bool:
        key = frozenset(uids)
        r = self.known.get(key)
        if r is None:
            r = self.known[key] = self.works(uids)
        return r

    def fails(self, uids: list[str]) -> bool:
        """Known not to work (no session run)."""
        return self.known.get(frozenset(uids)) is False


def _shortest(names: list[str], check: _Memo, lo: int, hi: int) -> int:
    """The shortest prefix that works, given that names[:hi] does."""
    while lo < hi:
        mid = (lo + hi) // 2
        if check(names[:mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _drop(chosen: list[str], cands: list[str], check: _Memo) -> list[str]:
    """`choose_reference`'s one-by-one drops of `cands` from `chosen` (in order), a block at a time."""
    if not cands:
        return chosen
    out = set(cands)
    trial = [x for x in chosen if x not in out]
    if len(cands) == 1:
        return trial if trial and check(trial) else chosen
    if trial and check(trial):
        return trial
    half = len(cands) // 2
    return _drop(_drop(chosen, cands[:half], check), cands[half:], check)


def _prune(chosen: list[str], check: _Memo) -> list[str]:
    cands = [u for u in list(reversed(chosen))[:PRUNE_LIMIT]
             if not check.fails([x for x in chosen if x != u])]
    return _drop(chosen, cands, check)


def choose(running: list[Candidate], works: Callable[[list[str]], bool],
           cost: Callable[[Resource], float]) -> list[str] | None:
    """`choose_reference`'s answer, with fewer sessions."""
    check = _Memo(works)
    asc, desc = _orders(running)
    # the largest first: no bound yet
    names = [u for _, u, _ in desc]
    if not check(names):
        return None  # freeing every running job does not help: neither order will
    hi = len(names)
    chosen = _prune(names[:_shortest(names, check, 1, hi)], check)
    best = (cost(_held(running, chosen)), len(chosen), chosen)
    # the smallest first wins a tie: only prefixes that could cost no more than `best` are searched
    names = [u for _, u, _ in asc]
    bound = _bound(asc, best[0], cost)
    if bound >= len(names):
        hi = len(names)
        if not check(names):
            return best[2]
    elif check(names[:bound]):
        hi = bound
    else:
        return best[2]  # its shortest prefix is longer, and so costs more than `best`
    chosen = _prune(names[:_shortest(names, check, 1, hi)], check)
    c = cost(_held(running, chosen))
    return chosen if (c, len(chosen)) <= (best[0], best[1]) else best[2]


def _bound(order: list[Candidate], limit: float, cost: Callable[[Resource], float]) -> int:
    """The longest prefix length L such that the prefix of length L, less the PRUNE_LIMIT jobs a
    drop may take out of it, costs no more than `limit`: a longer prefix found keeps more."""
    freed = Resource()
    kept = 0  # jobs in the prefix less the droppable tail
    for _c, _u, h in order:
        freed.add(h)
        if cost(freed) > limit + _EPS:
            break
        kept += 1
    return kept + PRUNE_LIMIT
