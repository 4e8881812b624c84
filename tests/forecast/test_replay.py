"""The capturing simulator watches sessions through the simulator's public seam (`observers`)."""

from __future__ import annotations

from typing import Any

from apportion.forecast.replay import CapturingSimulator
from apportion.simulation.engine import Simulator
from apportion.simulation.scenario import parse_scenario
from scenario_text import FLAT_CAPACITY

SCENARIO = """
cluster:
  generate:
  - {count: 1, namePrefix: n, allocatable: {cpu: 4, memory: 16Gi}}
queues:
- {kind: Queue, metadata: {name: q}, spec: {deserved: {cpu: 4, memory: 16Gi}}}
workload:
  jobs:
  - {name: a, queue: q, arrival: 0, duration: 30, tasks: 1, resources: {cpu: 4, memory: 1Gi}}
  - {name: b, queue: q, arrival: 2, duration: 10, tasks: 1, resources: {cpu: 4, memory: 1Gi}}
""" + FLAT_CAPACITY


class Recording:
    """An observer that writes down what it is told."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, float, int]] = []

    def before_session(self, sim: Any) -> None:
        self.seen.append(("before", sim.now, sim.sessions))

    def after_session(self, sim: Any) -> None:
        self.seen.append(("after", sim.now, sim.sessions))


def test_an_observer_is_told_before_and_after_every_session() -> None:
    sim = Simulator(parse_scenario(SCENARIO, source="observer.yaml"))
    rec = Recording()
    sim.observers.append(rec)
    res = sim.run()
    befores = [(t, n) for kind, t, n in rec.seen if kind == "before"]
    afters = [(t, n) for kind, t, n in rec.seen if kind == "after"]
    assert [t for t, _ in befores] == [t for t, _ in afters]
    # each pair brackets one step: the session (if one ran) is counted between them
    assert all(a[1] - b[1] in (0, 1) for b, a in zip(befores, afters))
    assert afters[-1][1] == res.sessions
    # b waits for a's node: a starts at 0, b when a ends at 30
    assert 30.0 in [t for t, _ in afters]


def test_capturing_simulator_overrides_nothing_private() -> None:
    private = {n for n in vars(CapturingSimulator) if n.startswith("_") and not n.startswith("__")}
    assert not private & set(dir(Simulator))
    sim = CapturingSimulator(parse_scenario(SCENARIO, source="capture.yaml"), [5.0])
    sim.run()
    (state,) = sim.states
    assert [j.uid for j in state.jobs if j.pending] == ["sim/b"]
    assert sim.first_start_after("sim/b", 5.0) == 30.0
