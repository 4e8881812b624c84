"""Readable terminal output (rich tables) for the commands; JSON output lives with each result type."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from apportion.engine import CycleResult


def _res(d: dict[str, Any] | None) -> str:
    if not d:
        return "-"
    parts = []
    for k, v in d.items():
        if k == "pods":
            continue  # every task's implicit pods: 1; noise in a human table (kept in JSON)
        if k == "memory" and isinstance(v, (int, float)):
            parts.append(f"memory {v / 2**30:.4g}Gi")
        elif isinstance(v, float):
            parts.append(f"{k} {v:.4g}")
        else:
            parts.append(f"{k} {v}")
    return ", ".join(parts)


def print_cycle(result: CycleResult, console: Console | None = None) -> None:
    console = console or Console()
    t = Table(title="Binds", show_lines=False)
    t.add_column("task")
    t.add_column("node")
    for k, v in sorted(result.binds.items()):
        t.add_row(k, v)
    if result.binds:
        console.print(t)
    else:
        console.print("[bold]Binds[/bold]: none")
    if result.pipelined:
        t = Table(title="Pipelined (waiting for releasing resources)")
        t.add_column("task")
        t.add_column("node")
        for k, v in sorted(result.pipelined.items()):
            t.add_row(k, v)
        console.print(t)
    if result.evictions:
        t = Table(title="Evictions")
        t.add_column("task")
        t.add_column("reason")
        reasons = result.session.evict_reasons if result.session else {}
        for k in result.evictions:
            t.add_row(k, reasons.get(k, ""))
        console.print(t)
    t = Table(title="PodGroups")
    t.add_column("podgroup")
    t.add_column("phase")
    for k, v in sorted(result.podgroups.items()):
        t.add_row(k, v)
    console.print(t)
    if result.queues:
        t = Table(title="Queues")
        for col in ("queue", "parent", "share", "deserved", "allocated", "realCapability", "guarantee", "inqueue"):
            t.add_column(col)
        for name in sorted(result.queues):
            q = result.queues[name]
            share = q.get("share")
            t.add_row(
                name,
                str(q.get("parent", "")),
                f"{share:.3f}" if isinstance(share, (int, float)) else "-",
                _res(q.get("deserved")),
                _res(q.get("allocated")),
                _res(q.get("realCapability")),
                _res(q.get("guarantee")),
                _res(q.get("inqueue")),
            )
        console.print(t)
    if result.events:
        t = Table(title="Why pending")
        t.add_column("object")
        t.add_column("reason")
        t.add_column("message", overflow="fold")
        for e in result.events:
            t.add_row(e.object, e.reason, e.message)
        console.print(t)
