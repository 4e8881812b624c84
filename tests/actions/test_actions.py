"""The five actions through the public engine: snapshot in, result out."""

from __future__ import annotations

from k8s import conf, cycle, node, pod, podgroup, priority_class, queue

ALLOC = conf("enqueue, allocate", ["priority", "gang", "conformance"], ["drf"])


def test_gang_all_or_nothing_discards_partial_placement():
    objs = [node("n1", cpu=2), node("n2", cpu=2), queue("q"), podgroup("pg", "q", min_member=3)]
    objs += [pod(f"pg-w-{i}", "pg", cpu=2) for i in range(3)]
    r = cycle(objs, ALLOC)
    assert r.binds == {}
    assert r.podgroups["ns/pg"] == "Inqueue"
    (ev,) = [e for e in r.events if e.object == "ns/pg"]
    assert "insufficient cpu" in ev.message and "need 2" in ev.message


def test_gang_that_fits_binds_every_member_and_stays_inqueue():
    objs = [node("n1", cpu=4), node("n2", cpu=2), queue("q"), podgroup("pg", "q", min_member=3)]
    objs += [pod(f"pg-w-{i}", "pg", cpu=2) for i in range(3)]
    r = cycle(objs, ALLOC)
    assert sorted(r.binds) == ["ns/pg-w-0", "ns/pg-w-1", "ns/pg-w-2"]
    assert sorted(r.binds.values()) == ["n1", "n1", "n2"]
    assert r.podgroups["ns/pg"] == "Inqueue"  # bound in this session; Running in a later one


def test_pipelining_onto_releasing_resources():
    objs = [node("n1", cpu=4), queue("q"), podgroup("old", "q"), pod("old-0", "old", cpu=3, node_name="n1", deleting=True),
            podgroup("new", "q"), pod("new-0", "new", cpu=3)]
    r = cycle(objs, ALLOC)
    assert r.binds == {}
    assert r.pipelined == {"ns/new-0": "n1"}


def test_allocate_alone_promotes_pending_podgroups():
    objs = [node("n1"), queue("q"), podgroup("pg", "q", phase="Pending"), pod("pg-0", "pg")]
    assert cycle(objs, conf("allocate", ["gang"])).binds == {"ns/pg-0": "n1"}
    assert cycle(objs, conf("enqueue, allocate", ["gang"])).binds == {"ns/pg-0": "n1"}


def test_pending_podgroup_skipped_by_allocate_when_enqueue_configured_but_not_run():
    objs = [node("n1"), queue("q"), podgroup("pg", "q", phase="Pending"), pod("pg-0", "pg")]
    r = cycle(objs, conf("allocate, enqueue", ["gang"]))
    # allocate ran first and skipped the Pending job; enqueue then admitted it
    assert r.binds == {}
    assert r.podgroups["ns/pg"] == "Inqueue"


def test_enqueue_overcommit_admission():
    objs = [node("n1", cpu=10), queue("q"),
            podgroup("small", "q", phase="Pending", min_resources={"cpu": "10"}), pod("small-0", "small", cpu=10),
            podgroup("big", "q", phase="Pending", min_resources={"cpu": "5"}, created="2027"), pod("big-0", "big", cpu=5)]
    r = cycle(objs, conf("enqueue", ["overcommit"]))
    # idle = 10 x 1.2 = 12: small (10) admitted, then big (10 + 5 > 12) refused
    assert r.podgroups == {"ns/small": "Inqueue", "ns/big": "Pending"}
    (ev,) = [e for e in r.events if e.object == "ns/big"]
    assert "overused" in ev.message and "cpu 15 > 12" in ev.message


def test_podgroup_without_minresources_admitted_even_into_closed_queue():
    objs = [node("n1"), queue("q", state="Closed"), podgroup("pg", "q", phase="Pending"), pod("pg-0", "pg")]
    r = cycle(objs, conf("enqueue", ["overcommit"]))
    assert r.podgroups["ns/pg"] == "Inqueue"


def test_backfill_places_best_effort_tasks():
    objs = [node("n1", pods=2), queue("q"), podgroup("be", "q", min_member=1)]
    objs += [pod(f"be-{i}", "be", cpu=0, memory="") for i in range(3)]
    r = cycle(objs, conf("allocate, backfill", ["gang"], ["predicates"]))
    # allocate skips best-effort tasks; backfill is limited only by the pod count
    assert set(r.binds.values()) <= {"n1"}
    assert 1 <= len(r.binds) <= 3


def test_reclaim_across_queues_takes_running_tasks_of_other_queue():
    objs = [node("n1", cpu=4), queue("q1"), queue("q2"),
            podgroup("hog", "q1", min_member=1, phase="Running")]
    objs += [pod(f"hog-{i}", "hog", cpu=2, node_name="n1") for i in range(2)]
    objs += [podgroup("want", "q2", min_member=1), pod("want-0", "want", cpu=2)]
    r = cycle(objs, conf("reclaim", ["priority", "gang", "conformance"]))
    assert r.evictions == ["ns/hog-1"]  # the largest name index goes first; gang keeps minMember
    assert r.pipelined == {"ns/want-0": "n1"}
    assert r.binds == {}


def test_reclaim_never_takes_from_own_queue_or_bound_pods():
    objs = [node("n1", cpu=4), queue("q1"), podgroup("hog", "q1", min_member=1, phase="Running")]
    objs += [pod(f"hog-{i}", "hog", cpu=2, node_name="n1") for i in range(2)]
    objs += [podgroup("want", "q1"), pod("want-0", "want", cpu=2)]
    assert cycle(objs, conf("reclaim", ["gang", "conformance"])).evictions == []
    objs2 = [node("n1", cpu=4), queue("q1"), queue("q2"), podgroup("hog", "q1", min_member=1, phase="Running")]
    objs2 += [pod(f"hog-{i}", "hog", cpu=2, node_name="n1", phase="Pending") for i in range(2)]  # Bound
    objs2 += [podgroup("want", "q2"), pod("want-0", "want", cpu=2)]
    assert cycle(objs2, conf("reclaim", ["gang", "conformance"])).evictions == []


def test_preemption_within_a_queue_by_job_priority():
    objs = [priority_class("high", 100), priority_class("low", 1), node("n1", cpu=2), queue("q"),
            podgroup("low", "q", phase="Running", priority_class="low"),
            pod("low-0", "low", cpu=2, node_name="n1"),
            podgroup("high", "q", priority_class="high"), pod("high-0", "high", cpu=2)]
    # gang protects a job at minMember: its empty answer stops tier 1 with no decision and no tier follows
    assert cycle(objs, conf("preempt", ["priority", "gang", "conformance"])).evictions == []
    # Keep (quirk 11): a later tier may pick the very task gang protected
    r = cycle(objs, conf("preempt", ["priority", "gang"], ["priority", "conformance"]))
    assert r.evictions == ["ns/low-0"]
    assert r.pipelined == {"ns/high-0": "n1"}
    # an equal-priority job may not preempt
    objs[5]["spec"]["priorityClassName"] = "high"
    objs[4]["spec"]["priorityClassName"] = "high"
    assert cycle(objs, conf("preempt", ["priority", "gang"], ["priority", "conformance"])).evictions == []


def test_preemption_within_a_job_by_task_priority():
    objs = [node("n1", cpu=2), queue("q"), podgroup("j", "q", min_member=1, phase="Running"),
            pod("j-a", "j", cpu=2, node_name="n1", priority=1), pod("j-b", "j", cpu=2, priority=10)]
    r = cycle(objs, conf("preempt", ["priority", "conformance"]))
    assert r.evictions == ["ns/j-a"]
    assert r.pipelined == {"ns/j-b": "n1"}


def test_preemption_policy_never_does_not_preempt():
    objs = [priority_class("high", 100), node("n1", cpu=2), queue("q"),
            podgroup("low", "q", phase="Running"), pod("low-0", "low", cpu=2, node_name="n1"),
            podgroup("high", "q", priority_class="high"), pod("high-0", "high", cpu=2, preemptionPolicy="Never")]
    assert cycle(objs, conf("preempt", ["priority", "gang", "conformance"])).evictions == []


def test_conformance_protects_kube_system():
    objs = [priority_class("high", 100), node("n1", cpu=2), queue("q"),
            podgroup("low", "q", phase="Running", ns="kube-system"),
            pod("low-0", "low", cpu=2, node_name="n1", ns="kube-system"),
            podgroup("high", "q", priority_class="high"), pod("high-0", "high", cpu=2)]
    assert cycle(objs, conf("preempt", ["priority", "gang", "conformance"])).evictions == []


def test_phase_rules_at_close():
    objs = [node("n1", cpu=8), queue("q"),
            podgroup("zero", "q", min_member=0, phase="Inqueue"),
            podgroup("partial", "q", min_member=3, phase="Running"),
            pod("partial-0", "partial", cpu=1, node_name="n1"), pod("partial-1", "partial", cpu=100),
            pod("partial-2", "partial", cpu=100),
            podgroup("done", "q", min_member=1, phase="Running"),
            pod("done-0", "done", cpu=1, node_name="n1", phase="Succeeded")]
    r = cycle(objs, conf("allocate", ["gang"]))
    assert r.podgroups["ns/zero"] == "Completed"
    assert r.podgroups["ns/partial"] == "Unknown"
    assert r.podgroups["ns/done"] == "Completed"


def test_determinism_byte_for_byte():
    import json

    def objs():
        out = [node(f"n{i}", cpu=4) for i in range(5)] + [queue("a"), queue("b")]
        for j in range(6):
            out.append(podgroup(f"g{j}", "a" if j % 2 else "b", min_member=2))
            out += [pod(f"g{j}-t-{k}", f"g{j}", cpu=1) for k in range(3)]
        return out

    a = json.dumps(cycle(objs(), ALLOC).to_json())
    b = json.dumps(cycle(objs(), ALLOC).to_json())
    assert a == b


def test_reclaim_serves_every_starving_job_of_a_queue_before_the_next_queue():
    """Volcano's reclaim pops a queue and then handles all its starving jobs (an inner loop), without
    looking at the queue order again in between. `hog` has room for two reclaims above its deserved:
    q1 pops first (tie, name order) and its two jobs take both, although after the first one q2's share
    (0) is below q1's. Before issue 14 apportion went back to the queue order after each job, and q2
    took the second."""
    cap = conf("enqueue, allocate, reclaim", ["priority", "gang", "conformance", "capacity"])
    objs = [node("n1", cpu=6, memory="64Gi"), queue("hog", deserved={"cpu": "4"}),
            queue("q1", deserved={"cpu": "3"}), queue("q2", deserved={"cpu": "3"}),
            podgroup("hog", "hog", phase="Running")]
    objs += [pod(f"hog-{i}", "hog", cpu=1, memory="", node_name="n1") for i in range(6)]
    for q, j in (("q1", "j1"), ("q1", "j2"), ("q2", "k1")):
        objs += [podgroup(j, q), pod(f"{j}-0", j, cpu=1, memory="")]
    r = cycle(objs, cap)
    assert len(r.evictions) == 2
    assert r.pipelined == {"ns/j1-0": "n1", "ns/j2-0": "n1"}
