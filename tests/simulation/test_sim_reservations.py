"""The simulator's reservations are the real planner's: the same agent as `plan replay` decides
them on the same requests, every agent is selectable from a scenario, and GPUs are planned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apportion.errors import InputError
from apportion.reservation.definition import ReservationId
from apportion.reservation.replay import run_case
from apportion.simulation.engine import simulate
from apportion.simulation.scenario import parse_scenario
from scenario_text import HIER_CAPACITY

AGENTS = ["greedy", "greedy-left", "greedy-right", "aligned-left", "aligned-right"]
GIB = 2**30

# (name, submitAt, arrival, deadline, interpreter, [(cpu, memory GiB, containers, duration)])
REQUESTS = [
    ("a", 0, 100, 700, "R_ALL", [(2, 4, 1, 200)]),
    ("b", 0, 0, 900, "R_ORDER", [(1, 2, 2, 150), (3, 8, 1, 100)]),
    ("c", 0, 200, 500, "R_ALL", [(4, 16, 1, 300)]),
    ("d", 0, 50, 1000, "R_ANY", [(8, 8, 1, 100), (2, 2, 1, 100)]),
    ("e", 0, 300, 800, "R_ALL", [(1, 1, 3, 120)]),
]


def _scenario(agent: str, gpu_node: int = 0, requests=REQUESTS, gpus: dict[str, int] | None = None) -> str:
    gpu = f", nvidia.com/gpu: {gpu_node}" if gpu_node else ""
    lines = [f"""
cluster:
  generate:
  - count: 1
    namePrefix: n
    allocatable: {{cpu: 8, memory: 64Gi{gpu}}}
""", HIER_CAPACITY, f"""
queues:
- kind: Queue
  metadata: {{name: res, annotations: {{apportion.io/reservable: "true"}}}}
  spec: {{deserved: {{cpu: 4, memory: 32Gi{gpu}}}, guarantee: {{resource: {{cpu: 4, memory: 32Gi{gpu}}}}}}}
plans:
  res: {{agent: {agent}, policy: {{type: CapacityOverTime, instantaneousMaxCapacity: 1.0, averageCapacity: 0.9,
         window: 3600}}}}
reservations:
"""]
    for name, submit, arrival, deadline, interp, stages in requests:
        reqs = ", ".join(
            f"{{resources: {{cpu: {c}, memory: {m}Gi" + (f", nvidia.com/gpu: {gpus[name]}" if gpus and gpus.get(name)
                                                      else "") + f"}}, numContainers: {k}, duration: {d}}}"
            for c, m, k, d in stages)
        lines.append(f"""- {{name: {name}, queue: res, user: alice, submitAt: {submit}, arrival: {arrival},
   deadline: {deadline}, interpreter: {interp}, requests: [{reqs}]}}
""")
    lines.append("workload: {jobs: []}\n")
    return "".join(lines)


def _replay_case(agent: str) -> dict:
    """The same requests as a `plan replay` case, in the units the simulator's plan holds
    (memory in bytes as the replay's memory, millicores as its vCores)."""
    steps = []
    for i, (name, _submit, arrival, deadline, interp, stages) in enumerate(REQUESTS, 1):
        steps.append({"op": "submit", "user": "alice", "body": {
            "queue": "res", "reservation-id": f"reservation_0_{i:04d}",
            "reservation-definition": {
                "arrival": arrival * 1000, "deadline": deadline * 1000, "reservation-name": name,
                "reservation-requests": {
                    "reservation-request-interpreter": {"R_ANY": 0, "R_ALL": 1, "R_ORDER": 2}[interp],
                    "reservation-request": [
                        {"capability": {"memory": m * GIB, "vCores": c * 1000}, "num-containers": k,
                         "min-concurrency": k, "duration": d * 1000}
                        for c, m, k, d in stages]}}}})
    big = 2**62
    return {"plan": {
        "queue": "res", "capacity": {"memory": 32 * GIB, "vCores": 4000}, "step": 1000,
        "minimumAllocation": {"memory": 0, "vCores": 0}, "maximumAllocation": {"memory": big, "vCores": big},
        "resourceCalculator": "dominant", "agent": agent,
        "policy": {"type": "CapacityOverTime", "instantaneousMaxCapacity": 1.0, "averageCapacity": 0.9,
                   "window": 3_600_000},
        "replanner": {"type": "SimpleCapacityReplanner", "enforcementWindow": 3_600_000}, "now": 0}, "steps": steps}


def _natural(pieces) -> list:
    """A plan's pieces (ms, (memory bytes, millicores)) as the simulator reports them."""
    return [[a / 1000, b / 1000, {"cpu": v[1] / 1000, "memory": v[0]}] for a, b, v in pieces]


@pytest.mark.parametrize("agent", AGENTS)
def test_the_simulator_books_what_plan_replay_books(agent: str, tmp_path: Path) -> None:
    """Each agent is selectable from the scenario, and the simulator's reservations (accepted or
    not, and where) are exactly those `plan replay` gets from the same agent on the same requests."""
    res = simulate(parse_scenario(_scenario(agent), source="test.yaml"))
    case = tmp_path / "case.json"
    case.write_text(json.dumps(_replay_case(agent)))
    replay, observations = run_case(str(case))
    log = res.reservation_log
    assert [e["agent"] for e in log] == [agent] * len(REQUESTS)
    assert [e["accepted"] for e in log] == [o["status"] == 202 for o in observations]
    assert any(e["accepted"] for e in log) and not all(e["accepted"] for e in log)
    for e, o in zip(log, observations):
        if o["status"] != 202:
            assert e["message"] == o["body"]["RemoteException"]["message"]
            continue
        placed = replay.plan.get(ReservationId.parse(e["id"]))
        assert placed is not None
        assert e["pieces"] == _natural(placed.rle.nonzero_pieces())
        assert (e["start"], e["end"]) == (placed.start / 1000, placed.end / 1000)


def test_the_agents_place_differently() -> None:
    """Left agents take the earliest room in a window, right ones the latest: the scenario's choice
    is the one that plans."""
    one = [("a", 0, 100, 700, "R_ALL", [(2, 4, 1, 200)])]
    starts = {}
    for agent in AGENTS:
        res = simulate(parse_scenario(_scenario(agent, requests=one), source="test.yaml"))
        [e] = res.reservation_log
        starts[agent] = (e["pieces"][0][0], e["pieces"][-1][1])
    assert starts["greedy-left"] == starts["aligned-left"] == (100.0, 300.0)
    assert starts["greedy-right"] == starts["aligned-right"] == starts["greedy"] == (500.0, 700.0)


def test_a_gpu_shortage_alone_refuses_a_booking() -> None:
    """The plan holds GPUs: with the queue's 2 GPUs booked, a booking of 1 GPU that memory and cpu
    would allow is refused, and the same booking without a GPU is accepted."""
    requests = [
        ("all-gpus", 0, 0, 1000, "R_ALL", [(1, 1, 1, 1000)]),
        ("one-more", 0, 0, 1000, "R_ALL", [(1, 1, 1, 100)]),
        ("no-gpu", 0, 0, 1000, "R_ALL", [(1, 1, 1, 100)]),
    ]
    sc = parse_scenario(_scenario("aligned-left", gpu_node=2, requests=requests,
                                  gpus={"all-gpus": 2, "one-more": 1}), source="test.yaml")
    res = simulate(sc)
    by = {e["name"]: e for e in res.reservation_log}
    assert by["all-gpus"]["accepted"] and by["all-gpus"]["pieces"][0][2]["nvidia.com/gpu"] == 2
    assert not by["one-more"]["accepted"]
    assert by["no-gpu"]["accepted"]
    assert res.plans["res"].dims == ("memory", "cpu", "nvidia.com/gpu")


def test_a_booking_of_a_resource_the_plan_lacks_is_refused_naming_it() -> None:
    requests = [("gpu", 0, 0, 1000, "R_ALL", [(1, 1, 1, 100)])]
    # the queue promises no GPU: the plan has a GPU dimension (the reservation names it) of capacity 0
    res = simulate(parse_scenario(_scenario("greedy", requests=requests, gpus={"gpu": 1}), source="test.yaml"))
    [e] = res.reservation_log
    assert not e["accepted"] and e["message"]


@pytest.mark.parametrize("change,where", [
    (("agent: greedy", "agent: bogus"), "plans.res.agent"),
    (("agent: greedy", "agent: greedy, resourceCalculator: x"), "plans.res.resourceCalculator"),
    (("numContainers: 2,", "numContainers: 2, minConcurrency: 3,"), "reservations[1].requests[0].minConcurrency"),
])
def test_bad_plan_settings_name_the_field(change: tuple[str, str], where: str) -> None:
    with pytest.raises(InputError) as ei:
        parse_scenario(_scenario("greedy").replace(*change), source="t.yaml")
    assert f"t.yaml: {where}" in str(ei.value)
