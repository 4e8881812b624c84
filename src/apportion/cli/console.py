"""The rich console the table-drawing commands print through (its own module: rich costs a command
that prints JSON a good part of its start)."""

from __future__ import annotations

from rich.console import Console

from apportion.cli.guard import quiet_broken_pipe


class QuietConsole(Console):
    """A rich Console that stops like a Unix tool on a broken pipe (rich's own exits with status 1)."""

    def on_broken_pipe(self) -> None:
        """Stdout's reader went away: stop quietly."""
        self.quiet = True
        quiet_broken_pipe()
