"""Which amounts the quiet tests may sum in any order (forecast/quiet_kept.py, quiet_early.py; semantics
F3, F4, F7, F12): whole numbers below 2**50, as requests (`whole_request`, kept per request object by
`WholeRequests`) and as FutureIdle (`whole_table`)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from apportion.cluster.model import TaskInfo
from apportion.resources import Resource
from apportion.state import check

#: amounts below this are whole numbers a float holds exactly, with room for sums (as K7, F3)
EXACT = float(2**50)
#: `WholeRequests` asks a request it has not seen with `whole_request` written out (`_whole_amounts`),
#: which costs less than looking its amounts up; False: looked up per amounts (`by_amounts`, the
#: reference)
WHOLE_AT_ONCE = True


def whole_request(r: Resource) -> bool:
    """Every amount of the request a whole number below 2**50."""
    return all(float(v).is_integer() and abs(v) < EXACT for v in (r.cpu, r.memory, *r.scalars.values()))


def whole_table(future: np.ndarray) -> bool:
    """Every FutureIdle amount a whole number below 2**50."""
    return bool(np.all(np.abs(future) < EXACT) and np.all(future == np.floor(future)))


class WholeRequests:
    """Which request objects are whole amounts below 2**50 in every dimension, answered once per
    object (kept with it, so that its id is not reused). A new object is judged written out
    (`WHOLE_AT_ONCE`, F12); the reference answers once per amounts instead (`by_amounts`: a dump's every
    task has its own request object, most of them equal; `whole_request` is a function of the amounts,
    amounts equal as numbers, 0.0 and -0.0 too, give the same answer, and a NaN equals nothing and is
    asked each time)."""

    __slots__ = ("seen", "whole", "by_amounts")

    def __init__(self) -> None:
        self.seen: dict[int, Resource] = {}
        self.whole: set[int] = set()
        self.by_amounts: dict[tuple[object, ...], bool] = {}

    def __call__(self, tasks: Iterable[TaskInfo]) -> bool:
        """Every task's request whole (below 2**50). A request not seen is judged here, written out
        (`_whole_amounts` inline: the first session asks 10,000 of them), unless the self-check or the
        reference asks it through `_ask`."""
        whole = self.whole
        seen = self.seen
        out = True
        checking: bool | None = None
        for t in tasks:
            r = t.resreq
            i = id(r)
            if i in whole:
                continue
            if checking is None:
                checking = check.enabled()
            if checking or not WHOLE_AT_ONCE or i in seen or len(seen) >= _MOST_SEEN:
                if not self._ask(r, checking):
                    out = False  # the rest are looked at too, and kept for the next call
                continue
            seen[i] = r
            # `_whole_amounts(r)`: cpu and memory, then each scalar
            cpu, memory = float(r.cpu), float(r.memory)
            if cpu.is_integer() and memory.is_integer() and abs(cpu) < EXACT and abs(memory) < EXACT:
                for v in r.scalars.values():
                    v = float(v)
                    if not (v.is_integer() and abs(v) < EXACT):
                        out = False
                        break
                else:
                    whole.add(i)
            else:
                out = False
        return out

    def _ask(self, r: Resource, checking: bool = False) -> bool:
        """Whether `r` is whole, kept by its id (`checking`: compare with `whole_request`)."""
        i = id(r)
        seen = self.seen
        if i in seen:
            return False  # seen and not whole (a whole one is in `whole`)
        if len(seen) >= _MOST_SEEN:
            # the ids first: `whole` never names an object that `seen` no longer keeps alive (F9)
            self.whole.clear()
            seen.clear()
            self.by_amounts.clear()
        seen[i] = r
        if WHOLE_AT_ONCE:
            ok = _whole_amounts(r)
            if checking and ok != whole_request(r):
                raise check.StateCheckError(f"{check.ENV}: request {r} judged whole {ok} at once, "
                                            f"{not ok} amount by amount")
        else:
            amounts = (r.cpu, r.memory, *r.scalars.items())
            got = self.by_amounts.get(amounts)
            if got is None:
                got = self.by_amounts[amounts] = whole_request(r)
            ok = got
        if ok:
            self.whole.add(i)
        return ok


#: the most request objects `WholeRequests` keeps (then it forgets them all and starts again)
_MOST_SEEN = 65536


def _whole_amounts(r: Resource) -> bool:
    """`whole_request(r)` written out (no generator): the cpu and memory, then each scalar."""
    cpu, memory = float(r.cpu), float(r.memory)
    if not (cpu.is_integer() and memory.is_integer() and abs(cpu) < EXACT and abs(memory) < EXACT):
        return False
    for v in r.scalars.values():
        v = float(v)
        if not (v.is_integer() and abs(v) < EXACT):
            return False
    return True


def whole_requests_reference(tasks: Iterable[TaskInfo]) -> bool:
    """`WholeRequests` without keeping anything (the reference its property test compares with)."""
    return all(whole_request(t.resreq) for t in tasks)
