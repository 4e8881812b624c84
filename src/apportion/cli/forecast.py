"""`apportion forecast` and `apportion diff` (thin: parse, call apportion.forecast, print)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from apportion.cli.collector import collector_off
from apportion.cli.guard import run_guarded
from apportion.cli.options import output_option, write_yaml


def register(group: click.Group) -> None:
    """Add `forecast` and `diff`."""
    group.add_command(forecast)
    group.add_command(diff)


def _dump_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, indent=1) + "\n")


@click.command()
@click.argument("dump")
@click.argument("jobs", nargs=-1)
@click.option("--conf", "conf_path", type=click.Path(dir_okay=False),
              help="volcano-scheduler.conf (or its ConfigMap); default: the dump's, else Volcano's default.")
@click.option("--now", "now_text", metavar="RFC3339", help="The instant the dump describes (default: its newest "
              "timestamp).")
@click.option("--assume-runtime", "assume", metavar="N|DISTRIBUTION",
              help="Runtime of pods without runtime annotations: seconds, a Go duration (1h30m) or a "
                   "distribution as in docs/scenario.md, e.g. '{exponential: 3600}'.")
@click.option("--runs", type=click.IntRange(1, 1000), default=20, show_default=True,
              help="Seeded runs when runtimes are drawn from a distribution.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--horizon", metavar="DURATION", help="Stop looking this far after now (seconds or a Go "
              "duration such as 720h).")
@click.option("--period", metavar="DURATION", default="1", show_default=True,
              help="Seconds between scheduling sessions (Volcano's schedulePeriod).")
@click.option("--fits/--no-fits", default=True, show_default=True,
              help="Suggest the cheapest single changes that let a waiting job start in the next session "
                   "(for every job named; without JOB, for the first 5 that wait).")
@output_option("table", "json", "yaml")
def forecast(dump: str, jobs: tuple[str, ...], conf_path: str | None, now_text: str | None, assume: str | None,
             runs: int, seed: int, horizon: str | None, period: str, fits: bool, output: str) -> None:
    """When will pending jobs start? Simulates forward from DUMP (kubectl YAML, `-` for stdin).

    JOB is `namespace/podgroup` (or a podgroup name found in one namespace); default: every pending job.
    """

    def body() -> None:
        # the library's modules live on: the collections their import triggers free nothing (as for
        # a command's module, `app.LazyGroup._load`)
        with collector_off():
            from apportion.forecast.api import forecast_dump
            from apportion.forecast.render import forecast_lines

        fc = forecast_dump([dump], list(jobs), conf_path=conf_path, now=now_text, assume_runtime=assume,
                           runs=runs, seed=seed, horizon=horizon, period=period, fits=fits)
        if output == "json":
            _dump_json(fc.to_json())
        elif output == "yaml":
            write_yaml(fc.to_json())
        else:
            click.echo("\n".join(forecast_lines(fc)))

    run_guarded(body)


@click.command()
@click.argument("dump")
@click.option("--conf", "conf_path", type=click.Path(dir_okay=False), help="The proposed scheduler conf.")
@click.option("--queues", "queues_path", type=click.Path(dir_okay=False),
              help="Proposed Queue objects (replace the dump's queues of the same name, add the others).")
@output_option("table", "json", "yaml")
def diff(dump: str, conf_path: str | None, queues_path: str | None, output: str) -> None:
    """What would change under a proposed conf or queues: shares, starts, evictions.

    Exit status 0 when nothing changes, 3 when something does (2 for bad input).
    """

    def body() -> int:
        with collector_off():  # as `forecast`'s
            from apportion.errors import InputError
            from apportion.forecast.api import diff_dump
            from apportion.forecast.render import diff_lines

        if not conf_path and not queues_path:
            raise InputError("give the proposal: --conf NEW.conf and/or --queues NEW-queues.yaml")
        d = diff_dump([dump], conf_path=conf_path, queues_path=queues_path)
        if output == "json":
            _dump_json(d.to_json())
        elif output == "yaml":
            write_yaml(d.to_json())
        else:
            click.echo("\n".join(diff_lines(d)))
        return 3 if d.changed else 0

    sys.exit(run_guarded(body))
