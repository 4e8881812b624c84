"""Sessions a forecast's quiet test skips (semantics F1, F2, F3), mixed into the simulator.

`Simulator.quiet` is asked of each opened session; a session it calls quiet is not run
(`_skip_session`). `Simulator.early` is asked before the snapshot and the open (F3): when the last
session was opened and found quiet, and since then only tasks finished (no other event, no node
event, no other snapshot taken, the objects' view unchanged), it is handed what changed (`EarlyView`)
and may answer as the quiet test would have on the opened session; the session is then skipped
without being opened (`_skip_early`). Under `APPORTION_CHECK_STATE=1` such a session is opened all
the same, the quiet test must agree (forecast/quiet_kept.py compares), the open must warn nothing
new, and the session is then run and must change nothing but those phases (`check_quiet`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

from apportion.cluster.model import PodGroupPhase
from apportion.framework.session import Session
from apportion.lean_dataclass import dataclass
from apportion.simulation.follower import PlanFollower
from apportion.simulation.jobs import SimJob
from apportion.simulation.start import SessionObjects
from apportion.state import check


@dataclass
class EarlyView:
    """What the early test is handed: the jobs that may have changed since the last snapshot (the
    simulator's `dirty` ones; `live`: those the last session logged or noted, and those the objects
    do not keep, which nothing but that session changed), the active jobs, the objects that build
    them, the instant and the uid the session would have."""

    dirty: set[str]
    live: set[str]
    active: Mapping[str, SimJob]
    objects: SessionObjects
    now: float
    session_uid: str
    #: those of `dirty` the simulator changed since the last early test was handed a view (or since the
    #: snapshot, for the first after it): the others are as that test left them (None: not known)
    since: set[str] | None = None


#: the early test: None when the session must be opened, else the phases its close would move
EarlyTest = Callable[[EarlyView], Mapping[str, PodGroupPhase] | None]


class QuietSkipping(PlanFollower):
    """The simulator's skipping of quiet sessions (see the module; Simulator inherits it)."""

    sessions: int
    sessions_skipped: int
    recording: bool
    dirty: bool
    active: dict[str, SimJob]
    #: events other than a task's finish so far, and snapshots taken (`_snapshot`)
    _other_events: int
    _snapshots: int
    #: those counts, the node events and the objects' view when the last session was opened
    _opened: tuple[Hashable, ...] | None

    def _marks(self) -> tuple[Hashable, ...] | None:
        objects = self.objects
        if objects is None or self.plans or self.recording:
            return None
        return (self._other_events, self._node_changes, self._snapshots, objects.view_key(self.now))

    def _note_open(self) -> None:
        """A session was opened over a fresh snapshot: what the next early test is measured from."""
        self._opened = self._marks()

    def _early_view(self, live: set[str]) -> EarlyView | None:
        """What the early test needs, or None when something but tasks' finishes happened since the
        last open (or there is no start state's objects, or plans, or recording)."""
        marks = self._marks()
        if marks is None or marks != self._opened:
            return None
        assert self.objects is not None
        since, self._early_dirty = self._early_dirty, set()
        return EarlyView(set(self._dirty), live, self.active, self.objects, self.now, f"session-{self.sessions}",
                         since)

    def _skip_session(self, ssn: Session, phases: Mapping[str, PodGroupPhase]) -> None:
        """A session the quiet test shows to change nothing but the PodGroup phases `phases`: what
        running it would leave but the why-pending texts (the jobs keep the last run session's): the
        open's warnings, the queue report, and those phases, which the next period's session sees, as
        after a session whose close moved them."""
        for w in ssn.warnings:
            self.warn(w)
        if self.recording:
            self.recorder.session_report(self.now, ssn.queue_reports())
        ssn.release()
        self._write_phases(phases)

    def _skip_early(self, phases: Mapping[str, PodGroupPhase]) -> None:
        """A session the early test shows to change nothing but `phases`, not opened: its open would
        warn what the last open warned (kept once per text), and without recording there is no queue
        report to take."""
        self._write_phases(phases)

    def _write_phases(self, phases: Mapping[str, PodGroupPhase]) -> None:
        self.sessions_skipped += 1
        changed = False
        for uid, phase in phases.items():
            sj = self.active.get(uid)
            if sj is not None and sj.phase is not phase:
                sj.phase = phase
                self._dirty.add(uid)
                self._early_dirty.add(uid)
                changed = True
        self.dirty = changed

    def _check_early_warnings(self, where: str, ssn: Session) -> None:
        """The self-check: a session decided before its open warns nothing the run has not warned."""
        new = [w for w in ssn.warnings if w not in self._warned]
        if new:
            raise check.StateCheckError(f"{check.ENV}: {where} was decided quiet before its open, which warns "
                                        f"{new}")
