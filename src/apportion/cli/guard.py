"""How every command reports failure: apportion's errors become one line on stderr and an exit status
(2 bad input, 1 internal error, 130 interrupted, 141 when the reader of stdout went away); no traceback
reaches a user."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import click

from apportion.errors import ApportionError, InputError, InternalError

#: the status a shell reports for a Unix tool killed by SIGPIPE (128 + 13)
SIGPIPE_STATUS = 141


def quiet_broken_pipe() -> NoReturn:
    """Stdout's reader went away (`apportion cycle snap.yaml | head -1`): stop without a word, as a Unix
    tool killed by SIGPIPE does. Stdout is pointed at /dev/null first, so the interpreter's last flush
    has nothing left to fail on."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (a test's capture): nothing to flush
        pass
    sys.exit(SIGPIPE_STATUS)


def run_guarded(fn: Callable[[], Any]) -> Any:
    """Run a command body, turning apportion's errors into exit codes and one-line messages."""
    try:
        out = fn()
        sys.stdout.flush()  # inside the guard: a reader that went away shows here, not at exit
        return out
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
        quiet_broken_pipe()
    except KeyboardInterrupt:
        click.echo("apportion: interrupted", err=True)
        sys.exit(130)
    except Exception as e:  # noqa: BLE001 - the last line of defence: never show a traceback
        click.echo(f"apportion: internal error: {type(e).__name__}: {e}", err=True)
        sys.exit(1)
