"""reclaim's optional guards (minRuntime, gangAtomicVictims) and the gang reclaim oscillation they damp.

Issue 14 item 2. Off by default: every other test runs Volcano's reclaim unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from benchmarks.bench_simulation import conf_text, scenario_document

from apportion.actions.reclaim_guards import ReclaimGuards
from apportion.framework.conf import SchedulerConf, conf_from_dict
from apportion.simulation.engine import simulate
from apportion.simulation.metrics import summarize
from apportion.simulation.scenario import parse_scenario

from k8s import cycle, node, pod, podgroup, queue, session


def cfg(**reclaim_args: Any) -> SchedulerConf:
    data: dict[str, Any] = {
        "actions": "enqueue, allocate, reclaim",
        "tiers": [{"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
                  {"plugins": [{"name": "predicates"}, {"name": "capacity"}]}],
    }
    if reclaim_args:
        data["configurations"] = [{"name": "reclaim", "arguments": reclaim_args}]
    return conf_from_dict(data, source="test")


def started(obj: dict, stamp: str) -> dict:
    obj["status"]["startTime"] = stamp
    return obj


def runtime_world(stamp: str, now: str = "2026-01-01T12:00:00Z") -> list[dict]:
    """`big` (deserved 1 cpu) runs two 2-cpu pods that started at `stamp`; `small` wants 2 cpu, its
    PodGroup created at `now` (the dump's newest timestamp, which is the cycle's clock)."""
    objs = [node("n1", cpu=4, memory="64Gi"), queue("big", deserved={"cpu": "1"}),
            queue("small", deserved={"cpu": "4"}), podgroup("old", "big", phase="Running")]
    objs += [started(pod(f"old-{i}", "old", cpu=2, memory="", node_name="n1"), stamp) for i in range(2)]
    reclaimer = podgroup("r", "small")
    reclaimer["metadata"]["creationTimestamp"] = now
    objs += [reclaimer, pod("r-0", "r", cpu=2, memory="")]
    return objs


def test_min_runtime_protects_a_task_that_started_recently() -> None:
    # five minutes before the dump's clock: younger than ten minutes
    recent = runtime_world("2026-01-01T11:55:00Z")
    assert len(cycle(recent, cfg()).evictions) == 1  # Volcano: no such guard
    assert cycle(recent, cfg(minRuntime="10m")).evictions == []
    assert len(cycle(recent, cfg(minRuntime="4m30s")).evictions) == 1  # a Go duration, as forecast reads
    old = runtime_world("2026-01-01T11:00:00Z")
    assert len(cycle(old, cfg(minRuntime=600)).evictions) == 1
    # a pod with no start time is not protected (nothing says it is young)
    assert len(cycle(runtime_world(""), cfg(minRuntime=600)).evictions) == 1


def test_min_runtime_in_a_cycle_reads_the_dumps_clock_not_the_wall_clock() -> None:
    # A dump whose clock is far in the past: against the wall clock every pod would be old; against
    # the dump's own newest timestamp the pods started a minute ago, whenever the cycle runs.
    world = runtime_world("1999-12-31T23:59:00Z", now="2000-01-01T00:00:00Z")
    assert cycle(world, cfg(minRuntime="10m")).evictions == []


def test_min_runtime_on_the_session_clock() -> None:
    """The simulator's clock: Session.now and TaskInfo.started_at."""
    ssn = session(runtime_world(""), cfg(minRuntime=100))
    ssn.now = 150.0
    for t in ssn.jobs["ns/old"].tasks.values():
        t.started_at = 100.0
    g = ReclaimGuards.of(ssn)
    assert g.min_runtime == 100 and all(g.protected(t) for t in ssn.jobs["ns/old"].tasks.values())
    ssn.now = 200.0
    assert not any(ReclaimGuards.of(ssn).protected(t) for t in ssn.jobs["ns/old"].tasks.values())


@pytest.mark.parametrize("bad", ["soon", -5, True, [1]])
def test_a_bad_guard_value_is_a_warning_and_the_guard_stays_off(bad: Any) -> None:
    ssn = session(runtime_world(""), cfg(minRuntime=bad, gangAtomicVictims="maybe"))
    g = ReclaimGuards.of(ssn)
    assert not g.active
    assert any("minRuntime" in w for w in ssn.warnings) and any("gangAtomicVictims" in w for w in ssn.warnings)


def gang_world() -> list[dict]:
    """n1 (6 cpu) holds gang b (two 1-cpu members) and gang a (two 2-cpu members); gang c has one 2-cpu
    member on n1's neighbour n2 and one on n3. All in `big`, far above its deserved. `r` wants 4 cpu."""
    objs = [node("n1", cpu=6, memory="64Gi"), node("n2", cpu=2, memory="64Gi"), node("n3", cpu=2, memory="64Gi"),
            queue("big", deserved={"cpu": "1"}), queue("small", deserved={"cpu": "8"})]
    for name, cpu, nodes in (("a", 2, ["n1", "n1"]), ("b", 1, ["n1", "n1"]), ("c", 2, ["n2", "n3"])):
        objs.append(podgroup(name, "big", min_member=2, phase="Running"))
        objs += [pod(f"{name}-{i}", name, cpu=cpu, memory="", node_name=n) for i, n in enumerate(nodes)]
    objs += [podgroup("r", "small"), pod("r-0", "r", cpu=4, memory="")]
    return objs


def test_gang_atomic_victims_take_the_fewest_whole_gangs() -> None:
    # Volcano: victims one by one in victim order (gang b first): b-1, b-0, then a-1 breaks gang a too
    plain = cycle(gang_world(), cfg())
    assert plain.evictions == ["ns/a-1", "ns/b-0", "ns/b-1"] and plain.pipelined == {"ns/r-0": "n1"}
    # whole units: gang a alone makes room on n1, so only gang a goes
    atomic = cycle(gang_world(), cfg(gangAtomicVictims=True))
    assert atomic.evictions == ["ns/a-0", "ns/a-1"] and atomic.pipelined == {"ns/r-0": "n1"}


def test_gang_atomic_evicts_every_member_and_uses_the_room_it_leaves() -> None:
    """Gang c has a member on n1 and one on n2; r wants n1's 2 cpu, then r2 wants 2 cpu too."""
    objs = [node("n1", cpu=2, memory="64Gi"), node("n2", cpu=2, memory="64Gi"),
            queue("big", deserved={"cpu": "1"}), queue("small", deserved={"cpu": "8"}),
            podgroup("c", "big", min_member=2, phase="Running"),
            pod("c-0", "c", cpu=2, memory="", node_name="n1"), pod("c-1", "c", cpu=2, memory="", node_name="n2"),
            podgroup("r", "small"), pod("r-0", "r", cpu=2, memory="")]
    # Volcano evicts the one member on n1; the gang is broken all the same
    assert cycle(objs, cfg()).evictions == ["ns/c-0"]
    # whole units: both members go at once
    assert cycle(objs, cfg(gangAtomicVictims=True)).evictions == ["ns/c-0", "ns/c-1"]
    # a second reclaimer of the queue takes the room c-1 left on n2 without asking for another victim
    objs += [podgroup("r2", "small"), pod("r2-0", "r2", cpu=2, memory="")]
    atomic = cycle(objs, cfg(gangAtomicVictims=True))
    assert atomic.evictions == ["ns/c-0", "ns/c-1"] and atomic.pipelined == {"ns/r-0": "n1", "ns/r2-0": "n2"}


def test_gang_atomic_needs_the_vote_on_every_member() -> None:
    """capacity approves a victim while its queue is still above its deserved before taking it: with
    `big` at 10 cpu and deserved 8, only one member of gang a (2 + 2) is approved, so a is no unit;
    gang b (1 + 1) is, but frees 2 of the 4 cpu needed: nothing is evicted (Volcano's reclaim evicts
    nothing here either, its victims b-1 and b-0 do not make room)."""
    objs = gang_world()
    objs[3] = queue("big", deserved={"cpu": "8"})
    assert cycle(objs, cfg()).evictions == []
    assert cycle(objs, cfg(gangAtomicVictims=True)).evictions == []


# ===================================================================== the oscillation, end to end
#: the simulation benchmark's scheduler with Volcano's reclaim (the oscillation is the benchmark's)
SCHED = conf_text("reclaim")


def oscillating_scenario(guards: str = "") -> Any:
    """The simulation benchmark's shape, small: 60 jobs, 4 leaves of 2 parents, 3 nodes of 8 GPUs."""
    doc = scenario_document(jobs=60, queues=4, parents=2, nodes=3, interarrival=5)
    doc["scheduler"] = SCHED + (f"configurations:\n- name: reclaim\n  arguments:\n{guards}" if guards else "")
    return parse_scenario(yaml.safe_dump(doc, sort_keys=False), source="oscillation.yaml")


def test_gang_reclaim_oscillates_and_the_guards_damp_it() -> None:
    volcano = summarize(simulate(oscillating_scenario()))["evictions"]
    guarded = summarize(simulate(oscillating_scenario("    minRuntime: 600\n    gangAtomicVictims: true\n")))
    g = guarded["evictions"]
    # reclaim as Volcano does it: gangs and singles reclaimed back and forth, one job again and again
    assert volcano["reclaim"] > 10 and volcano["jobsReclaimedTwiceOrMore"] >= 1
    assert volcano["lostGpuHoursByReason"]["reclaim"] == volcano["lostGpuHours"] > 0
    # guarded: far fewer evictions, no job reclaimed twice, less work lost; every job still completes
    assert g["reclaim"] * 5 < volcano["reclaim"] and g["jobsReclaimedTwiceOrMore"] == 0
    assert g["lostGpuHours"] < volcano["lostGpuHours"]
    assert guarded["jobs"]["completed"] == guarded["jobs"]["total"]
