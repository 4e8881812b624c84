"""The simulator records each queue's deserved from the session's typed queue status, every session.

Issue 15 item 3: the deserved used to be read from the display strings and, to save their cost, only
every 60 simulated seconds, so a deserved that moved with demand showed up to a minute late.
"""

from __future__ import annotations

from apportion.simulation.engine import simulate
from apportion.simulation.scenario import parse_scenario

# Volcano's default conf (proportion): q1 alone asks for 4 cpu and deserves them; when q2's job
# arrives at 10 the two split the node, so q1's deserved drops to 2 cpu in the session at 10.
SCENARIO = """
cluster:
  generate:
  - {count: 1, namePrefix: n, allocatable: {cpu: 4, memory: 64Gi}}
queues:
- {kind: Queue, metadata: {name: q1}, spec: {weight: 1}}
- {kind: Queue, metadata: {name: q2}, spec: {weight: 1}}
workload:
  jobs:
  - {name: hog, queue: q1, arrival: 0, duration: 1000, tasks: 4, minMember: 1, resources: {cpu: 1, memory: 1Gi}}
  - {name: late, queue: q2, arrival: 10, duration: 50, tasks: 2, minMember: 2, resources: {cpu: 1, memory: 1Gi}}
run: {horizon: 100}
"""


def test_deserved_is_recorded_at_the_session_it_changes() -> None:
    res = simulate(parse_scenario(SCENARIO, source="test.yaml"))
    q1 = res.recorder.queues["q1"]
    # 4 cpu from the first session, 2 cpu from the session at 10. With the 60 s sampling the drop was
    # never recorded here: nothing changes after 10, so no session came after the next sampling time.
    assert list(zip(q1.times, q1.deserved["cpu"])) == [(0.0, 4.0), (10.0, 2.0)]
