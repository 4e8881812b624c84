"""The `apportion` command group: global options, and every command module attached to it.

A command's module is imported when the command is looked up, not at start: `apportion cycle` then
pays for what a cycle needs, not for the service, the planner or the tables (about a third of the
start). `--help` and anything that lists the commands import every module.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

import click

from apportion.cli.collector import collector_off

#: command name -> the module (in apportion.cli) whose `register(group)` attaches it
COMMAND_MODULES: dict[str, str] = {
    "cycle": "cycle",
    "quota": "quota",
    "simulate": "simulate",
    "demo": "simulate",
    "plan": "plan",
    "shadow": "shadow",
    "forecast": "forecast",
    "diff": "forecast",
    "version": "version",
    "serve": "serve",
    "token": "serve",
    "apply": "objects",
    "get": "objects",
    "delete": "objects",
    "submit": "submit",
    "sweep": "sweep",
}


class LazyGroup(click.Group):
    """A group that imports a command's module on first use (`COMMAND_MODULES`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: set[str] = set()

    def _load(self, module: str) -> None:
        if module not in self._loaded:
            self._loaded.add(module)
            # a command's modules (numpy, the scheduler) are objects that live on: the collections
            # their allocation triggers find nothing to free
            with collector_off():
                importlib.import_module(f"apportion.cli.{module}").register(self)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command, its module imported first."""
        module = COMMAND_MODULES.get(cmd_name)
        if module is not None:
            self._load(module)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command's name, every module imported."""
        self.load_all()
        return super().list_commands(ctx)

    def load_all(self) -> None:
        """Import every command module (in COMMAND_MODULES' order)."""
        for module in dict.fromkeys(COMMAND_MODULES.values()):
            self._load(module)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More logging on stderr.")
@click.version_option(package_name="apportion")
def main(verbose: int) -> None:
    """apportion: fair share, capacity queues and reservations for shared clusters."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
