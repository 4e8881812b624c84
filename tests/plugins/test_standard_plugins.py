"""priority, gang, conformance, drf, overcommit: their extension points on opened sessions."""

from __future__ import annotations

from apportion.framework import extension as ep

from k8s import conf, cycle, node, pod, podgroup, priority_class, queue, session


def _plugin(ssn, name):
    return next(p for opt, p in ssn.plugins if opt.name == name)


def test_priority_orders_and_victims():
    objs = [priority_class("hi", 100), priority_class("lo", 1), node("n1", cpu=8), queue("q"),
            podgroup("lo", "q", phase="Running", priority_class="lo"), pod("lo-0", "lo", node_name="n1", priority=5),
            podgroup("hi", "q", priority_class="hi"), pod("hi-0", "hi", priority=1), pod("hi-1", "hi", priority=9)]
    ssn = session(objs, conf("preempt", ["priority"]))
    pr = _plugin(ssn, "priority")
    hi, lo = ssn.jobs["ns/hi"], ssn.jobs["ns/lo"]
    assert pr.job_order(hi, lo) < 0 and ssn.job_compare(hi, lo) < 0
    assert pr.task_order(hi.tasks["ns/hi-1"], hi.tasks["ns/hi-0"]) < 0
    victims, vote = pr.preemptable(hi.tasks["ns/hi-0"], [lo.tasks["ns/lo-0"]])
    assert victims == [lo.tasks["ns/lo-0"]] and vote == ep.PERMIT
    # within a job: only strictly lower task priority
    assert pr.preemptable(hi.tasks["ns/hi-0"], [hi.tasks["ns/hi-1"]])[0] == []
    assert pr.job_starving(hi) and not pr.job_starving(lo)


def test_gang_valid_ready_pipelined_and_roles():
    objs = [node("n1"), queue("q"),
            podgroup("g", "q", min_member=3),
            pod("g-0", "g", node_name="n1"), pod("g-1", "g"), pod("g-2", "g")]
    ssn = session(objs, conf("allocate", ["gang"]))
    gang = _plugin(ssn, "gang")
    job = ssn.jobs["ns/g"]
    assert gang.job_valid(job)[0]
    assert not gang.job_ready(job)
    assert gang.job_pipelined(job) == ep.REJECT
    job.min_available = 4
    ok, msg = gang.job_valid(job)
    assert not ok and "3 valid" in msg
    job.min_available = 1
    assert gang.job_ready(job)
    job.min_task_member = {"ps": 1}  # no task has role ps
    job.min_available = 1
    assert not gang.job_valid(job)[0]


def test_gang_victims_keep_min_member():
    objs = [node("n1"), queue("q"), podgroup("g", "q", min_member=2, phase="Running")]
    objs += [pod(f"g-{i}", "g", node_name="n1") for i in range(4)]
    objs += [podgroup("p", "q"), pod("p-0", "p")]
    ssn = session(objs, conf("preempt", ["gang"]))
    gang = _plugin(ssn, "gang")
    cands = list(ssn.jobs["ns/g"].tasks.values())
    victims, _ = gang.evictable(ssn.jobs["ns/p"].tasks["ns/p-0"], cands)
    assert len(victims) == 2


def test_gang_discard_event_names_placeable_count_and_resource():
    objs = [node("n1", cpu=4, scalars={"nvidia.com/gpu": 1}), node("n2", cpu=4, scalars={"nvidia.com/gpu": 2}),
            queue("q"), podgroup("g", "q", min_member=3)]
    objs += [pod(f"g-w-{i}", "g", cpu=1, scalars={"nvidia.com/gpu": 2}) for i in range(3)]
    r = cycle(objs, conf("enqueue, allocate", ["gang"]))
    (ev,) = [e for e in r.events if e.object == "ns/g"]
    assert "gang 1/3 tasks placeable" in ev.message
    assert "insufficient nvidia.com/gpu (need 2, best node has 1)" in ev.message


def test_conformance_spares_critical_pods():
    objs = [node("n1"), queue("q"), podgroup("g", "q", phase="Running"),
            pod("g-0", "g", node_name="n1", priorityClassName="system-node-critical"), pod("g-1", "g", node_name="n1")]
    ssn = session(objs, conf("preempt", ["conformance"]))
    c = _plugin(ssn, "conformance")
    tasks = list(ssn.jobs["ns/g"].tasks.values())
    assert [t.name for t in c.evictable(tasks[0], tasks)[0]] == ["g-1"]


def test_drf_share_order_and_preemptable():
    objs = [node("n1", cpu=10, memory="10Gi"), queue("q"),
            podgroup("big", "q", phase="Running"), pod("big-0", "big", cpu=6, memory="1Gi", node_name="n1"),
            pod("big-1", "big", cpu=2, memory="1Gi", node_name="n1"),
            podgroup("small", "q"), pod("small-0", "small", cpu=1, memory="1Gi")]
    ssn = session(objs, conf("preempt", ["drf"]))
    drf = _plugin(ssn, "drf")
    big, small = ssn.jobs["ns/big"], ssn.jobs["ns/small"]
    assert drf.shares["ns/big"] == 0.8 and drf.shares["ns/small"] == 0
    assert drf.job_order(small, big) < 0
    # preemptor share after gaining: 0.1; big after losing big-0: 0.2, after big-1 too: 0.0 -> only big-0
    cands = [big.tasks["ns/big-0"], big.tasks["ns/big-1"]]
    victims, _ = drf.preemptable(small.tasks["ns/small-0"], cands)
    assert [v.name for v in victims] == ["big-0"]
    # events keep the share current
    from apportion.framework.statement import Statement

    st = Statement(ssn)
    st.allocate(small.tasks["ns/small-0"], 0)
    assert drf.shares["ns/small"] == 0.1


def test_overcommit_counts_running_gang_shortfall():
    objs = [node("n1", cpu=10), queue("q"),
            podgroup("run", "q", phase="Running", min_member=1, min_resources={"cpu": "4"}),
            pod("run-0", "run", cpu=1, node_name="n1"),
            podgroup("new", "q", phase="Pending", min_resources={"cpu": "7"}), pod("new-0", "new", cpu=7)]
    ssn = session(objs, conf("enqueue", ["overcommit"]))
    oc = _plugin(ssn, "overcommit")
    assert oc.idle.cpu == 12000 - 1000 and oc.inqueue.cpu == 3000
    # 3 + 7 = 10 <= 11: admitted
    assert oc.job_enqueueable(ssn.jobs["ns/new"]) == ep.PERMIT
    oc.job_enqueued(ssn.jobs["ns/new"])
    assert oc.inqueue.cpu == 10000
    assert oc.job_enqueueable(ssn.jobs["ns/new"]) == ep.REJECT


def test_overcommit_factor_argument():
    objs = [node("n1", cpu=10), queue("q"), podgroup("new", "q", phase="Pending", min_resources={"cpu": "14"}),
            pod("new-0", "new", cpu=14)]
    cfg = conf("enqueue", [{"name": "overcommit", "arguments": {"overcommit-factor": 1.5}}])
    assert cycle(objs, cfg).podgroups["ns/new"] == "Inqueue"
    cfg = conf("enqueue", [{"name": "overcommit", "arguments": {"overcommit-factor": 0.5}}])  # < 1 -> 1.2
    assert cycle(objs, cfg).podgroups["ns/new"] == "Pending"
