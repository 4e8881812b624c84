"""Readable terminal output of a cycle (rich tables), within 80 columns; JSON lives with each result type.

Nothing is ever cut: a long name wraps inside its cell (`overflow="fold"`) instead of ending in "…".
Resources are compact (`8c/32Gi/4g`, see `compact`) with a legend under the table that uses them, and
the columns that do not fit 80 characters (guarantee, inqueue, request, elastic, capability, state) are
shown by `-o wide`, as kubectl does.
"""

from __future__ import annotations

import math
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from apportion.cli.console import QuietConsole
from apportion.engine import CycleResult
from apportion.resources import CPU, MEMORY, PODS

#: wide tables are drawn on a console at least this wide, so no cell wraps (kubectl's `-o wide` does not)
WIDE_COLUMNS = 250
_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _num(v: float) -> str:
    return f"{v:.4g}".replace("e+", "e")


def _is_gpu(name: str) -> bool:
    return name.rsplit("/", 1)[-1].endswith("gpu")


def compact(d: dict[str, Any] | None, used: set[str] | None = None) -> str:
    """A resource display dict (cpu in cores, memory in bytes, scalars in their own units) as
    `8c/32Gi/4g`: `c` cores, memory with a binary suffix, `g` for a GPU, `name=value` for any other
    scalar; pods are left out (every task's implicit pods: 1, kept in JSON). `used` collects the GPU
    names shown, for the legend. `-` when there is nothing to show, `∞` for unlimited."""
    if not d:
        return "-"
    parts = []
    for k, v in d.items():
        if k == PODS or not isinstance(v, (int, float)):
            continue
        if math.isinf(v) or v >= 1e300:
            text = "∞"
        elif k == MEMORY:
            text = next((f"{_num(v / size)}{unit}" for unit, size in _BINARY if abs(v) >= size), _num(v))
        else:
            text = _num(v)
        if k == CPU:
            parts.append(f"{text}c")
        elif k == MEMORY:
            parts.append(text)
        elif _is_gpu(k):
            parts.append(f"{text}g")
            if used is not None:
                used.add(k)
        else:
            parts.append(f"{k}={text}")
    return "/".join(parts) or "-"


def legend(gpus: set[str]) -> str:
    """The line under a table of compact resources that says what the letters mean."""
    text = "resources: c = cpu cores, memory in bytes (Ki/Mi/Gi/Ti), "
    text += f"g = {', '.join(sorted(gpus))}" if gpus else "g = a GPU resource"
    return text + "; pods left out (see -o json)"


def _table(title: str, *columns: str) -> Table:
    t = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, show_edge=False)
    for col in columns:
        t.add_column(col, overflow="fold", min_width=len(col))
    return t


def print_cycle(result: CycleResult, console: Console | None = None, *, wide: bool = False) -> None:
    """Binds, pipelined tasks, evictions, podgroup phases, queues and why jobs pend, as tables."""
    if console is None:
        console = QuietConsole()
        if wide:
            console = QuietConsole(width=max(console.width, WIDE_COLUMNS))
    if result.binds:
        t = _table("Binds", "task", "node")
        for k, v in sorted(result.binds.items()):
            t.add_row(k, v)
        console.print(t)
    else:
        console.print("[bold]Binds[/bold]: none")
    if result.pipelined:
        t = _table("Pipelined (waiting for releasing resources)", "task", "node")
        for k, v in sorted(result.pipelined.items()):
            t.add_row(k, v)
        console.print(t)
    if result.evictions:
        t = _table("Evictions", "task", "reason")
        reasons = result.session.evict_reasons if result.session else {}
        for k in result.evictions:
            t.add_row(k, reasons.get(k, ""))
        console.print(t)
    t = _table("PodGroups", "podgroup", "phase")
    for k, v in sorted(result.podgroups.items()):
        t.add_row(k, v)
    console.print(t)
    if result.queues:
        _print_queues(result, console, wide)
    if result.events:
        t = _table("Why pending", "object", "reason", "message")
        for e in result.events:
            t.add_row(e.object, e.reason, e.message)
        console.print(t)


def _print_queues(result: CycleResult, console: Console, wide: bool) -> None:
    cols = ["queue", "parent", "share", "deserved", "allocated", "realCapability"]
    keys = ["deserved", "allocated", "realCapability"]
    if wide:
        cols = ["queue", "parent", "state", "share", "deserved", "allocated", "request", "inqueue", "elastic",
                "capability", "realCapability", "guarantee"]
        keys = ["deserved", "allocated", "request", "inqueue", "elastic", "capability", "realCapability",
                "guarantee"]
    t = _table("Queues", *cols)
    gpus: set[str] = set()
    for name in sorted(result.queues):
        q = result.queues[name]
        share = q.get("share")
        row = [name, str(q.get("parent", "")) or "-"]
        if wide:
            row.append(str(q.get("state", "")))
        row.append(f"{share:.3f}" if isinstance(share, (int, float)) else "-")
        row += [compact(q.get(k), gpus) for k in keys]
        t.add_row(*row)
    console.print(t)
    console.print(legend(gpus) + ("" if wide else "; more columns: -o wide"), style="dim")
