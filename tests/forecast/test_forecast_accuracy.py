"""With exact remaining runtimes and no new arrivals, a forecast equals what the simulator then does.

Each scenario runs in the simulator; at an instant the cluster objects its next session sees are
captured (running pods annotated with their expected end, every pod with its duration, as a live
cluster would carry them) and forecast from; the simulator goes on, and every job pending at that
instant must start exactly when the forecast said.
"""

from __future__ import annotations

import pytest

from apportion.forecast.core import forecast
from apportion.forecast.replay import CapturingSimulator
from apportion.simulation.scenario import parse_scenario
from scenario_text import FLAT_CAPACITY, HIER_CAPACITY

PREEMPT = """
scheduler: |
  actions: "enqueue, allocate, preempt, backfill"
  tiers:
  - plugins:
    - name: priority
    - name: gang
    - name: conformance
  - plugins:
    - name: drf
    - name: predicates
    - name: proportion
    - name: nodeorder
priorityClasses: {high: 1000, low: 10}
"""


def nodes(count: int, cpu: int) -> str:
    return f"""
cluster:
  generate:
  - count: {count}
    namePrefix: n
    allocatable: {{cpu: {cpu}, memory: 64Gi}}
"""


def jobs(rows: list[tuple[str, str, int, int, int, int, bool]], extra: str = "") -> str:
    """(name, queue, arrival, duration, tasks, cpu per task, gang) rows."""
    out = "workload:\n  jobs:\n"
    for name, q, arr, dur, tasks, cpu, gang in rows:
        out += (f"  - {{name: {name}, queue: {q}, arrival: {arr}, duration: {dur}, tasks: {tasks}, "
                f"minMember: {tasks if gang else 1}, resources: {{cpu: {cpu}, memory: 1Gi}}{extra}}}\n")
    return out


FLAT_GANGS = nodes(3, 8) + FLAT_CAPACITY + """
queues:
- {kind: Queue, metadata: {name: a}, spec: {deserved: {cpu: 12, memory: 96Gi}}}
- {kind: Queue, metadata: {name: b}, spec: {deserved: {cpu: 12, memory: 96Gi}}}
""" + jobs([
    ("a1", "a", 0, 300, 4, 2, True), ("a2", "a", 5, 120, 3, 4, True), ("a3", "a", 7, 45, 1, 8, False),
    ("b1", "b", 1, 200, 6, 2, True), ("b2", "b", 3, 500, 2, 4, False), ("b3", "b", 9, 60, 8, 2, True),
    ("b4", "b", 12, 90, 2, 6, True), ("a4", "a", 14, 30, 5, 1, False), ("a5", "a", 15, 700, 2, 8, True),
])

HIERARCHY = nodes(4, 8) + HIER_CAPACITY + """
queues:
- {kind: Queue, metadata: {name: eng}, spec: {deserved: {cpu: 20, memory: 128Gi}}}
- {kind: Queue, metadata: {name: ml}, spec: {parent: eng, deserved: {cpu: 12, memory: 64Gi}}}
- {kind: Queue, metadata: {name: web}, spec: {parent: eng, deserved: {cpu: 8, memory: 64Gi}}}
- {kind: Queue, metadata: {name: ops}, spec: {deserved: {cpu: 12, memory: 128Gi}, capability: {cpu: 16}}}
""" + jobs([
    ("m1", "ml", 0, 400, 4, 4, True), ("w1", "web", 0, 250, 3, 2, False), ("o1", "ops", 2, 600, 2, 8, True),
    ("m2", "ml", 4, 150, 2, 6, True), ("w2", "web", 6, 80, 4, 3, True), ("o2", "ops", 8, 100, 3, 4, False),
    ("m3", "ml", 10, 60, 1, 8, False), ("w3", "web", 11, 300, 2, 8, True), ("o3", "ops", 12, 50, 4, 2, True),
])

RESERVATIONS = nodes(1, 8) + HIER_CAPACITY + """
queues:
- kind: Queue
  metadata: {name: res, annotations: {apportion.io/reservable: "true"}}
  spec: {deserved: {cpu: 4, memory: 32Gi}, guarantee: {resource: {cpu: 4, memory: 32Gi}}}
- {kind: Queue, metadata: {name: other}, spec: {deserved: {cpu: 4, memory: 32Gi}}}
plans:
  res: {policy: {type: NoOverCommit}, moveOnExpiry: true}
reservations:
- name: r1
  queue: res
  submitAt: 0
  arrival: 100
  deadline: 300
  requests: [{resources: {cpu: 2, memory: 2Gi}, numContainers: 1, duration: 200}]
workload:
  jobs:
  - {name: d1, queue: res, arrival: 0, duration: 500, tasks: 1, resources: {cpu: 2, memory: 1Gi}}
  - {name: o1, queue: other, arrival: 0, duration: 260, tasks: 2, resources: {cpu: 2, memory: 1Gi}}
  - {name: r, queue: res, reservation: r1, arrival: 100, duration: 350, resources: {cpu: 2, memory: 1Gi}}
  - {name: d2, queue: res, arrival: 101, duration: 80, tasks: 1, resources: {cpu: 2, memory: 1Gi}}
  - {name: o2, queue: other, arrival: 101, duration: 70, tasks: 3, minMember: 3, resources: {cpu: 2, memory: 1Gi}}
  - {name: d3, queue: res, arrival: 101, duration: 90, tasks: 1, resources: {cpu: 2, memory: 1Gi}}
"""

PRIORITIES = nodes(2, 8) + PREEMPT + """
queues:
- {kind: Queue, metadata: {name: q}, spec: {weight: 1}}
""" + jobs([("l1", "q", 0, 400, 4, 2, False), ("l2", "q", 1, 300, 2, 4, True),
                                ("l3", "q", 6, 100, 2, 4, False)], ", priorityClass: low") \
    .replace("workload:\n  jobs:\n", "workload:\n  jobs:\n" + jobs([
        ("h1", "q", 5, 100, 2, 4, True), ("h2", "q", 6, 50, 3, 2, False)], ", priorityClass: high")
        .split("jobs:\n", 1)[1])

CASES = {"flat-gangs": (FLAT_GANGS, 20.0), "hierarchy": (HIERARCHY, 15.0), "reservations": (RESERVATIONS, 101.0),
         "priorities": (PRIORITIES, 7.0)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_forecast_equals_the_simulators_start(case: str) -> None:
    body, instant = CASES[case]
    sim = CapturingSimulator(parse_scenario(body, source=f"{case}.yaml"), [instant])
    sim.run()
    (state,) = sim.states
    fc = forecast(state)
    assert fc.exact and fc.runs == 1
    assert len(fc.jobs) >= 2, "the scenario must leave jobs waiting at the instant"
    later = 0
    for jf in fc.jobs:
        actual = sim.first_start_after(jf.job, state.t0)
        if jf.start_in is None:
            assert actual is None, jf.job
            continue
        assert state.t0 + jf.start_in == actual, jf.job
        later += jf.start_in > 0
    assert later >= 2, "some jobs must start after the first session"
