"""`apportion sweep`: simulation variants in parallel on Ray (or one after another with --local)."""

from __future__ import annotations

from pathlib import Path

import click

from apportion.cli.guard import run_guarded


@click.command("sweep")
@click.argument("scenario", required=False)
@click.option("--vary", "varies", multiple=True, metavar="KEY=VALUES",
              help="run.seed=0..9, run.horizon=3600,7200 or scheduler=a.conf,b.conf (repeatable: every combination).")
@click.option("--ray-address", default=None, help="The Ray cluster to run on (default: $RAY_ADDRESS, else a new local Ray).")
@click.option("--local", is_flag=True, help="Run the variants one after another in this process (no Ray).")
@click.option("--out", default="sweep-report", show_default=True, type=click.Path(file_okay=False),
              help="Where the comparison report goes.")
def sweep(scenario: str | None, varies: tuple[str, ...], ray_address: str | None, local: bool, out: str) -> None:
    """Simulate every combination of the --vary values of SCENARIO (default: the built-in one)."""
    def body() -> None:
        from apportion.backends.sweep import name, run_sweep, variants, write_report
        from apportion.errors import InputError

        if scenario and not Path(scenario).is_file():
            raise InputError("no such file", where=scenario)
        if local and ray_address:
            raise InputError("--local runs without Ray: drop --ray-address", where="--local")
        todo = variants(list(varies))

        def progress(done: int, total: int, v: tuple[tuple[str, str], ...]) -> None:
            click.echo(f"[{done}/{total}] {name(v)}", err=True)

        summaries = run_sweep(scenario or "", todo, local=local, address=ray_address, progress=progress)
        click.echo(f"report written to {write_report(Path(out), todo, summaries).resolve()}")

    run_guarded(body)


def register(group: click.Group) -> None:
    """Attach `sweep`."""
    group.add_command(sweep)
