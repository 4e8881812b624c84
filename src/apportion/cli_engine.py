"""`apportion cycle` (and `apportion demo` until the simulator takes it over)."""

from __future__ import annotations

import json
import sys
from importlib import resources as ires

import click

from apportion.cli import run_guarded
from apportion.engine import CycleResult, cycle_files
from apportion.render import print_cycle


def register(group: click.Group) -> None:
    group.add_command(cycle)
    if "demo" not in group.commands:
        group.add_command(demo)


@click.command()
@click.argument("snapshot", nargs=-1, required=True)
@click.option("--conf", "conf_path", type=click.Path(dir_okay=False), help="volcano-scheduler.conf (or its ConfigMap)")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def cycle(snapshot: tuple[str, ...], conf_path: str | None, output: str) -> None:
    """Run one Volcano scheduling session over kubectl YAML SNAPSHOT files (`-` for stdin)."""

    def body() -> None:
        result = cycle_files(list(snapshot), conf_path)
        for w in result.warnings:
            click.echo(f"warning: {w}", err=True)
        emit(result, output)

    run_guarded(body)


def emit(result: CycleResult, output: str) -> None:
    if output == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=1, sort_keys=False) + "\n")
    else:
        print_cycle(result)


@click.command()
def demo() -> None:
    """Run the built-in example: one cycle over a small hierarchical cluster."""

    def body() -> None:
        path = ires.files("apportion.data").joinpath("demo-snapshot.yaml")
        with ires.as_file(path) as p:
            result = cycle_files([str(p)])
        print_cycle(result)

    run_guarded(body)
