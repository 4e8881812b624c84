"""What a simulation run leaves: the jobs' outcomes, the Recorder's series, the plans and the reservation
log, with the run's counts. The metrics (simulation/metrics.py) and the report (simulation/report.py)
read it; the simulator (simulation/engine.py) builds it at the end of `run`.
"""

from __future__ import annotations

from typing import Any

from apportion.framework.conf import SchedulerConf
from apportion.lean_dataclass import dataclass
from apportion.simulation.jobs import SimJob
from apportion.simulation.recorder import Recorder
from apportion.simulation.reservations import SimPlan
from apportion.simulation.specs import Scenario


@dataclass
class SimulationResult:
    """Everything the metrics and the report need."""

    scenario: Scenario
    conf: SchedulerConf
    jobs: list[SimJob]
    recorder: Recorder
    plans: dict[str, SimPlan]
    reservation_log: list[dict[str, Any]]
    sessions: int
    events: int
    end_time: float
    wall_seconds: float
    warnings: list[str]
    label: str = ""
    seed: int = 0
