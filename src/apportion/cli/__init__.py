"""The command line: thin wrappers that parse arguments, call the library and print.

One module per command group (`cycle`, `quota`, `simulate`, `plan`), attached to the `apportion` group
in `app`; `guard` turns errors into exit statuses, `render` draws the cycle tables. The entry point is
`apportion.cli:main`.
"""

from __future__ import annotations

from apportion.cli.app import main
from apportion.cli.guard import run_guarded

__all__ = ["main", "run_guarded"]
