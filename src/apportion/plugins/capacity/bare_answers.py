"""capacity's answers per bucket without texts (docs/semantics.md K43): for a caller that reads no refusal's
explanation (enqueue in a session that makes no why-pending texts), only whether each bucket is refused.

A bucket's answer is refused when some level of its path refuses its minResources (`_level_verdict`):
with texts, the first one from the leaf says why; without, any one will do, so the levels are walked
root first (a loaded cluster's refusals fail at the root, which every bucket shares), and no message
is made. When every bucket asked about shares its last level (the root, in tree mode), that level's
verdicts are read for all of them at once, by maps over the buckets (`by_maps`), and the buckets' plans
carried from the sessions before (`_KeptPlans`) are checked against their queues the same way; only
the buckets the root lets pass are walked further, one at a time. Under `APPORTION_CHECK_STATE=1` each
answer is compared with the vote's reference (`Admission._answer_for`, which walks the levels from
the leaf afresh).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import compress, repeat
from operator import is_, is_not, itemgetter, not_
from typing import Any, Protocol, cast

from apportion.plugins.capacity.attrs import QueueAttr
from apportion.plugins.capacity.buckets import UNREAD, Buckets
from apportion.plugins.capacity.buckets import ReqKey as _ReqKey
from apportion.resources import Resource
from apportion.state import check

#: a level's verdict (admission.py's `_Verdict`)
_Verdict = tuple[bool, str, dict[str, str]]
#: per level, the attributes its verdicts hold for and its verdicts per minResources (`_vote_levels`)
_Levels = dict[str, tuple[QueueAttr, dict[_ReqKey, _Verdict]]]
#: a bucket's plan (admission.py's `_Plan`)
_Plan = tuple[int, str | None, tuple[str, ...] | None]
#: tests switch this off: every bucket is answered one at a time (`one_by_one`)
by_maps = True
_FIRST, _SECOND, _THIRD, _LAST = itemgetter(0), itemgetter(1), itemgetter(2), itemgetter(-1)
#: a bucket's entry in the kept plans when it has none: its queue is no session's
_NOT_KEPT: tuple[Any, _Plan] = (object(), (0, None, None))


class _Bare(Protocol):
    """What `bare_answers` reads of capacity's admission (plugins/capacity/admission.py)."""

    attrs: dict[str, QueueAttr]
    _buckets: Buckets
    _plans: dict[int, _Plan] | None
    _kept: dict[int, tuple[Any, _Plan]] | None

    @property
    def ssn(self) -> Any: ...

    def _carried_plan(self, bucket: int, queue_name: str, min_req: Resource | None,
                      key: _ReqKey | None) -> _Plan: ...

    def _plan(self, queue_name: str, min_req: Resource | None, key: _ReqKey | None) -> _Plan: ...

    def _verdict(self, a: QueueAttr, min_req: Resource) -> _Verdict: ...

    def _answer_for(self, queue_name: str, min_req: Resource | None, key: _ReqKey | None,
                    levels: _Levels | None) -> tuple[int, str | None]: ...


def bare_answers(self: _Bare, wanted: Iterable[int], levels: _Levels) -> dict[int, str | None]:
    """`Admission._bucket_answers` without texts (module docstring)."""
    if not by_maps:
        return one_by_one(self, wanted, levels)
    ids = list(wanted)
    info = self._buckets.info
    infos = list(map(info.__getitem__, ids))
    plans = _plans_of(self, ids, infos)
    paths = list(map(_THIRD, plans))
    walked = list(compress(range(len(ids)), map(is_not, paths, repeat(None))))
    lasts = set(map(_LAST, compress(paths, map(is_not, paths, repeat(None)))))
    if len(lasts) > 1:
        return one_by_one(self, ids, levels)
    out: dict[int, str | None] = {}
    for k in compress(range(len(ids)), map(is_, paths, repeat(None))):
        answer, why, _ = plans[k]
        out[ids[k]] = None if answer >= 0 else (UNREAD if why is not None else None)
    if walked:
        # the last level's verdicts for every bucket walked: a plan with a path has a minResources
        root = lasts.pop()
        attrs = self.attrs
        a = attrs[root]
        level = levels.get(root)
        if level is None or level[0] is not a:
            level = levels[root] = (a, {})
        known = level[1]
        keys: list[_ReqKey] = list(map(_SECOND, map(infos.__getitem__, walked)))
        hits: list[Any] = list(map(known.get, keys))
        if any(map(is_, hits, repeat(None))):
            # once per minResources value not yet judged at this level (a verdict reads only the value)
            reqs: dict[_ReqKey, Resource] = dict(zip(keys, map(_THIRD, map(infos.__getitem__, walked))))
            for req_key in reqs.keys() - known.keys():
                known[req_key] = self._verdict(a, reqs[req_key])
            hits = list(map(known.__getitem__, keys))
        passing = list(map(_FIRST, hits))
        out.update(dict.fromkeys(map(ids.__getitem__, compress(walked, map(not_, passing))), UNREAD))
        resolved: dict[str, dict[_ReqKey, _Verdict]] = {}
        for k in compress(walked, passing):
            _, req_key, req = cast(tuple[str, _ReqKey, Resource], infos[k])
            path = cast(tuple[str, ...], paths[k])
            why = None
            for name in path[-2::-1]:
                verdicts = resolved.get(name)
                if verdicts is None:
                    a = attrs[name]
                    level = levels.get(name)
                    if level is None or level[0] is not a:
                        level = levels[name] = (a, {})
                    verdicts = resolved[name] = level[1]
                hit = verdicts.get(req_key)
                if hit is None:
                    hit = verdicts[req_key] = self._verdict(attrs[name], req)
                if not hit[0]:
                    why = UNREAD
                    break
            out[ids[k]] = why
    if check.enabled():
        for i, (queue, key, min_req) in zip(ids, infos, strict=True):
            ref, _ = self._answer_for(queue, min_req, key, None)
            if (out[i] is None) != (ref >= 0):
                raise check.StateCheckError(f"{check.ENV}: capacity's answer without texts for the jobs of queue "
                                            f"{queue} with minResources {key} (by maps) differs from their vote's")
    return out


def _plans_of(self: _Bare, ids: list[int], infos: list[tuple[str, _ReqKey | None, Resource | None]]) -> list[_Plan]:
    """The session's plan of each bucket (`Admission._carried_plan`): the ones not yet taken this session
    are taken from the kept plans where their queue is the same object, by maps over the buckets, and
    worked out one at a time where not."""
    plans = self._plans
    if plans is None:
        plans = self._plans = {}
    got: list[Any] = list(map(plans.get, ids))
    missing = list(compress(range(len(ids)), map(is_, got, repeat(None))))
    if not missing:
        return got
    kept = self._kept
    if kept is not None:
        queues = list(map(self.ssn.queues.get, map(_FIRST, map(infos.__getitem__, missing))))
        held = list(map(kept.get, map(ids.__getitem__, missing), repeat(_NOT_KEPT)))
        good = list(map(is_, map(_FIRST, held), queues))
        if len(missing) == len(ids) and all(good):  # a session's first ask: every plan kept
            got = list(map(_SECOND, held))
            missing = []
        else:
            for k, h in zip(compress(missing, good), compress(held, good)):
                got[k] = h[1]
            missing = list(compress(missing, map(not_, good)))
    for k in missing:
        queue, key, min_req = infos[k]
        got[k] = self._carried_plan(ids[k], queue, min_req, key)
    plans.update(zip(ids, got))
    if check.enabled():
        for plan, (queue, key, min_req) in zip(got, infos, strict=True):
            if plan != self._plan(queue, min_req, key):
                raise check.StateCheckError(f"{check.ENV}: capacity's plan for the jobs of queue {queue} with "
                                            f"minResources {key} carried from an earlier session differs "
                                            "from the one worked out now")
    return got


def one_by_one(self: _Bare, wanted: Iterable[int], levels: _Levels) -> dict[int, str | None]:
    """`bare_answers` one bucket at a time: a bucket is refused (`UNREAD`) when some level of its path
    refuses its minResources, whichever comes first; the levels are walked root first (the level a
    loaded cluster's refusals fail at, shared by every bucket). Every verdict is taken on the
    accounting as it stands (nothing moves one within a call), so which level is asked first
    changes nothing but the order they are worked out in (K43)."""
    plans = self._plans
    if plans is None:
        plans = self._plans = {}
    info = self._buckets.info
    attrs = self.attrs
    checking = check.enabled()
    resolved: dict[str, dict[_ReqKey, _Verdict]] = {}
    out: dict[int, str | None] = {}
    for i in wanted:
        queue, key, min_req = info[i]
        plan = plans.get(i)
        if plan is None:
            plan = plans[i] = self._carried_plan(i, queue, min_req, key)
            if checking and plan != self._plan(queue, min_req, key):
                raise check.StateCheckError(f"{check.ENV}: capacity's plan for the jobs of queue {queue} with "
                                            f"minResources {key} carried from an earlier session differs "
                                            "from the one worked out now")
        answer, why, path = plan
        if path is not None and min_req is not None and key is not None:
            why = None
            for name in reversed(path):
                known = resolved.get(name)
                if known is None:
                    a = attrs[name]
                    level = levels.get(name)
                    if level is None or level[0] is not a:
                        level = levels[name] = (a, {})
                    known = resolved[name] = level[1]
                    hit = known.get(key)
                    if hit is None:
                        hit = known[key] = self._verdict(a, min_req)
                else:
                    hit = known.get(key)
                    if hit is None:
                        hit = known[key] = self._verdict(attrs[name], min_req)
                if not hit[0]:
                    why = UNREAD
                    break
        elif answer >= 0:
            why = None
        elif why is not None:
            why = UNREAD
        if checking:
            ref, _ = self._answer_for(queue, min_req, key, None)
            if (why is None) != (ref >= 0):
                raise check.StateCheckError(f"{check.ENV}: capacity's answer without texts for the jobs of queue "
                                            f"{queue} with minResources {key} differs from their vote's")
        out[i] = why
    return out
