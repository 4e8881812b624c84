"""The `apportion` command group: global options, and every command module attached to it."""

from __future__ import annotations

import logging
import sys

import click

from apportion.cli import (
    cycle,
    forecast,
    objects,
    plan,
    quota,
    serve,
    shadow,
    simulate,
    submit,
    sweep,
    version,
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More logging on stderr.")
@click.version_option(package_name="apportion")
def main(verbose: int) -> None:
    """apportion: fair share, capacity queues and reservations for shared clusters."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


#: one module per command group; each defines `register(group)`.
for _module in (cycle, quota, simulate, plan, shadow, forecast, version, serve, objects, submit, sweep):
    _module.register(main)
