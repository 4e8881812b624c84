"""Trace loaders (Philly via Gavel, Alibaba openb) on small fixtures, and on the shared traces when present."""

from __future__ import annotations

from pathlib import Path

import pytest

from apportion.errors import InputError
from apportion.resources import GPU
from apportion.simulation.engine import simulate
from apportion.simulation.scenario import parse_scenario
from scenario_text import FLAT_CAPACITY, TRACES

FIXTURES = Path(__file__).resolve().parent / "fixtures"
def philly(options: str) -> str:
    return f"cluster: {{}}\nqueues: []\n{FLAT_CAPACITY}workload:\n  traces:\n  - {{type: philly, path: philly, {options}}}\n"


def test_philly_mapping() -> None:
    sc = parse_scenario(philly("days: 1, clusterScale: 0.5"), source="p.yaml", base=FIXTURES)
    jobs = {j.name: j for j in sc.jobs}
    # bbb222-0001 arrives at 90,000 s, after the first day
    assert sorted(jobs) == ["philly-aaa111-0000", "philly-aaa111-0001", "philly-bbb222-0000", "philly-zzz999-0000"]
    # 16 GPUs: a gang of ⌈16/8⌉ = 2 tasks of 8 GPUs, each with 8 × 4 cores and 8 × 32Gi
    gang = jobs["philly-aaa111-0001"]
    assert (gang.tasks, gang.min_member, gang.arrival, gang.duration) == (2, 2, 50.0, 200.0)
    assert gang.resources.get(GPU) == 8000 and gang.resources.cpu == 32000 and gang.resources.memory == 8 * 32 * 2**30
    small = jobs["philly-bbb222-0000"]
    assert (small.tasks, small.resources.get(GPU), small.queue) == (1, 4000, "vc-bbb222")
    assert small.duration == 1.0  # 0.5 s in the trace, at least 1 s
    assert jobs["philly-zzz999-0000"].queue == "misc"  # zzz999 is not in philly_vc.csv
    # deserved = node num × 8 × clusterScale GPUs: aaa111 2 × 8 × 0.5 = 8, bbb222 4, misc one node × 0.5 = 4
    q = sc.queues
    assert {n: q[n].deserved.get(GPU) / 1000 for n in ("vc-aaa111", "vc-bbb222", "misc")} == {
        "vc-aaa111": 8, "vc-bbb222": 4, "misc": 4}
    assert q["vc-aaa111"].deserved.cpu == 32000 and q["vc-aaa111"].weight == 2
    # ⌈0.5 × (2 + 1)⌉ = 2 nodes of 8 GPUs
    assert [(n.name, n.allocatable.get(GPU)) for n in sc.nodes] == [("philly-00", 8000), ("philly-01", 8000)]


def test_philly_replay_runs_every_job() -> None:
    sc = parse_scenario(philly("days: 1, clusterScale: 0.5"), source="p.yaml", base=FIXTURES)
    res = simulate(sc)
    assert all(j.state == "done" for j in res.jobs)
    by = {j.spec.name: j for j in res.jobs}
    # the gang needs both nodes whole: it waits for the 1-GPU job (until 100) and misc's (20 + 300 = 320)
    assert by["philly-aaa111-0001"].first_start == 320.0


def test_philly_options() -> None:
    body = philly("days: 2, maxJobs: 2, timeScale: 10").replace(
        "cluster: {}", "cluster: {generate: [{count: 1, namePrefix: own, allocatable: {cpu: 64, nvidia.com/gpu: 8}}]}")
    sc = parse_scenario(body, source="p.yaml", base=FIXTURES)
    # maxJobs keeps the first two by arrival; timeScale divides arrivals and durations (at least 1 s)
    assert [(j.name, j.arrival, j.duration) for j in sc.jobs] == [
        ("philly-aaa111-0000", 0.0, 10.0), ("philly-bbb222-0000", 1.0, 1.0)]
    # without clusterScale the trace adds no nodes: the scenario's own cluster is used
    assert [n.name for n in sc.nodes] == ["own-00"]


def test_philly_without_cluster_needs_nodes() -> None:
    with pytest.raises(InputError, match="cluster has no nodes"):
        parse_scenario(philly("days: 1"), source="p.yaml", base=FIXTURES)


def test_alibaba_mapping() -> None:
    body = ("cluster: {}\nqueues: []\n" + FLAT_CAPACITY
            + "workload:\n  traces:\n  - {type: alibaba, path: alibaba, clusterScale: 0.5}\n")
    sc = parse_scenario(body, source="a.yaml", base=FIXTURES)
    jobs = {j.name: j for j in sc.jobs}
    # pod 3 ran 0 s and pod 4 was never deleted: dropped
    assert sorted(jobs) == ["openb-pod-0000", "openb-pod-0001", "openb-pod-0002"]
    ls, be, bu = jobs["openb-pod-0000"], jobs["openb-pod-0001"], jobs["openb-pod-0002"]
    # arrival relative to the first pod (100); duration from scheduled_time, else creation_time
    assert (ls.arrival, ls.duration, ls.queue, ls.priority_class, ls.preemptable) == (0.0, 1000.0, "ls", "alibaba-ls", False)
    assert (be.arrival, be.duration, be.queue, be.preemptable) == (50.0, 200.0, "be", True)
    assert (bu.arrival, bu.duration, bu.queue) == (100.0, 60.0, "burstable")
    assert be.resources.get(GPU) == 500  # gpu_milli 500 of one shared GPU
    assert be.resources.cpu == 2000 and be.resources.memory == 4096 * 2**20
    assert bu.resources.get(GPU) == 0
    assert sc.priority_classes["alibaba-ls"] == 1000 and sc.priority_classes["alibaba-be"] == 0
    # clusterScale 0.5 keeps every 2nd GPU node: 2 + 8 = 10 GPUs; deserved ⌊50 / 25 / 25 %⌋
    assert [n.name for n in sc.nodes] == ["openb-node-0000", "openb-node-0002"]
    assert {n: sc.queues[n].deserved.get(GPU) / 1000 for n in ("ls", "burstable", "be")} == {
        "ls": 5, "burstable": 2, "be": 2}
    assert not sc.queues["ls"].reclaimable and sc.queues["be"].reclaimable
    res = simulate(sc)
    assert [j.state for j in res.jobs] == ["done"] * 3


def test_missing_trace_folder_names_the_field() -> None:
    with pytest.raises(InputError) as ei:
        parse_scenario(philly("days: 1").replace("path: philly", "path: nowhere"), source="p.yaml", base=FIXTURES)
    assert "p.yaml: workload.traces[0].path" in str(ei.value)


def test_shared_philly_trace_loads() -> None:
    if not (TRACES / "philly-gavel" / "jobs_seed0.csv").exists():
        pytest.skip(f"Philly trace not found under {TRACES} (the shared traces are not in the repository)")
    sc = parse_scenario(philly("days: 30, clusterScale: 0.35").replace("path: philly",
                                                                        f"path: {TRACES / 'philly-gavel'}"),
                        source="p.yaml")
    assert len(sc.jobs) > 4000
    assert len([q for q in sc.queues if q.startswith("vc-")]) == 11 and "misc" in sc.queues
    # ⌈0.35 × Σ node num⌉ nodes of 8 GPUs
    assert len(sc.nodes) == -(-35 * 352 // 100)


def test_shared_alibaba_trace_loads() -> None:
    if not (TRACES / "alibaba-openb-2023" / "openb_pod_list_default.csv").exists():
        pytest.skip(f"Alibaba openb trace not found under {TRACES} (the shared traces are not in the repository)")
    body = ("cluster: {}\nqueues: []\n" + FLAT_CAPACITY + "workload:\n  traces:\n"
            f"  - {{type: alibaba, path: {TRACES / 'alibaba-openb-2023'}, clusterScale: 0.05}}\n")
    sc = parse_scenario(body, source="a.yaml")
    assert 7000 < len(sc.jobs) <= 8152
    assert {j.queue for j in sc.jobs} <= {"ls", "burstable", "be"}
