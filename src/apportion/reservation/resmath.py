"""YARN resources as `(memory, vCores)` integer pairs, and YARN's two resource calculators.

`Res` values are what the plan's step functions hold. `Calculator` holds the two notions of
"bigger" of the contract (§2.3): YARN's DefaultResourceCalculator (memory only) and its
DominantResourceCalculator, both relative to a reference capacity. `f32` and `f32_str` reproduce
Java's single-precision floats, in which YARN keeps percentages and shares.
"""

from __future__ import annotations

import math
import struct

Res = tuple[int, int]
ZERO: Res = (0, 0)

#: Long.MAX_VALUE: "unbounded" in YARN times
LONG_MAX = 9223372036854775807


def radd(a: Res, b: Res) -> Res:
    """Component-wise sum."""
    return (a[0] + b[0], a[1] + b[1])


def rsub(a: Res, b: Res) -> Res:
    """Component-wise difference (may go negative)."""
    return (a[0] - b[0], a[1] - b[1])


def rneg(a: Res) -> Res:
    """-a."""
    return (-a[0], -a[1])


def rmul(a: Res, k: int) -> Res:
    """a scaled by an integer k."""
    return (a[0] * k, a[1] * k)


def fits_in(a: Res, b: Res) -> bool:
    """YARN's Resources.fitsIn: a <= b in every component (the admission test, contract §2.3 item 2)."""
    return a[0] <= b[0] and a[1] <= b[1]


def fmt_res(r: Res) -> str:
    """YARN's Resource.toString: `<memory:M, vCores:V>`."""
    return f"<memory:{r[0]}, vCores:{r[1]}>"


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
        if b[0] == 0 or b[1] == 0:
            return 0.0
        return f32(max(f32(a[0]) / f32(b[0]), f32(a[1]) / f32(b[1])))

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
            return cap if avail[0] >= 0 and avail[1] >= 0 else min(cap, -1)
        return min(cap, best)

    def is_positive(self, a: Res, ref: Res) -> bool:
        """Resources.greaterThan(calc, ref, a, ZERO)."""
        return self.compare(a, ZERO, ref) > 0


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
