"""capacity's tree picker picks what the reference scan picks: whole cycles over random trees (with
share ties, best-effort queues, mixed priorities and running pods) decide the same either way."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.actions import enqueue
from apportion.framework.conf import parse_conf
from apportion.framework.queue_picker import ScanPicker
from apportion.framework.session import Session
from apportion.plugins.capacity import picker as capacity_picker
from spying import record_calls

from k8s import cycle, node, pod, podgroup, queue

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true}, {name: nodeorder}]
"""


@st.composite
def trees(draw: Any, three_levels: bool = False) -> list[dict]:
    objs: list[dict] = [node(f"n{i}", cpu=8, memory="32Gi") for i in range(draw(st.integers(2, 6)))]
    objs.append(queue("root"))
    leaves: list[str] = []
    # interleaved leaf names (q0p0, q0p1, q1p0, ...) make tied parents' leaves alternate by name, the
    # intransitive case the picker must leave to a scan
    interleave = draw(st.booleans())
    priorities = draw(st.integers(0, 3)) == 0
    # a third level under some parents: leaves at two depths below one tied parent
    deep = three_levels or draw(st.booleans())
    for p in range(draw(st.integers(1, 3))):
        pname = f"p{p}"
        des = draw(st.sampled_from([None, "8", "16"]))
        objs.append(queue(pname, parent="root", **({"deserved": {"cpu": des}} if des else {})))
        for c in range(draw(st.integers(1, 4))):
            cname = f"q{c}{pname}" if interleave else f"{pname}-l{c}"
            cdes = draw(st.sampled_from([None, "4", "8"]))
            spec: dict[str, Any] = {"parent": pname}
            if cdes:
                spec["deserved"] = {"cpu": cdes}
            if priorities and draw(st.integers(0, 3)) == 0:
                spec["priority"] = 1
            objs.append(queue(cname, **spec))
            if deep and draw(st.integers(0, 2)) == 0:
                for k in range(draw(st.integers(1, 3))):
                    gname = f"{cname}x{k}"
                    gdes = draw(st.sampled_from([None, "2", "4"]))
                    objs.append(queue(gname, parent=cname, **({"deserved": {"cpu": gdes}} if gdes else {})))
                    leaves.append(gname)
            else:
                leaves.append(cname)
    if draw(st.booleans()):
        objs.append(queue("solo", parent="root", deserved={"cpu": "4"}))
        leaves.append("solo")
    for g in range(draw(st.integers(1, 16))):
        q = draw(st.sampled_from(leaves))
        size = draw(st.integers(1, 3))
        objs.append(podgroup(f"g{g}", queue=q, min_member=size,
                             phase=draw(st.sampled_from(["Pending", "Inqueue"])),
                             min_resources={"cpu": str(size)}))
        running = draw(st.integers(0, 3)) == 0
        for t in range(size):
            objs.append(pod(f"g{g}-{t}", f"g{g}", cpu=draw(st.sampled_from([1, 2])), memory="1Gi",
                            node_name="n0" if running else ""))
    return objs


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The queue names of every fallback scan the tree picker makes, in order."""
    seen: list[list[str]] = []
    real_scan = capacity_picker.pop_best_index

    def spy(items: Any, compare: Any) -> int:
        seen.append([q.name for q in items])
        return real_scan(items, compare)

    real_group = capacity_picker.TreePicker._scan_group

    def spy_group(self: Any, leaves: list[str], home: dict[str, str], *rest: Any) -> str:
        seen.append(list(leaves))
        return real_group(self, leaves, home, *rest)

    monkeypatch.setattr(capacity_picker, "pop_best_index", spy)
    monkeypatch.setattr(capacity_picker.TreePicker, "_scan_group", spy_group)
    return seen


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=trees())
def test_tree_picker_decides_as_the_scan(objs: list[dict], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Session, "fast_queue_pickers", True)
    fast = cycle(objs, CONF).to_json()
    monkeypatch.setattr(Session, "fast_queue_pickers", False)
    assert fast == cycle(objs, CONF).to_json()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=trees(three_levels=True))
def test_tree_picker_decides_as_the_scan_with_leaves_at_two_depths(objs: list[dict],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Leaves under one tied parent whose paths part below it: the group scan compares them by the
    queues where their paths part."""
    monkeypatch.setattr(Session, "fast_queue_pickers", True)
    fast = cycle(objs, CONF).to_json()
    monkeypatch.setattr(Session, "fast_queue_pickers", False)
    assert fast == cycle(objs, CONF).to_json()


def test_tree_picker_descends_without_scanning(monkeypatch: pytest.MonkeyPatch, scans: list[list[str]]) -> None:
    """Every pop is a descent, none a scan; the order is the seeds' (batch, whose parent team-b has
    the lower share, before training)."""
    objs = [node("n0", cpu=100, memory="400Gi"), queue("root"),
            queue("team-a", parent="root", deserved={"cpu": "60"}),
            queue("team-b", parent="root", deserved={"cpu": "40"}),
            queue("training", parent="team-a", deserved={"cpu": "40"}),
            queue("batch", parent="team-b", deserved={"cpu": "30"}),
            podgroup("ta", queue="training"), pod("ta-0", "ta", cpu=1, memory="1Gi", node_name="n0"),
            podgroup("new-a", queue="training"), pod("new-a-0", "new-a", cpu=1),
            podgroup("new-b", queue="batch"), pod("new-b-0", "new-b", cpu=1)]
    order: list[str] = []
    from apportion.actions import allocate

    real_step = allocate.allocate_for_job

    def record(ssn: Any, q: Any, job: Any, tasks: Any) -> Any:
        order.append(q.name)
        return real_step(ssn, q, job, tasks)

    monkeypatch.setattr(allocate, "allocate_for_job", record)
    result = cycle(objs, CONF)
    assert result.binds == {"ns/new-a-0": "n0", "ns/new-b-0": "n0"}
    # team-b 0/40 < team-a 1/60: batch first, then training
    assert order == ["batch", "training"]
    assert scans == []


def test_tied_siblings_resolve_by_name_without_scanning(monkeypatch: pytest.MonkeyPatch,
                                                        scans: list[list[str]]) -> None:
    """Everything at share 0 (the usual start): the order is by leaf name, found by descent."""
    objs = [node("n0", cpu=64, memory="256Gi"), queue("root")]
    for p in ("pb", "pa"):
        objs.append(queue(p, parent="root", deserved={"cpu": "16"}))
        for leaf in ("y", "x"):
            objs.append(queue(f"{p}-{leaf}", parent=p, deserved={"cpu": "8"}))
            objs += [podgroup(f"{p}-{leaf}-j", queue=f"{p}-{leaf}", phase="Pending"), pod(f"{p}-{leaf}-j-0", f"{p}-{leaf}-j", cpu=1)]
    order: list[str] = []
    real_enq = Session.job_enqueued

    def record(self: Session, job: Any) -> None:
        order.append(job.queue)
        real_enq(self, job)

    monkeypatch.setattr(Session, "job_enqueued", record)
    cycle(objs, CONF)
    assert order == ["pa-x", "pa-y", "pb-x", "pb-y"]
    assert scans == []


def test_a_cycle_among_tied_parents_is_left_to_a_scan_of_their_leaves(monkeypatch: pytest.MonkeyPatch,
                                                                      scans: list[list[str]]) -> None:
    """p0 and p1 tie; under p0, q1p0 (with a deserved) beats the best-effort q0p0; across the tie leaves
    compare by name: q0p0 < q0p1 < q1p0. q1p0 > q0p0 > q0p1 > q1p0 is a cycle, so no queue beats all
    and the scan decides; p2 (higher share) is beaten by both and its leaf is not scanned."""
    objs = [node("n0", cpu=64, memory="256Gi"), queue("root"),
            queue("p0", parent="root", deserved={"cpu": "8"}), queue("p1", parent="root", deserved={"cpu": "8"}),
            queue("p2", parent="root", deserved={"cpu": "8"}),
            queue("q0p0", parent="p0"), queue("q1p0", parent="p0", deserved={"cpu": "4"}),
            queue("q0p1", parent="p1", deserved={"cpu": "4"}), queue("q0p2", parent="p2", deserved={"cpu": "4"}),
            podgroup("hold", queue="q0p2"), pod("hold-0", "hold", cpu=1, node_name="n0")]
    for q in ("q0p0", "q1p0", "q0p1", "q0p2"):
        objs += [podgroup(f"{q}-j", queue=q, phase="Pending"), pod(f"{q}-j-0", f"{q}-j", cpu=1)]
    fast = cycle(objs, CONF).to_json()
    assert scans and scans[0] == ["q0p0", "q0p1", "q1p0"]
    monkeypatch.setattr(Session, "fast_queue_pickers", False)
    assert fast == cycle(objs, CONF).to_json()


def _enqueue_order(objs: list[dict], monkeypatch: pytest.MonkeyPatch, fast: bool) -> list[str]:
    """Every job enqueue asks about, in order, with the tree picker or with the reference scan (every
    vote cast: none answered from the answers, K51)."""
    monkeypatch.setattr(enqueue, "answer_votes", False)
    real = Session.job_enqueueable
    asked = record_calls(monkeypatch, Session, "job_enqueueable", lambda self, job: job.uid)
    monkeypatch.setattr(Session, "fast_queue_pickers", fast)
    cycle(objs, CONF)
    monkeypatch.setattr(Session, "job_enqueueable", real)
    return asked


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=trees())
def test_drained_enqueue_asks_in_the_scans_order(objs: list[dict], monkeypatch: pytest.MonkeyPatch) -> None:
    """Enqueue takes the whole order from drain_order when it can: the jobs it asks about, and their
    order, are those of the reference scan's pops (the admission checks depend on that order)."""
    assert _enqueue_order(objs, monkeypatch, True) == _enqueue_order(objs, monkeypatch, False)


def test_drain_order_passes_a_cyclic_tie_that_holds_one_pending_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    """pa and pb tie (1 cpu of 8 each). Under pa, pa-3 (share 0) beats pa-1 (1/4); across the tie leaves
    compare by name: pa-1 < pb-2 < pa-3, and pa-3 < pa-1: a cycle. Only pa-1 has a pending job there,
    so the cycle cannot change when it is reached: the order is known without popping, and pc-4's
    pending job (its parent's share is higher) comes after."""
    objs = [node("n0", cpu=64, memory="256Gi"), queue("root"),
            queue("pa", parent="root", deserved={"cpu": "8"}), queue("pb", parent="root", deserved={"cpu": "8"}),
            queue("pc", parent="root", deserved={"cpu": "4"}),
            queue("pa-1", parent="pa", deserved={"cpu": "4"}), queue("pa-3", parent="pa", deserved={"cpu": "4"}),
            queue("pb-2", parent="pb", deserved={"cpu": "4"}), queue("pc-4", parent="pc", deserved={"cpu": "4"}),
            podgroup("run-a", queue="pa-1", phase="Running"), pod("run-a-0", "run-a", cpu=1, node_name="n0"),
            podgroup("run-b", queue="pb-2", phase="Running"), pod("run-b-0", "run-b", cpu=1, node_name="n0"),
            podgroup("run-c", queue="pc-4", phase="Running"), pod("run-c-0", "run-c", cpu=2, node_name="n0"),
            podgroup("idle-a", queue="pa-3", phase="Inqueue"), pod("idle-a-0", "idle-a", cpu=1),
            podgroup("new-a", queue="pa-1", phase="Pending", min_resources={"cpu": "1"}),
            pod("new-a-0", "new-a", cpu=1),
            podgroup("new-c", queue="pc-4", phase="Pending", min_resources={"cpu": "1"}),
            pod("new-c-0", "new-c", cpu=1)]
    drained: list[list[str]] = []
    real = capacity_picker.TreePicker.drain_order

    def spy(self: Any, has_work: Any) -> Any:
        steps = real(self, has_work)
        if steps is None:
            return None
        drained.append([])

        def record() -> Any:
            for q in steps:
                drained[-1].append(q.name)
                yield q
        return record()

    monkeypatch.setattr(capacity_picker.TreePicker, "drain_order", spy)
    # the tree picker's own drain (without it, no open group here: the drain needs no tree picker)
    from apportion.plugins.capacity.drain_subset import DrainPicker
    monkeypatch.setattr(DrainPicker, "direct", False)
    fast = _enqueue_order(objs, monkeypatch, True)
    assert drained == [["pa-1", "pc-4"]]
    assert fast == _enqueue_order(objs, monkeypatch, False) == ["ns/new-a", "ns/new-c"]


@st.composite
def tied_parents(draw: Any) -> list[dict]:
    """Parents that tie (same deserved, same running use) over leaves whose own keys differ, with leaf
    names interleaved across parents: the open groups, cyclic or not, that drain_order must either
    order as the pops do or leave to a scan; a third level under some leaves."""
    objs: list[dict] = [node("n0", cpu=64, memory="256Gi"), queue("root")]
    parents = draw(st.integers(2, 3))
    used = draw(st.sampled_from([0, 1, 2]))
    leaves: list[tuple[str, str]] = []
    for p in range(parents):
        objs.append(queue(f"p{p}", parent="root", deserved={"cpu": "8"}))
        for c in range(draw(st.integers(1, 4))):
            name = f"q{draw(st.integers(0, 9))}{c}p{p}"
            cdes = draw(st.sampled_from([None, "2", "4"]))
            objs.append(queue(name, parent=f"p{p}", **({"deserved": {"cpu": cdes}} if cdes else {})))
            if draw(st.integers(0, 3)) == 0:
                for k in range(draw(st.integers(1, 2))):
                    objs.append(queue(f"{name}x{k}", parent=name, deserved={"cpu": "2"}))
                    leaves.append((f"{name}x{k}", f"p{p}"))
            else:
                leaves.append((name, f"p{p}"))
    if draw(st.booleans()):
        objs.append(queue("solo", parent="root", deserved={"cpu": "8"}))
        leaves.append(("solo", "root"))
    # the same running use under every parent keeps them tied; which leaf carries it varies
    by_parent: dict[str, list[str]] = {}
    for leaf, parent in leaves:
        by_parent.setdefault(parent, []).append(leaf)
    g = 0
    for parent, names in sorted(by_parent.items()):
        if parent == "root" or not used:
            continue
        carrier = draw(st.sampled_from(names))
        objs += [podgroup(f"r{g}", queue=carrier, phase="Running"),
                 pod(f"r{g}-0", f"r{g}", cpu=used, node_name="n0")]
        g += 1
    for leaf, _ in leaves:
        # several pending jobs in one leaf: it is worked on, pushed back and reached again while the
        # group's set of queues stays as it was (the winners cached on the tree must stand)
        kind = draw(st.sampled_from(["pending", "pending2", "pending4", "idle", "none"]))
        if kind == "none":
            continue
        for _ in range({"pending2": 2, "pending4": 4}.get(kind, 1)):
            phase = "Inqueue" if kind == "idle" else "Pending"
            objs += [podgroup(f"j{g}", queue=leaf, phase=phase, min_resources={"cpu": "1"}),
                     pod(f"j{g}-0", f"j{g}", cpu=1)]
            g += 1
    return objs


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=tied_parents())
def test_drained_enqueue_over_tied_parents_asks_in_the_scans_order(objs: list[dict],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    assert _enqueue_order(objs, monkeypatch, True) == _enqueue_order(objs, monkeypatch, False)


@st.composite
def backlogs(draw: Any) -> tuple[list[dict], list[int], dict[str, int]]:
    """Tied parents (tied_parents) and, per leaf, how many jobs enqueue would admit there (0-5), with
    the leaves listed to the picker in any order: long backlogs in open groups, cyclic or not."""
    objs = draw(tied_parents())
    leaves = sorted(o["metadata"]["name"] for o in objs if o["kind"] == "Queue")
    work = {name: draw(st.integers(0, 5)) for name in leaves}
    order = draw(st.permutations(range(len(leaves))))
    return objs, order, work


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=backlogs())
def test_drain_order_works_through_a_backlog_as_the_scan_pops(case: tuple[list[dict], list[int], dict[str, int]]) -> None:
    """drain_order's steps are the reference scan's pops that find work, one job per pop and the queue
    pushed back to the end: many jobs per leaf, the leaves listed in any order."""
    from k8s import session
    objs, order, work = case
    ssn = session(objs, parse_conf(CONF))
    plugin = next(p for _, p in ssn.plugins if p.name == "capacity")
    leaves = [q for q in ssn.queues.values() if q.name in work and not plugin.attrs[q.name].children
              and q.name != "root"]
    queues = [leaves[i] for i in order if i < len(leaves)]
    ref, left = [], dict(work)
    scan = ScanPicker(queues, ssn.queue_compare)
    while any(left[q.name] for q in scan.items) and len(scan):
        q = scan.pop()
        if not left[q.name]:
            continue
        left[q.name] -= 1
        ref.append(q.name)
        scan.push(q)
    left = dict(work)
    steps = capacity_picker.TreePicker(plugin, queues, ssn.queue_compare).drain_order(lambda n: left[n] > 0)
    if steps is None:
        return  # the picker cannot tell here (not leaves, mixed priorities): enqueue pops instead
    fast = []
    for q in steps:
        left[q.name] -= 1
        fast.append(q.name)
    assert fast == ref


@st.composite
def wide_ties(draw: Any) -> tuple[list[dict], list[int], dict[str, int]]:
    """Parents tied on the same running use over many leaves each (up to ten, names interleaved
    across parents, some with a running pod of their own so that leaf keys differ), a leaf of root
    tied with them at times, per leaf 0-3 jobs and the leaves listed in any order: the long open
    groups of the simulation benchmark, where drain_order works on the group's own lists."""
    objs: list[dict] = [node("n0", cpu=256, memory="1Ti"), queue("root")]
    parents = draw(st.integers(2, 4))
    leaves: list[str] = []
    g = 0
    for p in range(parents):
        objs.append(queue(f"p{p}", parent="root", deserved={"cpu": "16"}))
        carried = False
        for c in range(draw(st.integers(1, 10))):
            name = f"q{draw(st.integers(0, 99)):02d}{c}p{p}"
            cdes = draw(st.sampled_from([None, "2", "4"]))
            objs.append(queue(name, parent=f"p{p}", **({"deserved": {"cpu": cdes}} if cdes else {})))
            leaves.append(name)
            if not carried or draw(st.integers(0, 3)) == 0:
                # each parent runs 2 cpu in all (tied at the root); which leaves carry it varies
                cpu = 2 if not carried else 0
                carried = True
                if cpu:
                    objs += [podgroup(f"r{g}", queue=name, phase="Running"),
                             pod(f"r{g}-0", f"r{g}", cpu=cpu, node_name="n0")]
                    g += 1
    if draw(st.booleans()):
        objs.append(queue("solo", parent="root", deserved={"cpu": "16"}))
        objs += [podgroup(f"r{g}", queue="solo", phase="Running"), pod(f"r{g}-0", f"r{g}", cpu=2, node_name="n0")]
        leaves.append("solo")
    work = {name: draw(st.integers(0, 3)) for name in leaves}
    order = draw(st.permutations(range(len(leaves))))
    return objs, order, work


def _drained(case: tuple[list[dict], list[int], dict[str, int]], flat: bool,
             monkeypatch: pytest.MonkeyPatch) -> list[str] | None:
    from k8s import session
    objs, order, work = case
    monkeypatch.setattr(capacity_picker.TreePicker, "flat_groups", flat)
    ssn = session(objs, parse_conf(CONF))
    plugin = next(p for _, p in ssn.plugins if p.name == "capacity")
    names = [n for n in sorted(work) if n in ssn.queues]
    queues = [ssn.queues[names[i]] for i in order if i < len(names)]
    left = dict(work)
    steps = capacity_picker.TreePicker(plugin, queues, ssn.queue_compare).drain_order(lambda n: left[n] > 0)
    if steps is None:
        return None
    out = []
    for q in steps:
        left[q.name] -= 1
        out.append(q.name)
    return out


def _scanned(case: tuple[list[dict], list[int], dict[str, int]]) -> list[str]:
    from k8s import session
    objs, order, work = case
    ssn = session(objs, parse_conf(CONF))
    names = [n for n in sorted(work) if n in ssn.queues]
    scan = ScanPicker([ssn.queues[names[i]] for i in order if i < len(names)], ssn.queue_compare)
    ref, left = [], dict(work)
    while any(left[q.name] for q in scan.items) and len(scan):
        q = scan.pop()
        if not left[q.name]:
            continue
        left[q.name] -= 1
        ref.append(q.name)
        scan.push(q)
    return ref


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(case=st.one_of(wide_ties(), backlogs()))
def test_flat_groups_drain_as_the_pickers_loop_and_the_scan(case: tuple[list[dict], list[int], dict[str, int]],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """drain_order on an open group's own lists (drain_group.FlatGroup) gives the picker's own loop's
    steps, and both the reference scan's pops that find work."""
    fast = _drained(case, True, monkeypatch)
    slow = _drained(case, False, monkeypatch)
    assert fast == slow
    if fast is not None:
        assert fast == _scanned(case)


def test_wide_ties_reach_flat_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property test above exercises the group lists: a tie of two parents over interleaved leaves
    with work in both is drained through FlatGroup, several leaves at a time."""
    from apportion.plugins.capacity import drain_group
    seen: list[int] = []
    real = drain_group.FlatGroup.steps

    def spy(self: Any, *args: Any) -> Any:
        seen.append(len(self.home))
        return real(self, *args)

    monkeypatch.setattr(drain_group.FlatGroup, "steps", spy)
    objs: list[dict] = [node("n0", cpu=64, memory="256Gi"), queue("root")]
    for p in range(2):
        objs.append(queue(f"p{p}", parent="root", deserved={"cpu": "16"}))
        for c in range(3):
            objs.append(queue(f"q{c}p{p}", parent=f"p{p}", deserved={"cpu": str(2 + c)}))
    work = {f"q{c}p{p}": 1 + (c + p) % 2 for c in range(3) for p in range(2)}
    case = (objs, list(range(6))[::-1], work)
    assert _drained(case, True, monkeypatch) == _scanned(case)
    assert seen == [6]


def _drained_by(case: tuple[list[dict], list[int], dict[str, int]], subset: bool,
                direct: bool = False) -> list[str] | None:
    from apportion.plugins.capacity.drain_subset import DrainPicker

    from k8s import session
    objs, order, work = case
    ssn = session(objs, parse_conf(CONF))
    plugin = next(p for _, p in ssn.plugins if p.name == "capacity")
    names = [n for n in sorted(work) if n in ssn.queues]
    queues = [ssn.queues[names[i]] for i in order if i < len(names)]
    left = dict(work)
    picker: DrainPicker | capacity_picker.TreePicker
    if subset:
        picker = DrainPicker(plugin, queues, ssn.queue_compare)
        picker.direct = direct
    else:
        picker = capacity_picker.TreePicker(plugin, queues, ssn.queue_compare)
    steps = picker.drain_order(lambda n: left[n] > 0)
    if steps is None:
        return None
    out = []
    for q in steps:
        left[q.name] -= 1
        out.append(q.name)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.one_of(wide_ties(), backlogs()))
def test_drain_over_the_reachable_leaves_as_over_every_queue(case: tuple[list[dict], list[int], dict[str, int]]) -> None:
    """The tree picker built over the leaves a drain reads (drain_subset.DrainPicker: root's open
    groups whole, elsewhere the leaves with work) drains as the picker over every queue given."""
    assert _drained_by(case, True) == _drained_by(case, False)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.one_of(wide_ties(), backlogs()))
def test_drain_without_open_groups_needs_no_tree_picker(case: tuple[list[dict], list[int], dict[str, int]]) -> None:
    """The drain's units listed without a tree picker (DrainPicker.direct: leaves with work, open groups
    whole, the tree picker built only to scan an open group) step as the tree picker over the reachable
    leaves and as the one over every queue."""
    assert _drained_by(case, True, direct=True) == _drained_by(case, True) == _drained_by(case, False)


def test_drain_without_open_groups_is_worked_out_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parents on different keys (no open group): the drain is the leaves with work in their order,
    each while it has work, and no tree picker is built; a tie of two parents with work in both below
    (an open group) builds one when the drain reaches it."""
    from apportion.plugins.capacity.drain_subset import DrainPicker

    from k8s import session
    built: list[int] = []
    real = capacity_picker.TreePicker.__init__

    def spy(self: Any, plugin: Any, queues: Any, compare: Any) -> None:
        built.append(len(list(queues)))
        real(self, plugin, queues, compare)

    monkeypatch.setattr(capacity_picker.TreePicker, "__init__", spy)
    monkeypatch.delenv("APPORTION_CHECK_STATE", raising=False)
    for des, open_group in ((["16", "8"], False), (["16", "16"], True)):
        objs: list[dict] = [node("n0", cpu=64, memory="256Gi"), queue("root")]
        for p, d in enumerate(des):
            objs.append(queue(f"p{p}", parent="root", deserved={"cpu": d}))
            for c in range(2):
                objs.append(queue(f"q{c}p{p}", parent=f"p{p}", deserved={"cpu": str(2 + c)}))
        # one cpu running under each parent: tied at root when their deserved are
        objs += [podgroup("r0", queue="q0p1", phase="Running"), pod("r0-0", "r0", cpu=1, node_name="n0"),
                 podgroup("r1", queue="q1p0", phase="Running"), pod("r1-0", "r1", cpu=1, node_name="n0")]
        ssn = session(objs, parse_conf(CONF))
        plugin = next(p for _, p in ssn.plugins if p.name == "capacity")
        left = {"q0p0": 2, "q1p0": 0, "q0p1": 1, "q1p1": 1}
        built.clear()
        picker = DrainPicker(plugin, [ssn.queues[n] for n in sorted(left)], ssn.queue_compare)
        steps = picker.drain_order(lambda n, left=left: left[n] > 0)
        assert steps is not None
        got = []
        for q in steps:
            left[q.name] -= 1
            got.append(q.name)
        assert bool(built) == open_group
        if not open_group:
            # p0's share (1 of 16) is below p1's (1 of 8): p0's leaf with work first, then p1's by
            # their keys (q1p1 runs nothing)
            assert got == ["q0p0", "q0p0", "q1p1", "q0p1"]


def test_the_reachable_leaves_leave_out_idle_leaves_outside_open_groups() -> None:
    """A parent tied with no other keeps only its leaves with work; a tied pair with work in both
    is kept whole (every leaf takes part in its scan)."""
    from apportion.plugins.capacity.drain_subset import DrainPicker

    from k8s import session
    objs: list[dict] = [node("n0", cpu=64, memory="256Gi"), queue("root")]
    for p, des in enumerate(["16", "16", "8"]):
        objs.append(queue(f"p{p}", parent="root", deserved={"cpu": des}))
        for c in range(3):
            objs.append(queue(f"q{c}p{p}", parent=f"p{p}", deserved={"cpu": "2"}))
    objs += [podgroup("r0", queue="q0p2", phase="Running"), pod("r0-0", "r0", cpu=4, node_name="n0")]
    ssn = session(objs, parse_conf(CONF))
    plugin = next(p for _, p in ssn.plugins if p.name == "capacity")
    queues = [ssn.queues[f"q{c}p{p}"] for p in range(3) for c in range(3)]
    work = {"q0p0", "q1p1", "q2p2"}
    reach = DrainPicker(plugin, queues, ssn.queue_compare)._reach(lambda n: n in work)
    assert reach is not None
    assert [q.name for q in reach] == ["q0p0", "q1p0", "q2p0", "q0p1", "q1p1", "q2p1", "q2p2"]
