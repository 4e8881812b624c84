"""Kubernetes resource quantities (`500m`, `4Gi`, `1e3`, `1.5`).

Parsing is exact (Decimal) and only the final value becomes a float, so `0.1` cpu is exactly 100
millicores. NaN, infinities, booleans and anything that is not a quantity are refused.
"""

from __future__ import annotations

import re
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, InvalidOperation

from apportion.errors import QuantityError, shown

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_RE = re.compile(
    r"^(?P<num>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?\d+)|(?P<dec>[numkMGTPE]?))$"
)


#: one range rule for every way of writing a quantity (`1e400`, four hundred digits, `1e70Ki`, a YAML
#: number): a non-zero magnitude must lie in [10**-MAX_EXPONENT, 10**MAX_EXPONENT]. Far past any real
#: capacity, yet far enough inside a float's range that sums and products of quantities stay finite.
MAX_EXPONENT = 60
_HIGH = Decimal(10) ** MAX_EXPONENT
_LOW = Decimal(10) ** -MAX_EXPONENT
_RANGE = f"(a magnitude from 1e-{MAX_EXPONENT} to 1e{MAX_EXPONENT})"
#: exact arithmetic as before (28 significant digits), but wide exponents: an out-of-range input is
#: reported by the range rule, never by decimal.Overflow.
_CTX = Context(prec=28, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[InvalidOperation])


def _in_range(d: Decimal, value: object) -> Decimal:
    if d and not _LOW <= _CTX.abs(d) <= _HIGH:
        raise QuantityError(f"quantity out of range: {shown(value)} {_RANGE}")
    return d


def parse_quantity_decimal(value: object) -> Decimal:
    """Parse a quantity (string, int or float as YAML gives them) into an exact Decimal."""
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"not a quantity: {shown(value)}")
    if isinstance(value, int):
        return _in_range(Decimal(value), value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"not a finite quantity: {shown(value)}")
        return _in_range(Decimal(repr(value)), value)
    if not isinstance(value, str):
        raise QuantityError(f"not a quantity: {shown(value)} (a {type(value).__name__})")
    text = value.strip()
    m = _RE.match(text)
    if not m:
        raise QuantityError(f"not a quantity: {shown(value)}")
    num = Decimal(m.group("num"))
    if m.group("bin"):
        return _in_range(_CTX.multiply(num, _BINARY[m.group("bin")]), value)
    if m.group("exp"):
        digits = m.group("exp")[1:].lstrip("+-")
        if len(digits) > 6:  # an exponent of a million or more: out of range whatever the mantissa
            raise QuantityError(f"quantity out of range: {shown(value)} {_RANGE}")
        return _in_range(_CTX.scaleb(num, int(m.group("exp")[1:])), value)
    return _in_range(_CTX.multiply(num, _DECIMAL[m.group("dec") or ""]), value)


def parse_quantity(value: object) -> float:
    """Parse a quantity into a float in its base unit (cores, bytes, counts)."""
    return float(parse_quantity_decimal(value))
