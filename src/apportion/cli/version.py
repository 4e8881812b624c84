"""`apportion version`: the installed version (and the Python running it)."""

from __future__ import annotations

import json
import platform
import sys

import click

from apportion.cli.guard import run_guarded
from apportion.cli.options import output_option, write_yaml


def register(group: click.Group) -> None:
    """Add `version` to the top-level group."""
    group.add_command(version_cmd)


def installed_version() -> str:
    """apportion's version as installed (the package's own when run from a source tree)."""
    # imported here: reading the installed distributions' metadata costs every command's start
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("apportion")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
        from apportion import __version__

        return __version__


@click.command("version")
@output_option("table", "json", "yaml")
def version_cmd(output: str) -> None:
    """Print apportion's version."""

    def body() -> None:
        data = {"apportion": installed_version(), "python": platform.python_version()}
        if output == "json":
            sys.stdout.write(json.dumps(data) + "\n")
        elif output == "yaml":
            write_yaml(data)
        else:
            click.echo(f"apportion {data['apportion']} (Python {data['python']})")

    run_guarded(body)
