"""`apportion quota`: the effective quotas of every queue as the capacity plugin sees them, and why."""

from __future__ import annotations

import json
import math
import sys

import click
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from apportion.cli.console import QuietConsole
from apportion.cli.guard import run_guarded
from apportion.cli.options import output_option, write_yaml
from apportion.engine import load_inputs
from apportion.quota import QuotaView, explain_quota, fmt_resource, why_lines
from apportion.resources import Resource, format_amount


def register(group: click.Group) -> None:
    """Add `quota` to the top-level group."""
    group.add_command(quota)


@click.command()
@click.argument("snapshot", nargs=-1, required=True)
@click.option("--conf", "conf_path", type=click.Path(dir_okay=False),
              help="volcano-scheduler.conf (or its ConfigMap); overrides a ConfigMap in the snapshot")
@click.option("--hierarchy/--flat", "hierarchy", default=None,
              help="Look at capacity hierarchically or flat, whatever the conf says.")
@output_option("table", "wide", "json", "yaml")
def quota(snapshot: tuple[str, ...], conf_path: str | None, hierarchy: bool | None, output: str) -> None:
    """Show each queue's deserved, guarantee, capability and realCapability as the capacity plugin computes
    them at session open over kubectl YAML SNAPSHOT files (`-` for stdin), why realCapability is what it
    is, and every configuration warning. Nothing is scheduled."""

    def body() -> None:
        snap, conf = load_inputs(list(snapshot), conf_path)
        view = explain_quota(snap, conf, hierarchy=hierarchy)
        if output == "json":
            sys.stdout.write(json.dumps(view.to_json(), indent=1) + "\n")
        elif output == "yaml":
            write_yaml(view.to_json())
        else:
            print_quota(view, wide=output == "wide")

    run_guarded(body)


def _dimensions(view: QuotaView) -> list[str]:
    """cpu, memory and every scalar any queue or the cluster lists (pods left out)."""
    names = ["cpu", "memory"]
    seen: set[str] = set()
    for r in [view.total] + [x for q in view.queues for x in (q.deserved, q.capability, q.guarantee)]:
        if r is not None:
            seen.update(n for n in r.scalars if n != "pods")
    return names + sorted(seen)


def _amount(r: Resource | None, name: str, *, none: str = "-") -> str:
    if r is None or not r.has(name):
        return none
    v = r.get(name)
    if math.isinf(v) or v >= 1e300:
        return "∞"
    return format_amount(name, v) if v else "0"


def print_quota(view: QuotaView, console: Console | None = None, *, wide: bool = False) -> None:
    """Print the quota view: the mode, then the queue tree with each queue's effective quota and why."""
    console = console or QuietConsole()
    if view.mode == "hierarchical":
        root = ("root = the cluster total (capacity.rootCapability: cluster)" if view.root_mode == "cluster"
                else "root = its own capability, unlimited if unset (capacity.rootCapability: unlimited)")
        console.print(f"[bold]capacity, hierarchical[/bold]: {root}")
    else:
        console.print("[bold]capacity, flat[/bold]: realCapability = min(capability, "
                      "(total − Σ guarantees)⁺ + guarantee)")
    console.print(f"cluster total: {fmt_resource(view.total)}    Σ guarantees: "
                  f"{fmt_resource(view.total_guarantee, empty='none')}")
    for note in view.notes:
        console.print(Text(f"note: {note}", style="yellow"))
    if view.blocked:
        console.print(Text(f"BLOCKED: {view.blocked}", style="bold red"))

    # One table per resource keeps every column a plain number; inqueue is on -o wide,
    # so the table fits 80 columns with tree names of about 20 characters (longer ones wrap, never cut).
    cols = ["deserved", "guarantee", "capability", "realCap", "allocated"] + (["inqueue"] if wide else [])
    for res in _dimensions(view):
        t = Table(title=f"Queues: {res}" + (" (share is over every dimension)" if res == "cpu" else ""),
                  title_justify="left", box=None, padding=(0, 2, 0, 0), pad_edge=False,
                  header_style="bold")
        t.add_column("queue", overflow="fold", min_width=5)
        if res == "cpu":
            t.add_column("share", justify="right", min_width=5)
        for col in cols:
            t.add_column(col, justify="right", overflow="fold", min_width=len(col))
        for q in view.queues:
            name = q.prefix + q.name
            if not q.tracked:
                name += " (no jobs)"
            if q.state != "Open":
                name += f" [{q.state}]"
            cap = _amount(q.capability, res, none="none")
            if res in q.inherited:
                cap += "*"
            row: list[str | Text] = [Text(name, style="" if q.tracked else "dim")]
            if res == "cpu":
                row.append(f"{q.share:.3f}")
            row += [_amount(q.deserved, res), _amount(q.guarantee, res), cap,
                    Text(_amount(q.real_capability, res), style="bold"), _amount(q.allocated, res)]
            if wide:
                row.append(_amount(q.inqueue, res))
            t.add_row(*row)
        console.print(t)
        console.print()
    console.print("(* = capability inherited from the parent" + ("" if wide else "; inqueue: -o wide")
                  + ")", style="dim")

    # The reasons are sentences: one block per queue, each line wrapped under its own indent.
    console.print()
    console.print("[bold]Why realCapability is what it is[/bold]: min(capability, guarantee term), per resource")
    for q in view.queues:
        if not q.why:
            if q.depth == 0 and view.mode == "hierarchical" and q.name == "root":
                console.print(Text(q.name, style="bold"))
                console.print(Padding(Text(f"all: {fmt_resource(q.real_capability)} (root: {q.basis_from})"),
                                      (0, 0, 0, 2)))
            continue
        console.print(Text(q.name, style="bold"))
        for res, real, cap, head, won in why_lines(q):
            style = {"capability": "cyan", "guarantee term": "magenta", "tie": ""}[won]
            line = Text(f"{res}: {real}, ")
            line.append("a tie" if won == "tie" else f"won by the {won}", style=style)
            line.append(f"; capability {cap}; guarantee term {head}")
            console.print(Padding(line, (0, 0, 0, 2)))
    console.print("(pods are left out: the queue limits never check them; `-o json` has every dimension)",
                  style="dim")
    if view.warnings:
        console.print("[bold]Warnings[/bold]")
        for msg in view.warnings:
            console.print(Text(f"  - {msg}", style="yellow"))
    else:
        console.print("No configuration warnings.")
