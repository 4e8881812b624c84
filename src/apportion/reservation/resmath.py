"""YARN resources as integer vectors, and YARN's two resource calculators.

A plan has a list of dimensions, YARN 3's resource types (`YARN_DIMS` = memory-mb and vcores
first, then any extended resource such as `nvidia.com/gpu`), and a `Res` is a tuple of exact
integers in that order: what the plan's step functions hold. A plan of the two YARN dimensions is
the common case, and the hot loops keep a path written out for two components (measured: a
generic tuple operation costs three times as much; benchmarks/README.md).

`Calculator` holds the two notions of "bigger" of the contract (§2.3): YARN's
DefaultResourceCalculator (memory only, the first dimension) and its DominantResourceCalculator
over every dimension, both relative to a reference capacity. `f32` and `f32_str` reproduce Java's
single-precision floats, in which YARN keeps percentages and shares.
"""

from __future__ import annotations

import math
import struct
from operator import add, mul, neg, sub

#: a resource vector, one exact integer per dimension of its plan
Res = tuple[int, ...]
#: the zero of a two-dimensional (memory, vCores) plan
ZERO: Res = (0, 0)
#: YARN's two mandatory resource types, the dimensions of a plan that names no other
YARN_DIMS: tuple[str, ...] = ("memory-mb", "vcores")


def zero(k: int) -> Res:
    """The zero vector of k dimensions."""
    return (0,) * k


def is_zero(a: Res) -> bool:
    """Every component zero."""
    return not any(a)

#: Long.MAX_VALUE: "unbounded" in YARN times
LONG_MAX = 9223372036854775807


def radd(a: Res, b: Res) -> Res:
    """Component-wise sum."""
    if len(a) == 2:
        return (a[0] + b[0], a[1] + b[1])
    return tuple(map(add, a, b))


def rsub(a: Res, b: Res) -> Res:
    """Component-wise difference (may go negative)."""
    if len(a) == 2:
        return (a[0] - b[0], a[1] - b[1])
    return tuple(map(sub, a, b))


def rneg(a: Res) -> Res:
    """-a."""
    if len(a) == 2:
        return (-a[0], -a[1])
    return tuple(map(neg, a))


def rmul(a: Res, k: int) -> Res:
    """a scaled by an integer k."""
    if len(a) == 2:
        return (a[0] * k, a[1] * k)
    return tuple(map(mul, a, (k,) * len(a)))


def fits_in(a: Res, b: Res) -> bool:
    """YARN's Resources.fitsIn: a <= b in every component (the admission test, contract §2.3 item 2)."""
    return all(x <= y for x, y in zip(a, b))


def nonnegative(a: Res) -> bool:
    """No component below zero."""
    return all(x >= 0 for x in a)


def fmt_res(r: Res, dims: tuple[str, ...] = YARN_DIMS) -> str:
    """YARN's Resource.toString: `<memory:M, vCores:V>`, then `, name: value` per other resource
    type, as YARN 3 prints a resource with extended types."""
    out = f"<memory:{r[0]}, vCores:{r[1]}"
    for name, v in zip(dims[2:], r[2:]):
        out += f", {name}: {v}"
    return out + ">"


_F32 = struct.Struct("f")
_F32_EXACT = 1 << 24


def f32(x: float) -> float:
    """Round a double to single precision (YARN keeps percentages and shares as Java floats)."""
    if type(x) is int and -_F32_EXACT <= x <= _F32_EXACT:
        return float(x)  # every integer up to 2**24 is a float already: skip the pack/unpack
    return float(_F32.unpack(_F32.pack(x))[0])


def f32_str(x: float) -> str:
    """Java's Float.toString, for messages that print a float."""
    if x != x:
        return "NaN"
    if x == 0:
        return "0.0"
    # shortest decimal that round-trips in single precision
    digits = 1
    while digits < 12:
        s = f"{x:.{digits}g}"
        if f32(float(s)) == x:
            break
        digits += 1
    v = float(s)
    if 1e-3 <= abs(v) < 1e7:
        out = repr(v)
        if "e" in out or "E" in out:
            out = f"{v:f}".rstrip("0")
        if "." not in out:
            out += ".0"
        if out.endswith("."):
            out += "0"
        return out
    mant, exp = f"{v:.{max(digits - 1, 1)}e}".split("e")
    mant = mant.rstrip("0")
    if mant.endswith("."):
        mant += "0"
    return f"{mant}E{int(exp)}"


class Calculator:
    """YARN's resource calculators (contract §2.3).

    `default` orders by memory only; `dominant` by dominant share of the reference capacity. Ties
    of min/max return the first operand, as YARN's Resources.min/max do.
    """

    def __init__(self, kind: str = "default") -> None:
        if kind not in ("default", "dominant"):
            raise ValueError(f"unknown resource calculator {kind!r}")
        self.kind = kind

    def compare(self, a: Res, b: Res, ref: Res) -> int:
        """-1, 0 or 1 as a is smaller than, equal to or bigger than b."""
        if self.kind == "default":
            return (a[0] > b[0]) - (a[0] < b[0])
        if a == b:
            return 0
        if len(a) != 2:
            return _dominant_compare(a, b, ref)
        if ref[0] == 0 or ref[1] == 0:
            # YARN: with a zero reference component only a component-wise dominance orders them
            if a[0] >= b[0] and a[1] >= b[1]:
                return 1
            if a[0] <= b[0] and a[1] <= b[1]:
                return -1
            return 0
        sa = (a[0] / ref[0], a[1] / ref[1])
        sb = (b[0] / ref[0], b[1] / ref[1])
        da, db = max(sa), max(sb)
        if da != db:
            return 1 if da > db else -1
        la, lb = min(sa), min(sb)
        return (la > lb) - (la < lb)

    def greater(self, a: Res, b: Res, ref: Res) -> bool:
        """a > b under this calculator, relative to `ref` (the cluster resource)."""
        return self.compare(a, b, ref) > 0

    def rmin(self, a: Res, b: Res, ref: Res) -> Res:
        """Resources.min: the smaller under this calculator (a on a tie)."""
        return a if self.compare(a, b, ref) <= 0 else b

    def rmax(self, a: Res, b: Res, ref: Res) -> Res:
        """Resources.max: the larger under this calculator (a on a tie)."""
        return a if self.compare(a, b, ref) >= 0 else b

    def ratio(self, a: Res, b: Res) -> float:
        """a / b as YARN's calculator ratio, in single precision; 0 when b has a zero component used."""
        if self.kind == "default":
            if b[0] == 0:
                return 0.0
            return f32(f32(a[0]) / f32(b[0]))
        if len(b) == 2:
            if b[0] == 0 or b[1] == 0:
                return 0.0
            return f32(max(f32(a[0]) / f32(b[0]), f32(a[1]) / f32(b[1])))
        if b[0] == 0 or b[1] == 0:
            return 0.0
        # another resource type with no capacity: nothing of it is nothing (0), something is
        # unbounded (YARN's divideSafelyAsFloat)
        return f32(max(_share(x, y) for x, y in zip(a, b)))

    def gangs(self, avail: Res, gang: Res, cap: int) -> int:
        """How many gangs fit in avail, at most cap: exact floor division (contract §2.3, §12 row 8)."""
        if self.kind == "default":
            if gang[0] <= 0:
                return cap if avail[0] >= 0 else min(cap, -1)
            return min(cap, avail[0] // gang[0])
        best: int | None = None
        for a, g in zip(avail, gang):
            if g > 0:
                n = a // g
                best = n if best is None else min(best, n)
        if best is None:
            return cap if nonnegative(avail) else min(cap, -1)
        return min(cap, best)

    def is_positive(self, a: Res, ref: Res) -> bool:
        """Resources.greaterThan(calc, ref, a, ZERO)."""
        return self.compare(a, zero(len(a)), ref) > 0


def _share(x: int, y: int) -> float:
    """x / y in single precision; 0 for 0 / 0, infinite for x / 0."""
    if y == 0:
        return 0.0 if x == 0 else math.copysign(math.inf, x)
    return f32(x) / f32(y)


def _dominant_compare(a: Res, b: Res, ref: Res) -> int:
    """DominantResourceCalculator.compare over any number of resource types (a != b).

    As YARN 3 does: with a zero reference component only a component-wise dominance orders them;
    else each side's shares of the reference, sorted from the largest, are compared in order (for
    two types: the dominant shares, then the other ones)."""
    if 0 in ref:
        if all(x >= y for x, y in zip(a, b)):
            return 1
        if all(x <= y for x, y in zip(a, b)):
            return -1
        return 0
    sa = sorted((x / r for x, r in zip(a, ref)), reverse=True)
    sb = sorted((y / r for y, r in zip(b, ref)), reverse=True)
    return (sa > sb) - (sa < sb)


def ceil_div(a: int, b: int) -> int:
    """a / b rounded up, in integers."""
    return -((-a) // b)


def round_up(t: int, step: int) -> int:
    """Round t up to a multiple of step (YARN's stepRoundUp)."""
    return ceil_div(t, step) * step


def round_down(t: int, step: int) -> int:
    """Round t down to a multiple of step (YARN's stepRoundDown)."""
    return (t // step) * step


def isclose(a: float, b: float) -> bool:  # pragma: no cover - tiny helper for tests
    """Floats equal up to rounding (relative 1e-9, absolute 1e-12)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
