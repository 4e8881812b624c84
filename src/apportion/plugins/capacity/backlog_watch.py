"""capacity's backlog test answered without a session: `BacklogWatch` keeps, from one opened session,
what decides whether JobEnqueueable would admit any of a backlog, and is told the jobs' changes since.

The test (`Admission.admissible_enqueues`, K14) asks, for each waiting job, whether minResources +
allocated + inqueue - elastic <= realCapability on minResources' dimensions at its leaf and every
ancestor (`_level_verdict`). A level's limits depend on the queue specs and the cluster total alone;
its accounting moves with the jobs charged to it. So a backlog pair (queue, minResources) refused at
one session stays refused until some level of its path has fallen far enough. The watch keeps, per
level the backlog's paths cross, the accounting that test reads (allocated + inqueue - elastic, per
dimension, as integers) and, per pair, one failing (level, dimension) of its path: its witness, which
keeps it refused while it fails. Per (level, dimension) it keeps the pairs it witnesses by their
request there (pairs share a few), so whether any of them could pass is a comparison per request;
only the pairs whose request now passes are looked at again, each for another witness on its path.
A pair with none would be admitted as things stand (an open pair; the session the watch was made from
may have admitted some): it is looked at again whenever the accounting moves. One open pair is the
answer, so `admits_any` stops at the first it finds, and what it did not look through stays marked as
moved for the next answer.

Exactness: the watch is made only when every amount it reads is an integer below 2**50, and a job's
change is taken in only when its amounts are exact integers (`charged_amounts`, the ledger's rule):
the integer sums are then the float sums a session open would make, bit for bit (K7), and Python
compares an integer with a float exactly, as the float comparison does on these values.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field

from apportion.cluster.model import QueueInfo
from apportion.framework import extension as ep
from apportion.framework.session import Session
from apportion.lean_dataclass import dataclass
from apportion.plugins.capacity.attrs import QueueAttr
from apportion.plugins.capacity.ledger import Amount
from apportion.plugins.capacity.plugin import CapacityPlugin
from apportion.resources import CPU, MEMORY, PODS, Resource
from apportion.state import check

#: a backlog pair: the queue and minResources by value (cpu, memory, scalars in order)
PairKey = tuple[object, ...]
#: every amount read stays below this, so that minResources + allocated + inqueue - elastic, added
#: as floats in that order, is exact at each step
_LIMIT = 2**50


def _exact(v: float) -> int | None:
    return int(v) if v.is_integer() and abs(v) < _LIMIT else None


def _dims(cpu: float, memory: float, scalars: Iterable[tuple[str, float]]) -> dict[str, float]:
    """The dimensions `less_equal_with_dimension` compares for a request: cpu and memory when
    positive, the positive scalars but pods."""
    out: dict[str, float] = {}
    if cpu > 0:
        out[CPU] = cpu
    if memory > 0:
        out[MEMORY] = memory
    for n, v in scalars:
        if n != PODS and v > 0:
            out[n] = v
    return out


@dataclass
class _Level:
    """One level's limit (None: every requested dimension fails) and accounting as integers."""

    cap: Resource | None
    acc: dict[str, int]

    def cap_of(self, dim: str) -> float:
        cap = self.cap
        assert cap is not None
        if dim == CPU:
            return cap.cpu
        if dim == MEMORY:
            return cap.memory
        return cap.scalars.get(dim, 0.0)

    def fails(self, dim: str, amount: float) -> bool:
        """`_level_verdict` fails on `dim` for a request of `amount` there."""
        return self.cap is None or amount + self.acc.get(dim, 0) > self.cap_of(dim)


@dataclass
class BacklogWatch:
    """See the module. Made by `of` from an opened session; `charge` takes a job's change in,
    `admits_any` answers the backlog test on the accounting so changed."""

    elastic_enabled: bool
    #: the session's attributes (a copy of the map: a session replaces a shared queue's attributes
    #: before changing them, never the objects) and queues, and whether capacity runs as a tree
    attrs: dict[str, QueueAttr]
    queues: dict[str, QueueInfo]
    hierarchical: bool
    #: per queue, the levels a job of it is charged to, leaf first (None: capacity charges it nowhere)
    paths: dict[str, tuple[str, ...] | None] = field(default_factory=dict)
    levels: dict[str, _Level] = field(default_factory=dict)
    #: per level no pair read yet, the accounting charged to it since the session (`_level`)
    unread: dict[str, dict[str, int]] = field(default_factory=dict)
    #: pairs refused whatever the accounting (a closed queue, a parent queue)
    refused: set[PairKey] = field(default_factory=set)
    #: pair -> (its path, its dimensions with the request there); pair -> its witness
    pairs: dict[PairKey, tuple[tuple[str, ...], dict[str, float]]] = field(default_factory=dict)
    witness: dict[PairKey, tuple[str, str]] = field(default_factory=dict)
    #: pairs with no witness: the test would admit them as the accounting stands
    open_pairs: set[PairKey] = field(default_factory=set)
    #: (level, dimension) -> the pairs it witnesses, by their request there
    buckets: dict[tuple[str, str], dict[float, set[PairKey]]] = field(default_factory=dict)
    #: (level, dimension) whose accounting moved since the last `admits_any`
    moved: set[tuple[str, str]] = field(default_factory=set)

    @classmethod
    def of(cls, ssn: Session, pairs: Iterable[PairKey]) -> BacklogWatch | None:
        """The watch over the opened session's capacity accounting (call before its actions) for
        these backlog pairs, each (queue, cpu, memory, scalars) as `quiet_kept._admission_key` makes
        them. None when capacity is not the session's one JobEnqueueable vote with its backlog test,
        its tree is broken, or an amount is not an exact integer."""
        plugin = _capacity(ssn)
        if plugin is None or plugin.blocked:
            return None
        watch = cls(plugin.elastic_enabled, dict(plugin.attrs), dict(ssn.queues), plugin.hierarchical)
        # a session changes the attributes it does not share with capacity's ledger in place: those
        # are read now, the shared ones (never changed) when a pair first needs them
        for name in watch.attrs.keys() - plugin._shared:
            if watch._level(name) is None:
                return None
        for key in pairs:
            if not watch.add_pair(key):
                return None
        return watch

    def _level(self, name: str) -> _Level | None:
        got = self.levels.get(name)
        if got is not None:
            return got
        a = self.attrs[name]
        acc: dict[str, int] = {}
        for r, sign in ((a.allocated, 1), (a.inqueue, 1), (a.elastic, -1)):
            for dim, v in (CPU, r.cpu), (MEMORY, r.memory), *r.scalars.items():
                x = _exact(v)
                if x is None:
                    return None
                acc[dim] = acc.get(dim, 0) + sign * x
        for dim, d in self.unread.pop(name, {}).items():
            acc[dim] = acc.get(dim, 0) + d
        got = self.levels[name] = _Level(a.real_capability, acc)
        return got

    def path_of(self, queue: str) -> tuple[str, ...] | None:
        """The levels a job of `queue` is charged to, leaf first (None: capacity charges it nowhere)."""
        if queue in self.paths:
            return self.paths[queue]
        attr = self.attrs.get(queue)
        path = None if attr is None else (attr.name, *reversed(attr.ancestors))
        self.paths[queue] = path
        return path

    def add_pair(self, key: PairKey) -> bool:
        """Judge a backlog pair on the current accounting as `_enqueue_answer` would, and watch it
        (refused for good, refused with a witness, or open: admitted as things stand). False when it
        cannot be judged exactly (an amount that is not an exact integer)."""
        if key in self.pairs or key in self.refused:
            return True
        queue = key[0]
        assert isinstance(queue, str)
        attr = self.attrs.get(queue)
        q = self.queues.get(queue)
        if attr is None or q is None or (not self.hierarchical or attr.is_leaf()) and q.is_open() and (
                attr.real_capability is None or len(key) < 4):
            self.pairs[key] = ((), {})  # admitted without a look at the accounting
            self.open_pairs.add(key)
            return True
        if (self.hierarchical and not attr.is_leaf()) or not q.is_open():
            self.refused.add(key)
            return True
        path = self.path_of(queue)
        assert path is not None
        _, cpu, memory, scalars = key
        assert isinstance(cpu, float) and isinstance(memory, float)
        dims = _dims(cpu, memory, scalars)  # type: ignore[arg-type]
        if any(_exact(v) is None for v in dims.values()):
            return False
        for name in path:
            if self._level(name) is None:
                return False
        self.pairs[key] = (path, dims)
        self._find_witness(key)
        return True

    def _find_witness(self, key: PairKey) -> bool:
        """Give the pair a failing (level, dimension), or count it open; True when one was found."""
        path, dims = self.pairs[key]
        for name in path:
            level = self.levels[name]
            for dim, amount in dims.items():
                if level.fails(dim, amount):
                    at = (name, dim)
                    self.witness[key] = at
                    bucket = self.buckets.get(at)
                    if bucket is None:
                        bucket = self.buckets[at] = {}
                    same = bucket.get(amount)
                    if same is None:
                        bucket[amount] = {key}
                    else:
                        same.add(key)
                    self.open_pairs.discard(key)
                    return True
        self.open_pairs.add(key)
        return False

    def drop_pair(self, key: PairKey) -> None:
        """The backlog no longer holds this pair."""
        self.refused.discard(key)
        self.open_pairs.discard(key)
        got = self.pairs.pop(key, None)
        if got is None:
            return
        at = self.witness.pop(key, None)
        if at is not None:
            bucket = self.buckets[at]
            amount = got[1][at[1]]
            same = bucket[amount]
            same.discard(key)
            if not same:
                del bucket[amount]

    def charge(self, queue: str, old: tuple[Amount | None, ...] | None, new: tuple[Amount | None, ...] | None) -> None:
        """A job of `queue` changed from the charged amounts `old` to `new` (`job_amounts`; None: not
        charged): its path's accounting moves by the difference."""
        path = self.paths[queue] if queue in self.paths else self.path_of(queue)
        if path is None:
            return
        if lean_charge:
            delta = _delta(old, new)
            if delta is None:
                delta = _delta_reference(old, new)
            elif check.enabled() and _nonzero(delta) != _nonzero(_delta_reference(old, new)):
                raise check.StateCheckError(f"{check.ENV}: capacity's backlog watch moves queue {queue}'s levels "
                                            "otherwise than by its charged amounts' difference")
        else:
            delta = _delta_reference(old, new)
        self._move(path, delta)

    def charge_delta(self, queue: str, delta: dict[str, int]) -> None:
        """`charge`, handed the difference per dimension that `_delta` would work out (the caller kept
        what it is the difference of: forecast/quiet_early.py's `watched`)."""
        path = self.paths[queue] if queue in self.paths else self.path_of(queue)
        if path is not None:
            self._move(path, delta)

    def _move(self, path: tuple[str, ...], delta: dict[str, int]) -> None:
        """The levels of `path` move by `delta` (its zeros move nothing)."""
        levels = self.levels
        moved = self.moved
        for name in path:
            level = levels.get(name)
            # a level no pair reads yet keeps the change aside until one does (`_level`)
            acc = level.acc if level is not None else self.unread.setdefault(name, {})
            for dim, v in delta.items():
                if v:
                    acc[dim] = acc.get(dim, 0) + v
                    if level is not None:
                        moved.add((name, dim))

    def admits_any(self) -> bool:
        """Whether the backlog test would admit some pair on the accounting as charged (compared
        with `admits_reference` under the self-check)."""
        got = self._admits_any()
        if check.enabled() and got != self.admits_reference():
            raise check.StateCheckError(f"{check.ENV}: capacity's backlog watch answers {got}, its pairs "
                                        f"judged on every level {not got}")
        return got

    def _admits_any(self) -> bool:
        """`admits_any`. It stops at the first pair found open: the (level, dimension) pairs whose
        accounting moved and that it has not looked through yet stay in `moved` for the next call
        (a pair keeps a witness that may no longer fail only while its witness is in `moved`)."""
        moved, self.moved = self.moved, set()
        if not moved:
            return bool(self.open_pairs)
        for key in list(self.open_pairs):
            if not self._find_witness(key):
                self.moved = moved
                return True
        todo = list(moved)
        while todo:
            at = todo.pop()
            bucket = self.buckets.get(at)
            if not bucket:
                continue
            name, dim = at
            level = self.levels[name]
            # the pairs whose request no longer fails here look for another witness (the rest still
            # fail here)
            for amount in [a for a in bucket if not level.fails(dim, a)]:
                keys = bucket.pop(amount)
                while keys:
                    key = keys.pop()
                    del self.witness[key]
                    if not self._find_witness(key):
                        if keys:
                            bucket[amount] = keys
                        self.moved.update(todo)
                        self.moved.add(at)
                        return True
        return False

    def admits_reference(self) -> bool:
        """`admits_any` judging every pair on every level of its path (the reference)."""
        for path, dims in self.pairs.values():
            if not any(self.levels[name].fails(dim, amount) for name in path for dim, amount in dims.items()):
                return True
        return False


#: tests switch this off: a change's difference is summed per dimension over (name, amount) pairs (the
#: reference), not cpu and memory as two integers and the scalars apart (`_delta`)
lean_charge = True


def _delta_reference(old: tuple[Amount | None, ...] | None, new: tuple[Amount | None, ...] | None) -> dict[str, int]:
    """What a change from the charged amounts `old` to `new` moves per dimension of the test's accounting
    (allocated + inqueue - elastic; request is not read)."""
    delta: dict[str, int] = {}
    for amounts, sign in ((old, -1), (new, 1)):
        if amounts is None:
            continue
        for a, s in ((amounts[0], sign), (amounts[2], sign), (amounts[3], -sign)):
            if a is None:
                continue
            for dim, v in (CPU, a[0]), (MEMORY, a[1]), *a[2]:
                delta[dim] = delta.get(dim, 0) + s * v
    return delta


def _delta(old: tuple[Amount | None, ...] | None, new: tuple[Amount | None, ...] | None) -> dict[str, int] | None:
    """`_delta_reference` with cpu and memory summed as two integers (the same integer sums: the order of
    exact integer additions does not matter) and only the scalars by name; None when a scalar is named
    as cpu or memory is (the reference then sums them together)."""
    cpu = mem = 0
    scalars: dict[str, int] = {}
    for amounts, sign in ((old, -1), (new, 1)):
        if amounts is None:
            continue
        for a, s in ((amounts[0], sign), (amounts[2], sign), (amounts[3], -sign)):
            if a is None:
                continue
            cpu += s * a[0]
            mem += s * a[1]
            for n, v in a[2]:
                scalars[n] = scalars.get(n, 0) + s * v
    if not scalars:
        return {CPU: cpu, MEMORY: mem}
    if CPU in scalars or MEMORY in scalars:
        return None
    delta = {CPU: cpu, MEMORY: mem}
    delta.update(scalars)
    return delta


def _nonzero(delta: dict[str, int]) -> dict[str, int]:
    """The dimensions a difference moves (a zero moves nothing: `BacklogWatch.charge` passes over it)."""
    return {dim: v for dim, v in delta.items() if v}


def elastic_of(ssn: Session) -> bool | None:
    """capacity's ElasticEnable when capacity's backlog test is the session's (`BacklogWatch.of`
    would make a watch), else None."""
    plugin = _capacity(ssn)
    return None if plugin is None else plugin.elastic_enabled


def _capacity(ssn: Session) -> CapacityPlugin | None:
    """The session's capacity plugin when it is the one JobEnqueueable vote and offers its backlog
    test (`Session.enqueue_admissible` would ask it), else None."""
    fns = ssn.consulted(ep.JOB_ENQUEUEABLE)
    if len(fns) != 1 or fns[0][1].name != "capacity" or not ssn.fast_enqueue_refusals:
        return None
    if "capacity" not in ssn.enqueue_tests:
        return None
    for _, plugin in ssn.plugins:
        if isinstance(plugin, CapacityPlugin):
            return plugin
    return None
