"""Plain-text output that fits an 80-column terminal (forecast, fit suggestions, diff)."""

from __future__ import annotations

import textwrap
from typing import Any

WIDTH = 80


def seconds(s: float | None) -> str:
    """A duration for people: `45s`, `12m`, `3h20m`, `2d4h`; `-` for None."""
    if s is None:
        return "-"
    s = round(s)
    if s < 60:
        return f"{s}s"
    m, sec = divmod(s, 60)
    if m < 60:
        return f"{m}m{sec:02d}s" if sec else f"{m}m"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h}h{m:02d}m" if m else f"{h}h"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h" if h else f"{d}d"


def quantity(name: str, v: float) -> str:
    """One resource amount in the unit people read it in (memory in Gi/Mi, the rest as numbers)."""
    if name == "memory" or name.endswith("storage"):
        if v >= 2**30:
            return f"{v / 2**30:.4g}Gi"
        return f"{v / 2**20:.4g}Mi"
    return f"{v:.4g}"


def resources(d: dict[str, Any] | None) -> str:
    """`cpu 4, memory 16Gi, nvidia.com/gpu 1` (pods left out: every task has one); `-` when empty."""
    if not d:
        return "-"
    parts = [f"{'gpu' if k == 'nvidia.com/gpu' else k} {quantity(k, float(v))}" for k, v in sorted(d.items())
             if k != "pods" and isinstance(v, (int, float))]
    return ", ".join(parts) or "-"


def clip(text: str, width: int) -> str:
    """Cut to `width` characters, marking the cut with `~`."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "~"


def row(cells: list[str], widths: list[int]) -> str:
    """Cells in fixed columns; the last one takes what is left of the line (clipped)."""
    out = ""
    for c, w in zip(cells[:-1], widths):
        out += clip(c, w).ljust(w) + " "
    rest = WIDTH - len(out)
    return (out + clip(cells[-1], rest)).rstrip()


def wrap(text: str, indent: str = "", first: str | None = None) -> list[str]:
    """Wrap to the terminal width with an indent for the lines after the first."""
    return textwrap.wrap(text, width=WIDTH, initial_indent=indent if first is None else first,
                         subsequent_indent=indent, break_on_hyphens=False) or [""]
