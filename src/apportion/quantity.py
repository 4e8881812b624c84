"""Kubernetes resource quantities (`500m`, `4Gi`, `1e3`, `1.5`).

Parsing is exact (Decimal) and only the final value becomes a float, so `0.1` cpu is exactly 100
millicores. NaN, infinities, booleans and anything that is not a quantity are refused.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from apportion.errors import QuantityError

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


def parse_quantity_decimal(value: object) -> Decimal:
    """Parse a quantity (string, int or float as YAML gives them) into an exact Decimal."""
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"not a finite quantity: {value!r}")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"not a quantity: {value!r} (a {type(value).__name__})")
    text = value.strip()
    m = _RE.match(text)
    if not m:
        raise QuantityError(f"not a quantity: {value!r}")
    try:
        num = Decimal(m.group("num"))
    except InvalidOperation as e:  # pragma: no cover - the regex admits only decimals
        raise QuantityError(f"not a quantity: {value!r}") from e
    if m.group("bin"):
        return num * _BINARY[m.group("bin")]
    if m.group("exp"):
        exp = int(m.group("exp")[1:])
        if abs(exp) > 60:
            raise QuantityError(f"quantity out of range: {value!r}")
        return num.scaleb(exp)
    return num * _DECIMAL[m.group("dec") or ""]


def parse_quantity(value: object) -> float:
    """Parse a quantity into a float in its base unit (cores, bytes, counts)."""
    return float(parse_quantity_decimal(value))
