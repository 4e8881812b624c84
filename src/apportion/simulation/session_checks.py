"""The self-checks (`APPORTION_CHECK_STATE=1`) of what a simulated session left: the closes carried
over from the last session, and a session the quiet test called quiet, which is run anyway."""

from __future__ import annotations

from collections.abc import Mapping

from apportion.cluster.model import PodGroupPhase
from apportion.engine import CycleResult
from apportion.simulation.jobs import SimJob
from apportion.state import check


def check_carried(active: Mapping[str, SimJob], result: CycleResult) -> None:
    """A job the session closed as the last one did holds that phase and message."""
    recomputed = {j.uid for j in result.recomputed or ()}
    messages = {ev.object: ev.message for ev in result.events}
    for uid, phase in result.podgroups.items():
        sj = active.get(uid)
        if uid not in recomputed and sj is not None and (
                sj.phase.value != phase or (uid in messages and sj.message != messages[uid])):
            raise check.StateCheckError(f"{check.ENV}: job {uid} closed as in the last session holds "
                                        f"{sj.phase.value}, {sj.message!r}, not {phase}, {messages.get(uid)!r}")


def check_quiet(where: str, result: CycleResult, verdict: Mapping[str, PodGroupPhase],
                moved: Mapping[str, PodGroupPhase], warnings_at_open: list[str]) -> None:
    """A session called quiet (semantics F1, F2), run: it binds, pipelines and evicts nothing, leaves
    the open's warnings, and moves exactly the phases `verdict` foretold (`moved`: those it moved)."""
    if (result.binds or result.evictions or result.pipelined or result.warnings != warnings_at_open
            or dict(moved) != dict(verdict)):
        raise check.StateCheckError(
            f"{check.ENV}: {where} was called quiet (phases moved: {dict(verdict)}) but binds "
            f"{len(result.binds)}, pipelines {len(result.pipelined)}, evicts {len(result.evictions)}, moves the "
            f"phases {dict(moved)} or changes a warning")
