"""Plain-text output that fits an 80-column terminal (forecast, fit suggestions, diff)."""

from __future__ import annotations

import re
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


def _number(v: float) -> str:
    """Four significant digits, never an exponent (a count of cores or Gi may be in the thousands)."""
    return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def quantity(name: str, v: float) -> str:
    """One resource amount in the unit people read it in (memory in Ti/Gi/Mi, the rest as numbers)."""
    if name == "memory" or name.endswith("storage"):
        if v >= 2**40:
            return f"{_number(v / 2**40)}Ti"
        if v >= 2**30:
            return f"{_number(v / 2**30)}Gi"
        return f"{_number(v / 2**20)}Mi"
    return _number(v)


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
    """Cells in fixed columns on one line; a cell too wide is clipped (`rows` keeps it whole)."""
    out = ""
    for c, w in zip(cells[:-1], widths):
        out += clip(c, w).ljust(w) + " "
    rest = WIDTH - len(out)
    return (out + clip(cells[-1], rest)).rstrip()


#: a cell that overflows where less than this is left of the line starts at this column instead
_NARROW = 24


def rows(cells: list[str], widths: list[int]) -> list[str]:
    """Cells in fixed columns (the last one takes what is left of the line), nothing cut: a cell
    wider than its column is written whole from its column (wrapped to the line, names broken only
    where longer than the line), and the row goes on below it at the next column."""
    lines: list[str] = []
    line = ""
    col = 0
    for i, c in enumerate(cells):
        last = i == len(cells) - 1
        room = WIDTH - col if last else widths[i]
        if len(c) <= room:
            line = line.ljust(col) + c
        else:
            # a cell's own indent (`  name`) is kept on the lines it wraps to
            start = col + len(c) - len(c.lstrip(" "))
            if WIDTH - start < _NARROW:
                start = 2
            if start < col:
                # a row of blank cells so far is dropped too, or its spaces would push the cell
                # past the line's end
                if line.strip():
                    lines.append(line.rstrip())
                line = ""
            chunks = textwrap.wrap(c.lstrip(" "), width=WIDTH - start, break_on_hyphens=False) or [""]
            lines.append((line.ljust(start) + chunks[0]).rstrip())
            lines.extend((" " * start + ch).rstrip() for ch in chunks[1:])
            line = ""
        if not last:
            col += widths[i] + 1
    if line.strip():
        lines.append(line.rstrip())
    return lines


#: a word and the amount after it (`cpu 4`, `memory 16Gi`, `in 30m`) are kept on one line
_AMOUNT = re.compile(r"(?<=[A-Za-z]) (?=[0-9])")


def wrap(text: str, indent: str = "", first: str | None = None) -> list[str]:
    """Wrap to the terminal width with an indent for the lines after the first (a name and its
    amount kept together)."""
    glued = _AMOUNT.sub("\u00a0", text)
    lines = textwrap.wrap(glued, width=WIDTH, initial_indent=indent if first is None else first,
                          subsequent_indent=indent, break_on_hyphens=False) or [""]
    return [line.replace("\u00a0", " ") for line in lines]
