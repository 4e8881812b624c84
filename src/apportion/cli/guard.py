"""How every command reports failure: apportion's errors become one line on stderr and an exit status
(2 bad input, 1 internal error, 130 interrupted); no traceback reaches a user."""

from __future__ import annotations

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
