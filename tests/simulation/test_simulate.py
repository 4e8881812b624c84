"""The simulator against hand-computable scenarios, the plan follower, routing, determinism."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from apportion.errors import InputError
from apportion.resources import Resource
from apportion.simulation.engine import simulate
from apportion.simulation.metrics import summarize
from apportion.simulation.reservations import LocalPlan, follow
from apportion.simulation.scenario import (
    PlanSpec,
    ReservationSpec,
    StageSpec,
    default_scenario_path,
    load_scenario,
    parse_scenario,
)

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"

FLAT_CAPACITY = """
scheduler: |
  actions: "enqueue, allocate, reclaim, backfill"
  tiers:
  - plugins:
    - name: priority
    - name: gang
  - plugins:
    - name: drf
    - name: predicates
    - name: capacity
"""

HIER_CAPACITY = """
scheduler: |
  actions: "enqueue, allocate, reclaim, backfill"
  tiers:
  - plugins:
    - name: priority
    - name: gang
  - plugins:
    - name: predicates
    - name: capacity
      enableHierarchy: true
"""


def scenario(body: str):
    return parse_scenario(body, source="test.yaml")


def node(cpu: int = 4, count: int = 1) -> str:
    return f"""
cluster:
  generate:
  - count: {count}
    namePrefix: n
    allocatable: {{cpu: {cpu}, memory: 64Gi}}
"""


def test_one_queue_one_job_exact_times() -> None:
    sc = scenario(node() + """
queues:
- {kind: Queue, metadata: {name: q}, spec: {weight: 1}}
workload:
  jobs:
  - {name: a, queue: q, arrival: 0, duration: 100, resources: {cpu: 4, memory: 1Gi}}
  - {name: b, queue: q, arrival: 10.5, duration: 50, resources: {cpu: 4, memory: 1Gi}}
""")
    res = simulate(sc)
    jobs = {j.spec.name: j for j in res.jobs}
    assert (jobs["a"].first_start, jobs["a"].finish) == (0.0, 100.0)
    # b arrives between sessions; it waits for a's node and starts at the session at 100
    assert (jobs["b"].first_start, jobs["b"].finish) == (100.0, 150.0)
    assert jobs["b"].first_start - jobs["b"].spec.arrival == 89.5


def test_reclaim_exact_eviction_times() -> None:
    sc = scenario(node(cpu=4) + FLAT_CAPACITY + """
queues:
- {kind: Queue, metadata: {name: q1}, spec: {deserved: {cpu: 2, memory: 32Gi}}}
- {kind: Queue, metadata: {name: q2}, spec: {deserved: {cpu: 2, memory: 32Gi}}}
workload:
  jobs:
  - {name: hog, queue: q1, arrival: 0, duration: 1000, tasks: 4, minMember: 1, resources: {cpu: 1, memory: 1Gi}}
  - {name: late, queue: q2, arrival: 100, duration: 50, tasks: 2, minMember: 2, resources: {cpu: 1, memory: 1Gi}}
""")
    res = simulate(sc)
    ev = [(t, job, reason) for t, job, _task, reason in res.recorder.evictions]
    assert ev == [(100.0, "sim/hog", "reclaim"), (100.0, "sim/hog", "reclaim")]
    jobs = {j.spec.name: j for j in res.jobs}
    # victims released at once (grace 0); the pipelined reclaimer is placed by the next session
    assert jobs["late"].first_start == 101.0
    assert jobs["late"].finish == 151.0
    assert jobs["hog"].evictions == 2
    s = summarize(res)
    assert s["evictions"]["reclaim"] == 2


RESERVABLE = node(cpu=8) + HIER_CAPACITY + """
queues:
- kind: Queue
  metadata: {name: res, annotations: {apportion.io/reservable: "true"}}
  spec: {deserved: {cpu: 4, memory: 32Gi}, guarantee: {resource: {cpu: 4, memory: 32Gi}}}
- {kind: Queue, metadata: {name: other}, spec: {deserved: {cpu: 4, memory: 32Gi}}}
plans:
  res: {policy: {type: NoOverCommit}, moveOnExpiry: MOVE}
reservations:
- name: r1
  queue: res
  submitAt: 0
  arrival: 100
  deadline: 400
  requests: [{resources: {cpu: 2, memory: 2Gi}, numContainers: 1, duration: 200}]
"""


def reservable(jobs: str, move: bool = True) -> str:
    return RESERVABLE.replace("MOVE", "true" if move else "false") + "workload:\n  jobs:\n" + jobs


def test_reservation_job_starts_at_window_start() -> None:
    sc = scenario(reservable("""
  - {name: rj, queue: res, reservation: r1, arrival: 100, duration: 150, resources: {cpu: 2, memory: 1Gi}}
"""))
    res = simulate(sc)
    job = res.jobs[0]
    assert job.first_start == 100.0 and job.finish == 250.0
    assert job.queue == "reservation_0_0001"
    out = summarize(res)["reservations"][0]
    assert out["accepted"] and out["start"] == 100.0 and out["end"] == 300.0 and out["honoured"]


def test_routing_rejects_inactive_reservation_and_defaults() -> None:
    sc = scenario(reservable("""
  - {name: early, queue: res, reservation: r1, arrival: 50, duration: 10, resources: {cpu: 1, memory: 1Gi}}
  - {name: plain, queue: res, arrival: 50, duration: 10, resources: {cpu: 1, memory: 1Gi}}
"""))
    res = simulate(sc)
    jobs = {j.spec.name: j for j in res.jobs}
    assert jobs["early"].state == "rejected"
    assert "not currently active: reservation_0_0001" in jobs["early"].message
    assert jobs["plain"].queue == "res-default" and jobs["plain"].state == "done"
    assert any(e[2] == "Rejected" for e in res.recorder.events)


@pytest.mark.parametrize("move", [True, False])
def test_expiry_moves_or_kills(move: bool) -> None:
    sc = scenario(reservable("""
  - {name: long, queue: res, reservation: r1, arrival: 100, duration: 500, resources: {cpu: 2, memory: 1Gi}}
""", move=move))
    res = simulate(sc)
    job = res.jobs[0]
    if move:
        assert job.state == "done" and job.queue == "res-default" and job.finish == 600.0
        assert any(e[2] == "MovedOnExpiry" and e[0] == 300.0 for e in res.recorder.events)
    else:
        assert job.state == "killed" and job.finish == 300.0
        assert job.lost_cpu_seconds == pytest.approx(2 * 200.0)


def test_plan_follower_queue_changes() -> None:
    sc = scenario(reservable("  []\n").replace("jobs:\n  []", "jobs: []"))
    q = sc.queues["res"]
    plan = LocalPlan("res", PlanSpec(policy="None"), Resource.from_natural({"cpu": 4, "memory": 32 * 2**30}), 1.0)
    total = Resource.from_natural({"cpu": 8, "memory": 64 * 2**30})
    stage = StageSpec(Resource.from_natural({"cpu": 1, "memory": 2**30}), 3, 100)
    r = plan.submit(ReservationSpec("a", "res", "u", 0, 10, 500, "R_ALL", False, [stage]), 0.0)
    assert r.accepted
    before = follow(plan, q, 5.0, total)
    assert [c.name for c in before.children] == ["res-default"]
    assert before.children[0].deserved.cpu == 4000.0
    during = follow(plan, q, 50.0, total)
    assert [c.name for c in during.children] == ["reservation_0_0001", "res-default"]
    rq, dq = during.children
    assert rq.deserved.cpu == rq.guarantee.cpu == 3000.0 and rq.parent == "res"
    assert dq.deserved.cpu == 1000.0
    after = follow(plan, q, 110.0, total)
    assert [c.name for c in after.children] == ["res-default"]
    # a capacity drop below what is reserved runs the replanner
    small = Resource.from_natural({"cpu": 2, "memory": 64 * 2**30})
    dropped = follow(plan, q, 50.0, small)
    assert dropped.removed_by_replanner == ["reservation_0_0001"]


def test_sharing_policy_rejects() -> None:
    plan = LocalPlan("res", PlanSpec(policy="CapacityOverTime", instantaneous=1.0, average=0.25, window=1000),
                     Resource.from_natural({"cpu": 4, "memory": 2**34}), 1.0)
    st = StageSpec(Resource.from_natural({"cpu": 4, "memory": 2**30}), 1, 500)
    r = plan.submit(ReservationSpec("big", "res", "u", 0, 0, 1000, "R_ALL", False, [st]), 0.0)
    assert not r.accepted and "Integral (avg over time)" in r.message


def test_idle_periods_are_skipped() -> None:
    sc = scenario(node() + """
queues:
- {kind: Queue, metadata: {name: q}, spec: {weight: 1}}
workload:
  jobs:
  - {name: a, queue: q, arrival: 0, duration: 2592000, resources: {cpu: 1, memory: 1Gi}}
  - {name: b, queue: q, arrival: 1296000, duration: 10, resources: {cpu: 1, memory: 1Gi}}
""")
    t0 = time.perf_counter()
    res = simulate(sc)
    assert res.end_time == 2592000.0
    assert res.sessions < 12  # a month of 1 s periods, a handful of sessions
    assert time.perf_counter() - t0 < 5


def test_determinism_same_seed_same_summary(tmp_path: Path) -> None:
    a = summarize(simulate(load_scenario(default_scenario_path())))
    b = summarize(simulate(load_scenario(default_scenario_path())))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    c = summarize(simulate(load_scenario(default_scenario_path()), seed=8))
    assert json.dumps(a, sort_keys=True) != json.dumps(c, sort_keys=True)


def test_default_scenario_reservations() -> None:
    s = summarize(simulate(load_scenario(default_scenario_path())))
    by = {r["name"]: r for r in s["reservations"]}
    assert by["nightly-train"]["accepted"] and by["nightly-train"]["honoured"]
    assert not by["big-batch"]["accepted"] and "PlanningQuotaException" in by["big-batch"]["message"]


@pytest.mark.parametrize("body,where", [
    ("cluster: {}\nqueues: []\nworkload: {jobs: [{name: a, queue: q, arrival: 0, duration: -1, "
     "resources: {cpu: 1}}]}", "workload.jobs[0].duration"),
    ("cluster: {generate: [{count: 1, allocatable: {cpu: 1}}]}\nqueues: []\nrun: {period: 0}", "run.period"),
    ("cluster: {generate: [{count: 1, allocatable: {cpu: 1}}]}\nqueues: []\nbogus: 1", "(top level)"),
    ("cluster: {generate: [{count: 1, allocatable: {cpu: 1}}]}\nqueues: []\nworkload: {jobs: [{name: a, "
     "queue: nope, arrival: 0, duration: 1, resources: {cpu: 1}}]}", "workload.jobs[0].queue"),
])
def test_errors_name_the_field(body: str, where: str) -> None:
    with pytest.raises(InputError) as ei:
        parse_scenario(body, source="s.yaml")
    assert f"s.yaml: {where}" in str(ei.value)


def test_cli_simulate_writes_report(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from apportion.cli import main

    out = tmp_path / "rep"
    r = CliRunner().invoke(main, ["simulate", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "report written to" in r.output
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 4
    for f in ("summary.json", "queues.csv", "cluster.csv", "jobs.csv", "events.csv"):
        assert (out / f).exists()


def test_cli_bad_scenario_exit_2(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from apportion.cli import main

    p = tmp_path / "bad.yaml"
    p.write_text("cluster: {generate: [{count: 0, allocatable: {cpu: 1}}]}\nqueues: []\n")
    r = CliRunner().invoke(main, ["simulate", str(p)])
    assert r.exit_code == 2
    assert "cluster.generate[0].count" in r.output
    assert "Traceback" not in r.output


def test_node_failure_restarts_and_counts_lost_work() -> None:
    sc = scenario(node(cpu=4, count=2) + """
  events:
  - {at: 50, type: fail, nodes: [n-00]}
queues:
- {kind: Queue, metadata: {name: q}, spec: {weight: 1}}
workload:
  jobs:
  - {name: a, queue: q, arrival: 0, duration: 100, resources: {cpu: 4, memory: 1Gi}}
""".replace("cluster:\n  generate", "cluster:\n  generate"))
    res = simulate(sc)
    job = res.jobs[0]
    assert job.evictions == 1 and job.lost_cpu_seconds == pytest.approx(200.0)
    assert job.finish == 150.0


@pytest.mark.slow
def test_philly_first_30_days_replay() -> None:
    if not (TRACES / "philly-gavel" / "jobs_seed0.csv").exists():
        pytest.skip(f"Philly trace not found under {TRACES}")
    body = f"""
cluster: {{}}
queues: []
scheduler: |
  actions: "enqueue, allocate, reclaim, backfill"
  tiers:
  - plugins:
    - name: priority
    - name: gang
  - plugins:
    - name: drf
    - name: predicates
    - name: capacity
workload:
  traces:
  - {{type: philly, path: {TRACES / 'philly-gavel'}, days: 30, clusterScale: 0.35}}
run: {{period: 60, seed: 0, horizon: 2592000, drain: false}}
"""
    sc = parse_scenario(body, source="philly.yaml")
    t0 = time.perf_counter()
    res = simulate(sc)
    wall = time.perf_counter() - t0
    s = summarize(res)
    print(f"philly 30 days: {s['jobs']}, sessions {res.sessions}, events {res.events}, wall {wall:.1f}s, "
          f"{res.events / wall:.0f} events/s")
    assert s["jobs"]["completed"] > 1000
