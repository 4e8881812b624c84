"""Volcano's `Resource` and every comparison it has, in one place.

Internal units follow Volcano (`api/resource_info.go`): cpu in millicores, memory in bytes, `pods` as a
plain count, every other admitted scalar in milli-units (one GPU is 1000). Convert at the boundary only
(`from_resource_list`, `to_natural`).

The comparisons differ on purpose, as Volcano's do; each method names the rule of the semantics guide
(§3.4 a-e) it implements, because the missing-dimension and tolerance rules are where bugs hide.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Literal

from apportion.errors import InternalError, QuantityError, shown
from apportion.quantity import parse_quantity_decimal

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL = "ephemeral-storage"
GPU = "nvidia.com/gpu"

#: Volcano's minResource: the tolerance of rule (a) and the emptiness threshold.
MIN_RESOURCE = 0.1

UNLIMITED = math.inf

DefaultMode = Literal["zero", "infinity"]

#: (resource name, quantity text) -> (0 cpu / 1 memory / 2 scalar / 3 dropped, internal value, negative):
#: a dump writes the same few quantities thousands of times, and parsing one exactly (Decimal) is the
#: larger part of reading a pod. Only strings are kept (a YAML `1` and `true` hash alike).
_PARSED: dict[tuple[str, str], tuple[int, float, bool]] = {}
_PARSED_MAX = 65536


def is_admitted_scalar(name: str) -> bool:
    """True for the names kube-scheduler treats as scalar resources (plus `pods`, `ephemeral-storage`).

    Bare names such as `rdma` and quota names `count/*` are dropped, as Volcano drops them.
    """
    if name in (PODS, EPHEMERAL):
        return True
    if name.startswith(("hugepages-", "attachable-volumes-", "kubernetes.io/")):
        return True
    if name.startswith("count/"):
        return False
    return "/" in name


def to_internal(name: str, natural: float) -> float:
    """Natural units (cores, bytes, counts, devices) to Volcano's internal units."""
    if name == CPU:
        return natural * 1000.0
    if name in (MEMORY, PODS):
        return natural
    return natural * 1000.0


def to_natural_value(name: str, internal: float) -> float:
    """Internal units back to natural ones."""
    if internal == UNLIMITED:
        return internal
    if name in (MEMORY, PODS):
        return internal
    return internal / 1000.0


def _le_tol(left: float, right: float) -> bool:
    return left < right or abs(left - right) < MIN_RESOURCE


class Resource:
    """A multi-dimensional amount: cpu and memory always present, scalars present or absent."""

    __slots__ = ("cpu", "memory", "scalars")

    def __init__(self, cpu: float = 0.0, memory: float = 0.0, scalars: Mapping[str, float] | None = None):
        self.cpu = float(cpu)
        self.memory = float(memory)
        self.scalars: dict[str, float] = dict(scalars) if scalars else {}

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_resource_list(
        cls, rl: Mapping[str, object] | None, *, allow_negative: bool = False
    ) -> Resource:
        """Build from a Kubernetes resource list (`{cpu: "500m", memory: 1Gi}`), dropping unadmitted names.

        Raises QuantityError (naming the resource) for a value that does not parse or is negative.
        """
        r = cls()
        if not rl:
            return r
        for name, raw in rl.items():
            if type(raw) is str and type(name) is str:
                hit = _PARSED.get((name, raw))
                if hit is not None and (allow_negative or not hit[2]):
                    if hit[0] == 0:
                        r.cpu = hit[1]
                    elif hit[0] == 1:
                        r.memory = hit[1]
                    elif hit[0] == 2:
                        r.scalars[name] = hit[1]
                    continue
            name = str(name)
            try:
                dec = parse_quantity_decimal(raw)
            except QuantityError as e:
                raise QuantityError(f"{name}: {e.bare}") from None
            if dec < 0 and not allow_negative:
                raise QuantityError(f"{name}: negative quantity {shown(raw)}")
            value = float(dec)
            if name == CPU:
                r.cpu = value = float(dec * 1000)
                slot = 0
            elif name == MEMORY:
                r.memory = value
                slot = 1
            elif is_admitted_scalar(name):
                r.scalars[name] = value = to_internal(name, value)
                slot = 2
            else:
                slot = 3
            if type(raw) is str and len(_PARSED) < _PARSED_MAX:
                _PARSED[(name, raw)] = (slot, value, dec < 0)
        return r

    @classmethod
    def from_natural(cls, values: Mapping[str, float]) -> Resource:
        """Build from natural units (`{"cpu": 2, "memory": 2**30, "nvidia.com/gpu": 1}`)."""
        r = cls()
        for name, v in values.items():
            r.set(name, to_internal(name, float(v)))
        return r

    @classmethod
    def unlimited_cpu_memory(cls) -> Resource:
        """Unlimited cpu and memory, no scalars (what an unset capability means)."""
        return cls(UNLIMITED, UNLIMITED)

    @classmethod
    def zero(cls) -> Resource:
        """Resource() without the constructor's conversions: hot paths make many of these."""
        r = cls.__new__(cls)
        r.cpu = 0.0
        r.memory = 0.0
        r.scalars = {}
        return r

    def clone(self) -> Resource:
        """An independent copy."""
        r = Resource.__new__(Resource)
        r.cpu = self.cpu
        r.memory = self.memory
        r.scalars = dict(self.scalars)
        return r

    # ---------------------------------------------------------------- access
    def get(self, name: str) -> float:
        """The amount of one resource by name (0 when absent)."""
        if name == CPU:
            return self.cpu
        if name == MEMORY:
            return self.memory
        return self.scalars.get(name, 0.0)

    def has(self, name: str) -> bool:
        """cpu and memory are always present; a scalar only if listed."""
        return name in (CPU, MEMORY) or name in self.scalars

    def set(self, name: str, value: float) -> None:
        """Set the amount of one resource by name."""
        if name == CPU:
            self.cpu = value
        elif name == MEMORY:
            self.memory = value
        else:
            self.scalars[name] = value

    def names(self) -> list[str]:
        """Every dimension present: cpu, memory and the listed scalars."""
        return [CPU, MEMORY, *self.scalars]

    def resource_names(self) -> list[str]:
        """Volcano's ResourceNames: dimensions whose value is at least the 0.1 threshold."""
        out = []
        if self.cpu >= MIN_RESOURCE:
            out.append(CPU)
        if self.memory >= MIN_RESOURCE:
            out.append(MEMORY)
        out.extend(n for n, v in self.scalars.items() if v >= MIN_RESOURCE)
        return out

    def is_empty(self) -> bool:
        """Volcano's IsEmpty: every dimension below 0.1, `pods` ignored."""
        if self.cpu >= MIN_RESOURCE or self.memory >= MIN_RESOURCE:
            return False
        return all(v < MIN_RESOURCE for n, v in self.scalars.items() if n != PODS)

    def is_zero(self, name: str) -> bool:
        """The named amount is below Volcano's minimum resource (counts as zero)."""
        return self.get(name) < MIN_RESOURCE

    # ---------------------------------------------------------------- arithmetic (in place, return self)
    def add(self, other: Resource) -> Resource:
        """Per dimension; scalar keys are the union of both sides."""
        self.cpu += other.cpu
        self.memory += other.memory
        s = self.scalars
        for n, v in other.scalars.items():
            s[n] = s.get(n, 0.0) + v
        return self

    def sub(self, other: Resource) -> Resource:
        """Volcano's Sub: the subtrahend must fit (rule a); a failure is an internal error, not a clamp."""
        if not other.less_equal(self):
            raise InternalError(f"resource is not sufficient to do operation: <{self}> sub <{other}>")
        return self.sub_without_assert(other)

    def sub_without_assert(self, other: Resource) -> Resource:
        """Per dimension, may go negative; only the subtrahend's scalars are touched."""
        self.cpu -= other.cpu
        self.memory -= other.memory
        s = self.scalars
        for n, v in other.scalars.items():
            s[n] = s.get(n, 0.0) - v
        return self

    def multi(self, ratio: float) -> Resource:
        """Multiply every amount by `ratio`, in place; returns self."""
        self.cpu *= ratio
        self.memory *= ratio
        for n in self.scalars:
            self.scalars[n] *= ratio
        return self

    def plus(self, other: Resource) -> Resource:
        """A new resource, self + other."""
        return self.clone().add(other)

    # ---------------------------------------------------------------- helpers of api/helpers
    def exceeded_part(self, other: Resource) -> Resource:
        """ExceededPart(self, other): the positive part of self - other, per dimension."""
        r = Resource(max(self.cpu - other.cpu, 0.0) if self.cpu > other.cpu else 0.0,
                     max(self.memory - other.memory, 0.0) if self.memory > other.memory else 0.0)
        for n, v in self.scalars.items():
            o = other.scalars.get(n, 0.0)
            if v > o:
                r.scalars[n] = v - o
        return r

    def min_dimension_resource(self, other: Resource, mode: DefaultMode = "zero") -> Resource:
        """MinDimensionResource, in place: cpu/memory min; each scalar of self capped by other's.

        A scalar that other lacks becomes 0 (mode zero) or is left unchanged (mode infinity).
        """
        self.cpu = min(self.cpu, other.cpu)
        self.memory = min(self.memory, other.memory)
        for n, v in self.scalars.items():
            if n in other.scalars:
                self.scalars[n] = min(v, other.scalars[n])
            elif mode == "zero":
                self.scalars[n] = 0.0
        return self

    @staticmethod
    def max_of(a: Resource, b: Resource) -> Resource:
        """helpers.Max: per dimension over the union of scalars; a negative scalar is dropped."""
        r = Resource(max(a.cpu, b.cpu), max(a.memory, b.memory))
        for side in (a.scalars, b.scalars):
            for n, v in side.items():
                if v >= 0:
                    r.scalars[n] = max(v, r.scalars.get(n, v))
        return r

    @staticmethod
    def min_of(a: Resource, b: Resource) -> Resource:
        """helpers.Min: per dimension over scalars present on both sides."""
        r = Resource(min(a.cpu, b.cpu), min(a.memory, b.memory))
        for n, v in a.scalars.items():
            if n in b.scalars:
                r.scalars[n] = min(v, b.scalars[n])
        return r

    # ---------------------------------------------------------------- comparisons
    def less_equal(self, limit: Resource, default: DefaultMode = "zero") -> bool:
        """Rule (a): self <= limit with the 0.1 tolerance on cpu, memory and every scalar of self.

        A scalar missing from limit counts as 0 (zero) or as unlimited (infinity).
        """
        if not _le_tol(self.cpu, limit.cpu) or not _le_tol(self.memory, limit.memory):
            return False
        ls = limit.scalars
        for n, v in self.scalars.items():
            if n in ls:
                if not _le_tol(v, ls[n]):
                    return False
            elif default == "zero" and not _le_tol(v, 0.0):
                return False
        return True

    def less_equal_failures(self, limit: Resource) -> list[str]:
        """The dimensions on which rule (a) fails (for explanations)."""
        out = []
        if not _le_tol(self.cpu, limit.cpu):
            out.append(CPU)
        if not _le_tol(self.memory, limit.memory):
            out.append(MEMORY)
        out.extend(n for n, v in self.scalars.items() if not _le_tol(v, limit.scalars.get(n, 0.0)))
        return out

    def less_equal_with_dimension(self, limit: Resource | None, req: Resource) -> tuple[bool, list[str]]:
        """Rule (b), LessEqualWithDimensionAndResourcesName: strict, on req's dimensions, `pods` skipped.

        Returns (ok, the requested dimensions that exceed the limit). A missing limit fails them all.
        """
        failed: list[str] = []
        if req.cpu > 0 and (limit is None or self.cpu > limit.cpu):
            failed.append(CPU)
        if req.memory > 0 and (limit is None or self.memory > limit.memory):
            failed.append(MEMORY)
        if self.scalars:
            for n, rv in req.scalars.items():
                if n == PODS or rv <= 0:
                    continue
                lim = 0.0 if limit is None else limit.scalars.get(n, 0.0)
                if limit is None or self.scalars.get(n, 0.0) > lim:
                    failed.append(n)
        return (not failed, failed)

    def less_equal_partly_zero_filtered(self, deserved: Resource, req: Resource) -> bool:
        """Rule (c): is there any requested dimension (pods skipped) where self <= deserved?

        Dimensions where both sides are below 0.1 are filtered out; none left means False.
        """
        for n in req.names():
            if n == PODS or req.get(n) <= 0:
                continue
            u, d = self.get(n), deserved.get(n)
            if u < MIN_RESOURCE and d < MIN_RESOURCE:
                continue
            if _le_tol(u, d):
                return True
        return False

    def greater_partly_relevant(self, deserved: Resource, req: Resource) -> bool:
        """Rule (d): is self strictly above deserved on a relevant requested dimension (pods skipped)?

        cpu/memory are relevant only where deserved has them >= 0.1; a scalar only if deserved lists it.
        """
        if req.cpu > 0 and deserved.cpu >= MIN_RESOURCE and self.cpu > deserved.cpu:
            return True
        if req.memory > 0 and deserved.memory >= MIN_RESOURCE and self.memory > deserved.memory:
            return True
        for n, rv in req.scalars.items():
            if n == PODS or rv <= 0 or n not in deserved.scalars:
                continue
            if self.scalars.get(n, 0.0) > deserved.scalars[n]:
                return True
        return False

    def intersection_names(self, other: Resource, *, ignore_pods: bool = False) -> frozenset[str]:
        """Rule (e): names at least 0.1 on both sides."""
        common = frozenset(self.resource_names()) & frozenset(other.resource_names())
        if ignore_pods:
            common = common - {PODS}
        return common

    def equal(self, other: Resource) -> bool:
        """Exact equality over the union of dimensions (missing scalar = 0)."""
        if self.cpu != other.cpu or self.memory != other.memory:
            return False
        for n in {*self.scalars, *other.scalars}:
            if self.scalars.get(n, 0.0) != other.scalars.get(n, 0.0):
                return False
        return True

    # ---------------------------------------------------------------- output
    def to_natural(self, *, keep_zero_scalars: bool = True) -> dict[str, float | str]:
        """Natural units for output: cpu/memory when non-zero, scalars when listed; unlimited as a string."""
        out: dict[str, float | str] = {}
        for n in self.names():
            v = self.get(n)
            if n in (CPU, MEMORY) and v == 0:
                continue
            if n not in (CPU, MEMORY) and v == 0 and not keep_zero_scalars:
                continue
            out[n] = "unlimited" if math.isinf(v) else _tidy(to_natural_value(n, v))
        return out

    def __repr__(self) -> str:
        parts = [f"cpu {self.cpu:g}m", f"memory {self.memory:g}"]
        parts += [f"{n} {v:g}" for n, v in sorted(self.scalars.items())]
        return "<" + ", ".join(parts) + ">"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Resource) and self.equal(other)

    __hash__ = None  # type: ignore[assignment]


def _tidy(v: float) -> float:
    """Whole numbers print as integers (JSON `2`, not `2.0`)."""
    if v == int(v) and abs(v) < 2**63:
        return int(v)
    return v


def share(allocated: float, deserved: float) -> float:
    """helpers.Share: 0 for 0/0, 1 for x/0, else x/d."""
    if deserved == 0:
        return 0.0 if allocated == 0 else 1.0
    return allocated / deserved


def share_terms(basis: Resource) -> list[tuple[str, float]]:
    """basis's names >= 0.1 (pods included) with their amounts: what dominant_share divides by."""
    return [(n, basis.get(n)) for n in basis.resource_names()]


def dominant_share(allocated: Resource, basis: Resource | list[tuple[str, float]]) -> float:
    """The maximum over basis's names >= 0.1 (pods included) of Share(allocated, basis).

    A caller that divides by the same basis many times passes its share_terms once computed."""
    # Share and max unrolled (drf calls this on every allocate event): the same divisions, and
    # `max(res, s)` keeps res unless s > res
    res = 0.0
    for n, d in (share_terms(basis) if isinstance(basis, Resource) else basis):
        a = allocated.cpu if n == CPU else allocated.memory if n == MEMORY else allocated.scalars.get(n, 0.0)
        s = (0.0 if a == 0 else 1.0) if d == 0 else a / d
        if s > res:
            res = s
    return res


def dominant_share_reference(allocated: Resource, basis: Resource | list[tuple[str, float]]) -> float:
    """`dominant_share` through `share` and `max` (the fast one is tested against this)."""
    res = 0.0
    for n, d in (share_terms(basis) if isinstance(basis, Resource) else basis):
        res = max(res, share(allocated.get(n), d))
    return res


def sum_resources(items: Iterable[Resource]) -> Resource:
    """The resources added up (a new Resource)."""
    total = Resource()
    for r in items:
        total.add(r)
    return total


def format_amount(name: str, internal: float, *, digits: int = 4) -> str:
    """A human rendering of one dimension (`72`, `1.5`, `4Gi`) for messages, to `digits` significant
    digits (a message comparing two close amounts asks for more)."""
    if math.isinf(internal):
        return "unlimited"
    v = to_natural_value(name, internal)
    if name in (MEMORY, EPHEMERAL):
        for unit, size in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if abs(v) >= size:
                q = v / size
                return f"{q:.{digits}g}{unit}"
        return f"{v:g}" if digits == 4 else f"{v:.{digits}g}"
    return f"{v:.{digits}g}"
