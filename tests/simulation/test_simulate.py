"""The simulator against hand-computable scenarios, the plan follower, routing, determinism."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from apportion.cluster.model import TaskStatus
from apportion.errors import InputError
from apportion.reservation.system import ReservationSystem
from apportion.resources import Resource
from apportion.simulation.engine import simulate
from apportion.simulation.metrics import summarize
from apportion.simulation.reservations import SimPlan, plan_dims
from apportion.simulation.scenario import (
    PlanSpec,
    ReservationSpec,
    StageSpec,
    default_scenario_path,
    load_scenario,
    parse_scenario,
)
from scenario_text import FLAT_CAPACITY, HIER_CAPACITY, TRACES


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
    # a: binds in the session at 0 and holds the only node (4 cpu) until 0 + 100 = 100
    assert (jobs["a"].first_start, jobs["a"].finish) == (0.0, 100.0)
    # b arrives at 10.5, between sessions (period 1); the node is busy until a finishes at 100, and
    # the completion is applied before the session at 100: start 100, finish 100 + 50 = 150,
    # wait 100 - 10.5 = 89.5, JCT 150 - 10.5 = 139.5
    assert (jobs["b"].first_start, jobs["b"].finish) == (100.0, 150.0)
    s = summarize(res)["queues"]["q"]
    assert s["wait"]["max"] == 89.5 and s["wait"]["mean"] == pytest.approx((0 + 89.5) / 2)
    assert s["jct"]["mean"] == pytest.approx((100 + 139.5) / 2)
    assert res.events == 4  # two arrivals, two completions


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
    # hog takes all 4 cpu at 0 (q1 borrows q2's 2); late's gang of 2 arrives at 100 and q2 is under
    # its deserved, so reclaim evicts 2 of hog's tasks in the session at 100
    ev = [(t, job, reason) for t, job, _task, reason in res.recorder.evictions]
    assert ev == [(100.0, "sim/hog", "reclaim"), (100.0, "sim/hog", "reclaim")]
    jobs = {j.spec.name: j for j in res.jobs}
    # victims released at once (grace 0); the pipelined reclaimer is bound by the next session, 101,
    # and runs 50 s: finish 151
    assert jobs["late"].first_start == 101.0
    assert jobs["late"].finish == 151.0
    # hog is not a gang (minMember 1): its 2 other tasks go on and finish at 1000; the 2 victims lost
    # 100 s × 1 cpu each (200 cpu-s), restart from scratch when late frees its 2 cpu at 151 and
    # finish at 151 + 1000 = 1151
    hog = jobs["hog"]
    assert hog.evictions == 2 and hog.lost_cpu_seconds == 200.0
    assert sorted((t.start, t.attempt) for t in hog.tasks) == [(0.0, 0), (0.0, 0), (151.0, 1), (151.0, 1)]
    assert (hog.first_start, hog.last_start, hog.finish) == (0.0, 151.0, 1151.0)
    s = summarize(res)
    assert s["evictions"]["reclaim"] == 2 and s["evictions"]["lostCpuHours"] == round(200 / 3600, 6)


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
    # r1 asks 2 cpu for 200 s in [100, 400]; aligned-left (the default agent) under NoOverCommit
    # places it on the one 200 s window that tiles [100, 400) from the left, [100, 300); the
    # reservation is YARN's [arrival, deadline) = [100, 400). The job arrives at 100, is routed to
    # the reservation's queue, and starts at once: start 100, finish 100 + 150 = 250, inside it
    assert job.first_start == 100.0 and job.finish == 250.0
    assert job.queue == "reservation_0_0001" and job.reservation_id == "reservation_0_0001"
    out = summarize(res)["reservations"][0]
    assert out["accepted"] and out["start"] == 100.0 and out["end"] == 400.0 and out["honoured"]
    assert res.reservation_log[0]["pieces"] == [[100.0, 300.0, {"cpu": 2, "memory": 2**31}]]
    # the reservation's queue appears at 100 deserving exactly its 2 cpu, and still does when the
    # workload is over at 250 (the run stops there: only the window's end is left)
    rq = res.recorder.queues["reservation_0_0001"]
    assert list(zip(rq.times, rq.deserved["cpu"], rq.allocated["cpu"])) == [
        (0.0, 0.0, 0.0), (100.0, 2.0, 2.0), (250.0, 2.0, 0.0)]
    assert res.end_time == 250.0


def test_routing_by_reservation_id(monkeypatch: pytest.MonkeyPatch) -> None:
    body = reservable("""
  - {name: early, queue: res, reservation: r1, arrival: 50, duration: 10, resources: {cpu: 1, memory: 1Gi}}
  - {name: plain, queue: res, arrival: 50, duration: 10, resources: {cpu: 1, memory: 1Gi}}
  - {name: inside, queue: res, reservation: r1, arrival: 120, duration: 10, resources: {cpu: 1, memory: 1Gi}}
  - {name: refused, queue: res, reservation: r2, arrival: 120, duration: 10, resources: {cpu: 1, memory: 1Gi}}
""").replace("workload:", """- name: r2
  queue: res
  submitAt: 0
  arrival: 100
  deadline: 400
  requests: [{resources: {cpu: 8, memory: 2Gi}, numContainers: 1, duration: 10}]
workload:""")
    import apportion.simulation.engine as sim_engine

    seen: dict[str, tuple[str, dict[str, str]]] = {}
    real_open = sim_engine.open_session

    def spy(snap, conf, **kw):  # type: ignore[no-untyped-def]
        for uid, j in snap.jobs.items():
            seen.setdefault(uid, (j.queue, dict(j.annotations)))
        return real_open(snap, conf, **kw)

    monkeypatch.setattr(sim_engine, "open_session", spy)
    res = simulate(scenario(body))
    jobs = {j.spec.name: j for j in res.jobs}
    # r1 is active over [100, 300): a job naming it at 50 is refused, at 120 routed to its queue with
    # the podgroup annotation the engine sees
    assert jobs["early"].state == "rejected" and "sim/early" not in seen
    assert jobs["early"].message == ("Application sim/early submitted to a reservation which is not currently "
                                     "active: reservation_0_0001")
    assert seen["sim/inside"] == ("reservation_0_0001", {"apportion.io/reservation-id": "reservation_0_0001"})
    assert (jobs["inside"].first_start, jobs["inside"].state) == (120.0, "done")
    # no reservation: the reservable queue's default child, no annotation
    assert seen["sim/plain"] == ("res-default", {})
    assert (jobs["plain"].first_start, jobs["plain"].finish) == (50.0, 60.0)
    # r2 (8 cpu on a 4-cpu plan) was not accepted, so its job is refused on arrival
    assert jobs["refused"].state == "rejected" and "sim/refused" not in seen
    assert jobs["refused"].message == "Application sim/refused names reservation 'r2', which was not accepted"
    assert [e[1] for e in res.recorder.events if e[2] == "Rejected"] == ["sim/early", "sim/refused"]


@pytest.mark.parametrize("move", [True, False])
def test_expiry_moves_or_kills(move: bool) -> None:
    sc = scenario(reservable("""
  - {name: long, queue: res, reservation: r1, arrival: 100, duration: 500, resources: {cpu: 2, memory: 1Gi}}
""", move=move))
    res = simulate(sc)
    job = res.jobs[0]
    # the job runs from 100; r1's allocation ends at 300, its queue (YARN's [arrival, deadline))
    # at 400, while the job still has 200 s to go
    if move:
        # moved to res-default at 400 without a restart: it finishes at 100 + 500 = 600
        assert job.state == "done" and job.queue == "res-default" and job.finish == 600.0
        assert (job.first_start, job.last_start, job.evictions, job.lost_cpu_seconds) == (100.0, 100.0, 0, 0.0)
        assert [(e[0], e[1]) for e in res.recorder.events if e[2] == "MovedOnExpiry"] == [(400.0, "sim/long")]
    else:
        # killed at 400: 300 s × 2 cpu of work lost
        assert job.state == "killed" and job.finish == 400.0
        assert job.lost_cpu_seconds == pytest.approx(2 * 300.0)


def test_plan_follower_queue_changes() -> None:
    sc = scenario(reservable("  []\n").replace("jobs:\n  []", "jobs: []"))
    q = sc.queues["res"]
    plan = SimPlan(ReservationSystem(0), "res", PlanSpec(policy="None"), 1.0, plan_dims(q.guarantee))
    plan.set_capacity(Resource.from_natural({"cpu": 4, "memory": 32 * 2**30}))
    total = Resource.from_natural({"cpu": 8, "memory": 64 * 2**30})
    stage = StageSpec(Resource.from_natural({"cpu": 1, "memory": 2**30}), 3, 100)
    r = plan.submit(ReservationSpec("a", "res", "u", 0, 10, 500, "R_ALL", False, [stage]), 0.0)
    assert r.accepted and r.reservation is not None
    # plan capacity = res's guarantee, 4 cpu; aligned-left puts the gang of 3 × 1 cpu on the first
    # (earliest-ending) of the equally cheap 100 s windows, [10, 110); the reservation is YARN's
    # [arrival, deadline) = [10, 500)
    assert [(a, b, x.cpu) for a, b, x in r.reservation.pieces] == [(10.0, 110.0, 3000.0)]
    assert (r.reservation.start, r.reservation.end) == (10.0, 500.0)
    before = plan.follow(q, 5.0, total)
    assert [c.name for c in before.children] == ["res-default"]
    assert before.children[0].deserved.cpu == 4000.0 and before.children[0].guarantee.cpu == 4000.0
    during = plan.follow(q, 50.0, total)
    assert [c.name for c in during.children] == ["reservation_0_0001", "res-default"]
    rq, dq = during.children
    assert rq.deserved.cpu == rq.guarantee.cpu == 3000.0 and rq.parent == "res"
    # over-use allowed (the plan's default): the reservation may grow to the parent's capability
    assert rq.capability.equal(q.capability) and rq.annotations == {"apportion.io/reservation": "a"}
    # the default child keeps the rest: 4 - 3 = 1 cpu deserved and guaranteed
    assert dq.deserved.cpu == 1000.0 and dq.guarantee.cpu == 1000.0 and dq.parent == "res"
    # past its allocation the reservation's queue stays, empty, until the end of its window
    empty = plan.follow(q, 110.0, total)
    assert [c.name for c in empty.children] == ["reservation_0_0001", "res-default"]
    assert empty.children[0].deserved.is_empty() and empty.children[1].deserved.cpu == 4000.0
    after = plan.follow(q, 500.0, total)
    assert [c.name for c in after.children] == ["res-default"]
    # a capacity drop below what is reserved runs the replanner
    again = plan.submit(ReservationSpec("b", "res", "u", 0, 600, 800, "R_ALL", False, [stage]), 500.0)
    assert again.accepted
    small = Resource.from_natural({"cpu": 2, "memory": 64 * 2**30})
    dropped = plan.follow(q, 650.0, small)
    assert dropped.removed_by_replanner == ["reservation_0_0002"]
    assert [c.name for c in dropped.children] == ["res-default"]


def test_sharing_policy_rejects() -> None:
    spec = PlanSpec(policy="CapacityOverTime", instantaneous=1.0, average=0.25, window=1000)
    plan = SimPlan(ReservationSystem(0), "res", spec, 1.0, plan_dims())
    plan.set_capacity(Resource.from_natural({"cpu": 4, "memory": 2**34}))
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
    # a month of 1 s periods, 7 sessions: 0 (binds a), 1 (a's podgroup turns Running), 2 (nothing
    # changes: idle until the next event), the same three at 1296000 for b, 1296010 (b finished);
    # none at 2592000, a's completion leaves nothing to schedule
    assert res.sessions == 7 and res.events == 4
    jobs = {j.spec.name: j for j in res.jobs}
    assert (jobs["b"].first_start, jobs["b"].finish) == (1296000.0, 1296010.0)
    assert time.perf_counter() - t0 < 5


def test_default_scenario_is_deterministic_and_its_reservations_hold() -> None:
    # one test, so the first run serves both: the default scenario is the suite's most expensive run
    # summary.json is this serialisation (report.write_outputs); two runs must give the same bytes
    first = summarize(simulate(load_scenario(default_scenario_path())))
    by = {r["name"]: r for r in first["reservations"]}
    assert by["nightly-train"]["accepted"] and by["nightly-train"]["honoured"]
    assert not by["big-batch"]["accepted"] and "PlanningQuotaException" in by["big-batch"]["message"]
    text = json.dumps(first, indent=1, sort_keys=True)
    again = summarize(simulate(load_scenario(default_scenario_path())))
    assert json.dumps(again, indent=1, sort_keys=True) == text
    other = summarize(simulate(load_scenario(default_scenario_path()), seed=8))
    assert json.dumps(other, indent=1, sort_keys=True) != text


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
    summary = json.loads((out / "summary.json").read_text())
    # drawn by the dashboard's chart code: line charts (each with its table), the waits, the Gantt chart
    # with a lane per reservation; no pictures, nothing fetched
    assert html.count('<div class="chart-plot" data-chart="line"') >= 4
    assert html.count('<details class="chart-table"') == html.count('<figure class="chart"')
    assert '<svg class="boxes"' in html
    gantt = html[html.index('<svg class="gantt" id="plan"'):]
    lanes = re.findall(r'<g data-reservation="([^"]+)">', gantt[:gantt.index("</svg>")])
    assert lanes == [r["id"] for r in summary["reservations"]] and lanes
    assert "data:image/png" not in html and "<script src=" not in html
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
    # the example users run (`apportion simulate docs/examples/philly-30d.yaml`)
    sc = load_scenario(Path(__file__).resolve().parents[2] / "docs" / "examples" / "philly-30d.yaml")
    t0 = time.perf_counter()
    res = simulate(sc)
    wall = time.perf_counter() - t0
    s = summarize(res)
    print(f"philly 30 days: {s['jobs']}, sessions {res.sessions}, events {res.events}, wall {wall:.1f}s, "
          f"{res.events / wall:.0f} events/s")
    assert 29 * 86400 < res.end_time <= 30 * 86400  # the horizon, without draining
    assert s["jobs"]["total"] == len(sc.jobs) and s["jobs"]["completed"] > 4000
    # 11 VCs and misc, each with work
    assert len(s["queues"]) == 12 and all(q["jobs"] > 0 for q in s["queues"].values())


def test_cli_compare_reports_both_runs(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from apportion.cli import main

    reclaim = node(cpu=4) + FLAT_CAPACITY + """
queues:
- {kind: Queue, metadata: {name: q1}, spec: {deserved: {cpu: 2, memory: 32Gi}}}
- {kind: Queue, metadata: {name: q2}, spec: {deserved: {cpu: 2, memory: 32Gi}}}
workload:
  jobs:
  - {name: hog, queue: q1, arrival: 0, duration: 1000, tasks: 4, minMember: 1, resources: {cpu: 1, memory: 1Gi}}
  - {name: late, queue: q2, arrival: 100, duration: 50, tasks: 2, minMember: 2, resources: {cpu: 1, memory: 1Gi}}
"""
    a = tmp_path / "with-reclaim.yaml"
    a.write_text(reclaim)
    conf = tmp_path / "no-reclaim.conf"
    conf.write_text('actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n'
                    "- plugins:\n  - name: drf\n  - name: predicates\n  - name: capacity\n")
    out = tmp_path / "ab"
    r = CliRunner().invoke(main, ["simulate", str(a), "--compare", str(conf), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "A/B: with-reclaim vs no-reclaim" in r.output
    summary = json.loads((out / "summary.json").read_text())
    sa, sb = summary["A"], summary["B"]
    # A: reclaim evicts 2 of hog's tasks at 100 and late starts at 101 (wait 1 s);
    # B: no reclaim, late waits for hog's tasks to finish at 1000 (wait 900 s)
    assert (sa["evictions"]["reclaim"], sb["evictions"]["reclaim"]) == (2, 0)
    assert (sa["queues"]["q2"]["wait"]["mean"], sb["queues"]["q2"]["wait"]["mean"]) == (1.0, 900.0)
    assert (sa["label"], sb["label"]) == ("with-reclaim", "no-reclaim")
    html = (out / "report.html").read_text()
    assert "A/B: with-reclaim vs no-reclaim" in html
    # both runs in the charts: B's allocated beside A's, B's waits under A's
    assert "allocated (no-reclaim)" in html and 'data-series="no-reclaim"' in html
    assert html.count('<div class="chart-plot" data-chart="line"') >= 3
    for f in ("queues.csv", "b-queues.csv", "jobs.csv", "b-jobs.csv"):
        assert (out / f).exists()
    assert "late" in (out / "b-jobs.csv").read_text()


PROPORTION = """
scheduler: |
  actions: "enqueue, allocate, preempt, reclaim, backfill"
  tiers:
  - plugins:
    - name: priority
    - name: gang
  - plugins:
    - name: drf
    - name: predicates
    - name: proportion
"""


@pytest.mark.parametrize("conf", [FLAT_CAPACITY, PROPORTION, ""])
def test_sessions_leave_queue_objects_untouched(monkeypatch: pytest.MonkeyPatch, conf: str) -> None:
    """The simulator hands the same Queue objects to every session (copying a thousand of them per
    session was expensive); this holds only while sessions do not write to them."""
    import copy

    import apportion.simulation.engine as sim_engine

    real_run = sim_engine.run_session
    checked = []

    def guarded(ssn, **kw):  # type: ignore[no-untyped-def]
        before = {n: copy.deepcopy(q) for n, q in ssn.queues.items()}
        out = real_run(ssn, **kw)
        changed = [n for n, q in before.items() if ssn.queues[n] != q]
        assert not changed, f"session wrote to queues {changed}"
        checked.append(len(before))
        return out

    monkeypatch.setattr(sim_engine, "run_session", guarded)
    body = node(cpu=4) + conf + """
queues:
- {kind: Queue, metadata: {name: q1}, spec: {deserved: {cpu: 2, memory: 32Gi}, capability: {cpu: 4}, weight: 1}}
- {kind: Queue, metadata: {name: q2}, spec: {deserved: {cpu: 2, memory: 32Gi}, guarantee: {resource: {cpu: 1}}}}
workload:
  jobs:
  - {name: hog, queue: q1, arrival: 0, duration: 1000, tasks: 4, minMember: 1, resources: {cpu: 1, memory: 1Gi}}
  - {name: late, queue: q2, arrival: 100, duration: 50, tasks: 2, minMember: 2, resources: {cpu: 1, memory: 1Gi}}
"""
    simulate(scenario(body))
    res = simulate(scenario(reservable("""
  - {name: rj, queue: res, reservation: r1, arrival: 100, duration: 150, resources: {cpu: 2, memory: 1Gi}}
  - {name: be, queue: res, arrival: 0, duration: 500, tasks: 4, minMember: 1, resources: {cpu: 1, memory: 1Gi}}
""")))
    assert res.jobs and len(checked) > 4


def test_the_memo_carried_between_sessions_changes_no_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulator hands each session a memo (capacity keeps its tree there); forcing a rebuild every
    session gives the same summary, over a window where reservation queues come and go."""
    from apportion.plugins.capacity import CapacityPlugin
    from apportion.simulation.metrics import summarize
    from apportion.simulation.scenario import default_scenario_path, load_scenario

    def summary() -> str:
        sc = load_scenario(default_scenario_path())
        sc.run.horizon = 3600.0  # the reservation queue appears at 1800 s
        return json.dumps(summarize(simulate(sc)), sort_keys=True)

    with_memo = summary()
    monkeypatch.setattr(CapacityPlugin, "_tree_inputs", lambda self, ssn: object())  # never equal: rebuild
    assert summary() == with_memo


def test_sessions_are_freed_by_reference_counting_and_the_collector_is_restored(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each session is released once applied, so with the cycle collector off every session object is
    already gone when the next one opens; the run's collector settings are put back afterwards."""
    import gc
    import weakref

    from apportion.simulation import engine

    sessions: list[weakref.ref] = []
    real = engine.open_session

    def spy(*args: object, **kw: object) -> object:
        assert all(r() is None for r in sessions), "a finished session is still alive"
        ssn = real(*args, **kw)  # type: ignore[arg-type]
        sessions.append(weakref.ref(ssn))
        return ssn

    monkeypatch.setattr(engine, "open_session", spy)
    before = gc.get_threshold()
    gc.disable()
    try:
        sc = scenario(FLAT_CAPACITY + node(cpu=4, count=2) + """
queues:
- {kind: Queue, metadata: {name: q1}, spec: {deserved: {cpu: 4, memory: 8Gi}}}
- {kind: Queue, metadata: {name: q2}, spec: {deserved: {cpu: 4, memory: 8Gi}}}
workload:
  jobs:
  - {name: a, queue: q1, arrival: 0, duration: 30, tasks: 2, minMember: 2, resources: {cpu: 2, memory: 1Gi}}
  - {name: b, queue: q2, arrival: 5, duration: 30, tasks: 3, resources: {cpu: 1, memory: 1Gi}}
  - {name: c, queue: q1, arrival: 12, duration: 10, resources: {cpu: 4, memory: 1Gi}}
""")
        res = simulate(sc)
    finally:
        gc.enable()
    assert len(sessions) >= 3 and all(j.state == "done" for j in res.jobs)
    assert all(r() is None for r in sessions)
    assert gc.get_threshold() == before


PREEMPT_AND_FAILURE = """
  events:
  - {at: 150, type: fail, nodes: [n-01]}
  - {at: 400, type: recover, nodes: [n-01]}
scheduler: |
  actions: "enqueue, allocate, preempt, reclaim, backfill"
  tiers:
  - plugins:
    - name: priority
    - name: gang
    - name: conformance
  - plugins:
    - name: drf
    - name: predicates
    - name: capacity
  - plugins:
    - name: nodeorder
priorityClasses: {high: 1000}
queues:
- {kind: Queue, metadata: {name: q1}, spec: {deserved: {cpu: 4, memory: 32Gi}}}
- {kind: Queue, metadata: {name: q2}, spec: {deserved: {cpu: 4, memory: 32Gi}}}
workload:
  jobs:
  - {name: hog, queue: q1, arrival: 0, duration: 600, tasks: 6, minMember: 1, resources: {cpu: 1, memory: 1Gi}}
  - {name: gang, queue: q2, arrival: 20, duration: 300, tasks: 2, minMember: 2, resources: {cpu: 2, memory: 1Gi}}
  - {name: vip, queue: q1, arrival: 60, duration: 100, priorityClass: high, resources: {cpu: 2, memory: 1Gi}}
  - {name: small, queue: q2, arrival: 90, duration: 50, tasks: 3, resources: {cpu: 1, memory: 1Gi}}
"""


def _reuse_scenarios() -> list[object]:
    sc = load_scenario(default_scenario_path())
    sc.run.horizon = 3600.0  # reservation queues, reclaim and a gang workload within the first hour
    return [sc, scenario(node(cpu=4, count=2) + PREEMPT_AND_FAILURE)]


def test_the_simulators_events_say_what_its_records_say(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulator feeds its cache Pod, PodGroup, Node and Queue objects as watch events. After every
    session the cache must equal one rebuilt by parsing every object afresh: what the simulator tells
    the cache is exactly what a real cluster's watch would say (and the cache's indexes hold), under
    preempt, reclaim, a node failure and recovery, reservation queues coming and going."""
    from apportion.simulation.engine import Simulator
    from apportion.state.check import check_cache

    real = Simulator._session
    checked = 0

    def session(self: Simulator) -> None:
        nonlocal checked
        real(self)
        # the plan follower's child queues come with their records (their amounts need not be
        # quantities a Queue can spell); every other object is parsed
        check_cache(self.cache, reparse=not self.children)
        checked += 1

    monkeypatch.setattr(Simulator, "_session", session)
    for sc in _reuse_scenarios():
        simulate(sc)  # type: ignore[arg-type]
    assert checked > 100


def test_the_cache_gets_exactly_the_active_jobs() -> None:
    """A job's pods are in the cache from its arrival to its end, and nothing else is."""
    from apportion.simulation.engine import Simulator

    sc = scenario(node(cpu=4, count=2) + PREEMPT_AND_FAILURE)
    sim = Simulator(sc)  # type: ignore[arg-type]
    sim.run()
    sim._flush()
    assert not sim.active and sim.cache.raw["Pod"] == {} and sim.cache.raw["PodGroup"] == {}
    assert sorted(sim.cache.raw["Node"]) == sorted(sim.nodes)
    assert sim.cache.anomalies == {}


def test_metrics_recount_only_changed_queues_yet_match_a_full_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorder recounts a queue's allocated and pending only when the simulator says one of its
    jobs changed. After every sample that must equal a count over every active job: a status change,
    arrival, completion, eviction, node failure, expiry move or kill the simulator did not report
    would show here."""
    from apportion.simulation.recorder import Recorder

    real = Recorder.sample
    samples = 0

    def checked(self: Recorder, t: float) -> None:
        nonlocal samples
        real(self, t)
        samples += 1
        full: dict[str, tuple[list[float], list[float]]] = {}
        for job in self.sim.active.values():
            running = sum(1 for x in job.tasks if x.status is TaskStatus.RUNNING)
            waiting = sum(1 for x in job.tasks if x.status is TaskStatus.PENDING)
            if running or waiting:
                a, p = full.setdefault(job.queue, ([0.0] * len(self.dims), [0.0] * len(self.dims)))
                for i, d in enumerate(self.dims):
                    a[i] += running * job.resreq.get(d)
                    p[i] += waiting * job.resreq.get(d)
        assert self._work == full, f"at {t}"

    monkeypatch.setattr(Recorder, "sample", checked)
    expiring = [scenario(reservable("""
  - {name: long, queue: res, reservation: r1, arrival: 100, duration: 500, resources: {cpu: 2, memory: 1Gi}}
  - {name: be, queue: res, arrival: 0, duration: 500, tasks: 4, minMember: 1, resources: {cpu: 1, memory: 1Gi}}
""", move=move)) for move in (True, False)]
    for sc in [*_reuse_scenarios(), *expiring]:
        simulate(sc)  # type: ignore[arg-type]
    assert samples > 100
