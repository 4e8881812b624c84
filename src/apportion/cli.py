"""The command line: thin wrappers that parse arguments, call the library and print.

Every user-facing error becomes a one-line message on stderr and exit status 2 (bad input) or 1
(internal error); no traceback reaches a user.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

import click

from apportion.errors import ApportionError, InputError, InternalError


def run_guarded(fn: Callable[[], Any]) -> Any:
    """Run a command body, turning apportion's errors into exit codes and one-line messages."""
    try:
        return fn()
    except InputError as e:
        click.echo(f"apportion: error: {e}", err=True)
        sys.exit(2)
    except InternalError as e:
        click.echo(f"apportion: internal error: {e}", err=True)
        sys.exit(1)
    except ApportionError as e:
        click.echo(f"apportion: error: {e}", err=True)
        sys.exit(2)
    except BrokenPipeError:
        sys.exit(0)
    except KeyboardInterrupt:
        click.echo("apportion: interrupted", err=True)
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - the last line of defence: never show a traceback
        click.echo(f"apportion: internal error: {type(e).__name__}: {e}", err=True)
        sys.exit(1)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More logging on stderr.")
@click.version_option(package_name="apportion")
def main(verbose: int) -> None:
    """apportion: fair share, capacity queues and reservations for shared clusters."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


def _register_subcommands() -> None:
    """Attach the command groups that live next to the code they drive."""
    from apportion.commands import register

    register(main)


_register_subcommands()
