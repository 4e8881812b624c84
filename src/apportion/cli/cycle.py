"""`apportion cycle`: one Volcano scheduling session over a snapshot."""

from __future__ import annotations

import atexit
import gc
import sys

import click

from apportion.cli.collector import collector_off
from apportion.cli.guard import run_guarded
from apportion.cli.json_text import dumps_indent1
from apportion.cli.options import output_option, write_yaml
from apportion.engine import CycleResult, cycle_files


def register(group: click.Group) -> None:
    """Add `cycle` to the top-level group."""
    group.add_command(cycle)


@click.command()
@click.argument("snapshot", nargs=-1, required=True)
@click.option("--conf", "conf_path", type=click.Path(dir_okay=False), help="volcano-scheduler.conf (or its ConfigMap)")
@output_option("table", "wide", "json", "yaml")
def cycle(snapshot: tuple[str, ...], conf_path: str | None, output: str) -> None:
    """Run one Volcano scheduling session over kubectl YAML SNAPSHOT files (`-` for stdin)."""

    def body() -> None:
        with collector_off():
            result = cycle_files(list(snapshot), conf_path)
            for w in result.warnings:
                click.echo(f"warning: {w}", err=True)
            emit(result, output)

    skip_last_collection()
    run_guarded(body)


_EXIT_FREEZE: list[bool] = []


def skip_last_collection() -> None:
    """At interpreter exit, freeze every object out of the last collections (once per process).

    What a cycle leaves behind (the session, its jobs and the dump: hundreds of MB at 50,000 pods) is
    held in reference cycles, so only the collector frees it, and the interpreter's exit ran that pass
    over all of it: a tenth of a 5,000-node cycle, to free memory the process is about to give back.
    Registered with atexit, so a caller that runs the command in process (a test) keeps its collector
    until it exits too; output is flushed by then (run_guarded), and nothing of a cycle needs a
    finalizer."""
    if not _EXIT_FREEZE:
        _EXIT_FREEZE.append(True)
        atexit.register(gc.freeze)


def emit(result: CycleResult, output: str) -> None:
    """Print a cycle's result in the chosen format."""
    if output == "json":
        sys.stdout.write(dumps_indent1(result.to_json()) + "\n")
    elif output == "yaml":
        write_yaml(result.to_json())
    else:
        from apportion.cli.render import print_cycle  # rich: only the tables need it

        print_cycle(result, wide=output == "wide")
