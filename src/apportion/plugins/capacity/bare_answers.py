"""capacity's answers per bucket without texts (docs/semantics.md K43): for a caller that reads no refusal's
explanation (enqueue in a session that makes no why-pending texts), only whether each bucket is refused.

A bucket's answer is refused when some level of its path refuses its minResources (`_level_verdict`):
with texts, the first one from the leaf says why; without, any one will do, so the levels are walked
root first (a loaded cluster's refusals fail at the root, which every bucket shares), and no message
is made. Under `APPORTION_CHECK_STATE=1` each answer is compared with the vote's reference
(`Admission._answer_for`, which walks the levels from the leaf afresh).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import filterfalse, groupby, repeat
from typing import Protocol

from apportion.plugins.capacity.attrs import QueueAttr
from apportion.plugins.capacity.buckets import UNREAD, Buckets
from apportion.plugins.capacity.buckets import ReqKey as _ReqKey
from apportion.plugins.capacity.kept_plans import Plans, _Walk
from apportion.resources import Resource
from apportion.state import check

#: a level's verdict (admission.py's `_Verdict`)
_Verdict = tuple[bool, str, dict[str, str]]
#: per level, the attributes its verdicts hold for and its verdicts per minResources (`_vote_levels`)
_Levels = dict[str, tuple[QueueAttr, dict[_ReqKey, _Verdict]]]
#: a bucket's plan (admission.py's `_Plan`)
_Plan = tuple[int, str | None, tuple[str, ...] | None]

#: tests switch this off: every answer is worked out from its bucket's plan as the reference does, not
#: from the plan's reading kept with the plans (`_spec`, K55)
lean_bare = True
#: tests switch this off: a level's verdict for a minResources that lists no scalar is worked out on
#: Resource objects as `Admission._level_verdict` does, not on the cpu and memory floats (K55)
lean_verdict = True


class _Bare(Protocol):
    """What `bare_answers` reads of capacity's admission (plugins/capacity/admission.py)."""

    attrs: dict[str, QueueAttr]
    _buckets: Buckets
    _plans: Plans | None

    def _carried_plan(self, bucket: int, queue_name: str, min_req: Resource | None,
                      key: _ReqKey | None) -> _Plan: ...

    def _plan(self, queue_name: str, min_req: Resource | None, key: _ReqKey | None) -> _Plan: ...

    def _verdict(self, a: QueueAttr, min_req: Resource) -> _Verdict: ...

    def _answer_for(self, queue_name: str, min_req: Resource | None, key: _ReqKey | None,
                    levels: _Levels | None) -> tuple[int, str | None]: ...


def bare_answers(self: _Bare, wanted: Iterable[int], levels: _Levels) -> dict[int, str | None]:
    """`Admission._bucket_answers` without texts: a bucket is refused (`UNREAD`) when some level of its path
    refuses its minResources, whichever comes first; the levels are walked root first (the level a
    loaded cluster's refusals fail at, shared by every bucket). Every verdict is taken on the
    accounting as it stands (nothing moves one within a call), so which level is asked first
    changes nothing but the order they are worked out in (K43)."""
    if not lean_bare:
        return _answers_reference(self, wanted, levels)
    if not check.enabled():
        return _lean_answers(self, wanted, levels)
    wanted = list(wanted)
    out = _lean_answers(self, wanted, levels)
    if out != _answers_reference(self, wanted, levels):
        raise check.StateCheckError(f"{check.ENV}: capacity's answers without texts from the plans' kept "
                                    "reading differ from the ones worked out from the plans")
    return out


def _lean_answers(self: _Bare, wanted: Iterable[int], levels: _Levels) -> dict[int, str | None]:
    """`bare_answers` from each bucket's plan as it reads it (`_spec`, kept with the plans: `Plans.walks`,
    `Plans.fixed`, `Plans.group`): its fixed answer, or the levels root first. The buckets are taken by
    their first level and minResources by value (a group: `Plans.groups`), whose verdict is looked up
    once per group: a group the first level refuses is refused whole, and each bucket of the others
    walks its other levels. A level's verdicts are looked up once per call, as the reference looks
    them up; no accounting moves within a call, so the order buckets are answered in changes no
    answer (K55)."""
    plans = _plans_of(self)
    walks, fixed, group, groups = plans.walks, plans.fixed, plans.group, plans.groups
    todo = list(wanted)
    for i in list(filterfalse(group.__contains__, todo)):
        if i not in fixed:
            _spec(self, plans, i)
    out: dict[int, str | None] = {}
    if fixed:
        out.update({i: fixed[i] for i in todo if i in fixed})
        todo = list(filterfalse(fixed.__contains__, todo))
    attrs = self.attrs
    verdict = self._verdict
    resolved: dict[str, dict[_ReqKey, _Verdict]] = {}
    at = group.__getitem__
    todo.sort(key=at)
    for g, members in groupby(todo, at):
        first, key, min_req = groups[g]
        known = resolved.get(first)
        if known is None:
            known = resolved[first] = _verdicts(attrs, levels, first)
        hit = known.get(key)
        if hit is None:
            hit = known[key] = verdict(attrs[first], min_req)
        if not hit[0]:
            out.update(zip(members, repeat(UNREAD)))
            continue
        for i in members:
            why = None
            for name in walks[i][2]:
                known = resolved.get(name)
                if known is None:
                    known = resolved[name] = _verdicts(attrs, levels, name)
                hit = known.get(key)
                if hit is None:
                    hit = known[key] = verdict(attrs[name], min_req)
                if not hit[0]:
                    why = UNREAD
                    break
            out[i] = why
    return out


def _verdicts(attrs: dict[str, QueueAttr], levels: _Levels, name: str) -> dict[_ReqKey, _Verdict]:
    """The level's verdicts per minResources in `levels`, made anew when its attributes are another
    object (as `_answers_reference` takes them)."""
    a = attrs[name]
    level = levels.get(name)
    if level is None or level[0] is not a:
        level = levels[name] = (a, {})
    return level[1]


def _plans_of(self: _Bare) -> Plans:
    """The session's plans (made when no ask has made them yet)."""
    plans = self._plans
    if plans is None:
        plans = self._plans = Plans()
    return plans


def _spec(self: _Bare, plans: Plans, i: int) -> _Walk | None:
    """Bucket `i`'s plan as `_lean_answers` reads it, kept with the plans: when the levels are walked, its
    group (its first level, root, and minResources by value) and (its minResources by value, a
    minResources of that value, its other levels root first: returned), else its answer without text
    (`plans.fixed`, None returned), as `_answers_reference` reads the plan."""
    queue, key, min_req = self._buckets.info[i]
    plan = plans.get(i)
    if plan is None:
        plan = plans[i] = self._carried_plan(i, queue, min_req, key)
        if check.enabled() and plan != self._plan(queue, min_req, key):
            raise check.StateCheckError(f"{check.ENV}: capacity's plan for the jobs of queue {queue} with "
                                        f"minResources {key} carried from an earlier session differs "
                                        "from the one worked out now")
    answer, why, path = plan
    if path is not None and min_req is not None and key is not None:
        rev = tuple(reversed(path))
        walk = plans.walks[i] = (key, min_req, rev[1:])
        g = plans.group_of.get((rev[0], key))
        if g is None:
            g = plans.group_of[(rev[0], key)] = len(plans.groups)
            plans.groups.append((rev[0], key, min_req))
        plans.group[i] = g
        return walk
    plans.fixed[i] = None if answer >= 0 or why is None else UNREAD
    return None


def _answers_reference(self: _Bare, wanted: Iterable[int], levels: _Levels) -> dict[int, str | None]:
    """`bare_answers` bucket by bucket from the plans (the reference, and the self-checks)."""
    plans = _plans_of(self)
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


def two_dimension_verdict(a: QueueAttr, min_req: Resource) -> bool:
    """Whether the level passes `Admission._level_verdict`'s test for a minResources that lists no scalar
    (the caller's to see): minResources + allocated + inqueue - elastic, within realCapability on the
    dimensions minResources requests (> 0), worked out on the two floats in the order `Resource.plus`,
    `add` and `sub_without_assert` add them (the same sums, rounded alike), a missing realCapability
    failing each. `less_equal_with_dimension` tests only the scalars minResources lists: none here."""
    cap = a.real_capability
    ok = not ((min_req.cpu > 0 and (cap is None or ((min_req.cpu + a.allocated.cpu) + a.inqueue.cpu)
                                    - a.elastic.cpu > cap.cpu))
              or (min_req.memory > 0 and (cap is None or ((min_req.memory + a.allocated.memory)
                                                          + a.inqueue.memory) - a.elastic.memory > cap.memory)))
    if check.enabled():
        need = min_req.plus(a.allocated).add(a.inqueue).sub_without_assert(a.elastic)
        if ok != need.less_equal_with_dimension(a.real_capability, min_req)[0]:
            raise check.StateCheckError(f"{check.ENV}: capacity's verdict of queue {a.name} on cpu and memory "
                                        f"for minResources {min_req} differs from the one on resources")
    return ok
