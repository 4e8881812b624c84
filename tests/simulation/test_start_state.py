"""`Simulator.from_state`: a simulation that starts from a state rather than empty (the seam the
forecast uses), with the scenario's own jobs as sessions see them (no `SessionObjects`)."""

from __future__ import annotations

from apportion.cluster.model import PodGroupPhase, TaskStatus
from apportion.resources import Resource
from apportion.simulation.engine import Simulator
from apportion.simulation.jobs import NAMESPACE, SimJob, SimTask
from apportion.simulation.scenario import JobSpec, parse_scenario
from apportion.simulation.start import SimStart, StartJob, StartTask

SCENARIO = """
cluster:
  generate:
  - {count: 1, namePrefix: n, allocatable: {cpu: 4, memory: 64Gi}}
queues:
- {kind: Queue, metadata: {name: q1}, spec: {weight: 1}}
run: {horizon: 1000}
"""


def _job(name: str, status: TaskStatus, node: str, start: float, duration: float) -> SimJob:
    res = Resource(cpu=4000, memory=2**30)
    spec = JobSpec(name=name, queue="q1", arrival=start, duration=duration, tasks=1, min_member=1, resources=res)
    phase = PodGroupPhase.RUNNING if status is TaskStatus.RUNNING else PodGroupPhase.INQUEUE
    return SimJob(spec=spec, uid=f"{NAMESPACE}/{name}", queue="q1", creation=f"{start:020.3f}", priority=0,
                  resreq=res, min_resources=res.clone(), phase=phase, state="active",
                  tasks=[SimTask(index=0, name=f"{name}-task-0", status=status, node=node, start=start)])


def test_a_start_state_runs_on_the_grid_from_its_instant() -> None:
    sc = parse_scenario(SCENARIO, source="test.yaml")
    t0 = 100.5
    # `old` holds the node's 4 cpu until 107.2; `new` waits for them
    old = _job("old", TaskStatus.RUNNING, "n-00", 90.0, 17.2)
    new = _job("new", TaskStatus.PENDING, "", t0, 30.0)
    start = SimStart(t0=t0, jobs=[StartJob(old, [StartTask(key=f"{NAMESPACE}/old-task-0", end=107.2)]),
                                  StartJob(new, [StartTask(key=f"{NAMESPACE}/new-task-0")])])
    sim = Simulator.from_state(sc, start)
    res = sim.run()
    assert sim.t0 == t0
    # sessions at 100.5 + k: the first after 107.2 is 107.5 (the node is free by then)
    assert new.first_start == 107.5
    assert old.finish is not None and abs(old.finish - 107.2) < 1e-9
    assert res.end_time >= new.first_start + 30.0 - 1e-9


def test_stop_when_started_ends_the_run_at_the_start() -> None:
    sc = parse_scenario(SCENARIO, source="test.yaml")
    new = _job("new", TaskStatus.PENDING, "", 0.0, 30.0)
    start = SimStart(t0=0.0, jobs=[StartJob(new, [StartTask(key=f"{NAMESPACE}/new-task-0")])],
                     stop_when_started=frozenset({new.uid}))
    sim = Simulator.from_state(sc, start)
    res = sim.run()
    assert new.first_start == 0.0 and res.end_time == 0.0 and new.finish is None
