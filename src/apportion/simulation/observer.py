"""A public seam for code that watches a simulation session by session (`Simulator.observers`).

The forecast's accuracy tests and the Philly benchmark capture the cluster state just before a
session and record what each session started; they register an observer rather than override the
simulator's own loop.
"""

from __future__ import annotations

from typing import Any, Protocol


class SessionObserver(Protocol):
    """Told about every scheduling step of a `Simulator` (`sim`: the simulator itself)."""

    def before_session(self, sim: Any) -> None:
        """At `sim.now`, after the events up to now and before the plan follower and the session."""

    def after_session(self, sim: Any) -> None:
        """After the session at `sim.now` and its decisions (binds, evictions, phases) are applied."""
