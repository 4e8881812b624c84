"""The `apportion` command group: global options, and every command module attached to it.

A command's module is imported when the command is looked up, not at start: `apportion cycle` then
pays for what a cycle needs, not for the service, the planner or the tables (about a third of the
start). `--help` and anything that lists the commands import every module.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import sys
import threading
from collections.abc import Sequence
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


#: True: a command of QUICK_EXIT_COMMANDS run as the `apportion` program ends its process once its
#: output is flushed and the exit handlers have run (`quick_exit`), without the interpreter's teardown:
#: freeing one by one every object of a 10,000-pod dump and its forecast was a seventh of the command.
#: False: every command ends through the teardown (the reference)
QUICK_EXIT = True
#: the commands that write nothing but stdout and stderr and leave no file, thread or child behind
QUICK_EXIT_COMMANDS = frozenset({"cycle", "forecast", "diff"})


def quick_exit(code: object) -> None:
    """End the process now with the status `sys.exit(code)` gives it, stdout and stderr flushed and the
    exit handlers run (`logging`'s) as at a normal exit. Returns, leaving the end to the interpreter,
    when that would do more: print a message (`code` not an integer), join a thread, or report a flush
    that fails."""
    if code is None:
        status = 0
    elif isinstance(code, int) and -(2**31) <= code < 2**31:
        status = int(code)
    else:
        return
    if threading.active_count() > 1:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - the interpreter's own end reports it as it always has
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - as above
        return
    os._exit(status)


class LazyGroup(click.Group):
    """A group that imports a command's module on first use (`COMMAND_MODULES`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: set[str] = set()
        #: the command the last invocation resolved (None: none yet)
        self._invoked: str | None = None

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        """Click's `main`; run as the program (arguments from the command line, standalone), a command
        of QUICK_EXIT_COMMANDS ends the process at once (`quick_exit`)."""
        if args is not None or not standalone_mode or not QUICK_EXIT:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        except SystemExit as e:
            if self._invoked in QUICK_EXIT_COMMANDS:
                quick_exit(e.code)
            raise

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """Click's `resolve_command`, the name kept (for `main`)."""
        name, cmd, rest = super().resolve_command(ctx, args)
        self._invoked = name
        return name, cmd, rest

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
