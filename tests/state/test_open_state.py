"""Property: a session opened from the last open's node side (framework/open_state.py), the last node
view (plugins/k8s_view.py) and drf's last shares has the node table, task maps, node view, nodeorder
facts and drf shares of a session opened in full, whatever the events and sessions in between (jobs kept, changed, gone; nodes
added, changed, deleted; other schedulers' pods; GPUs; amounts that are not integers)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.cluster.model import PodGroupPhase
from apportion.engine import dispatch, open_session, run_session
from apportion.framework import open_state
from apportion.framework.open_reference import differences
from apportion.framework.open_state import OPEN_MEMO
from apportion.plugins.k8s_matching import NodeIndex
from apportion.plugins.k8s_view import VIEW_MEMO, NodeView
from apportion.plugins.nodeorder import _NodeFacts
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater

import k8s

CONF = k8s.conf("enqueue, allocate, backfill, preempt, reclaim", ["priority", "gang", "conformance"],
                ["drf", "predicates", "proportion", "nodeorder"])
NODES = ["n0", "n1", "n2", "n3"]
GROUPS = ["g0", "g1", "g2", "g3"]
GPU = "nvidia.com/gpu"


@st.composite
def an_object(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["Node", "PodGroup", "Pod", "Pod", "Pod", "Pod", "Pod"]))
    if kind == "Node":
        scalars = {GPU: str(draw(st.integers(1, 4)))} if draw(st.booleans()) else {}
        labels = {"zone": draw(st.sampled_from(["a", "b"]))}
        return k8s.node(draw(st.sampled_from(NODES)), cpu=draw(st.sampled_from([4, 8, "7500m"])), scalars=scalars,
                        labels=labels)
    if kind == "PodGroup":
        return k8s.podgroup(draw(st.sampled_from(GROUPS)), queue=draw(st.sampled_from(["q0", "q1"])),
                            min_member=draw(st.integers(0, 2)),
                            phase=draw(st.sampled_from(["Pending", "Inqueue", "Running"])))
    node = draw(st.sampled_from(["", "", *NODES]))
    # "1500u" is 1.5 millicores: not an integer, so no open may start from a base holding it
    cpu = draw(st.sampled_from([1, 2, "500m", "500m", "1500u"]))
    scalars = {GPU: "1"} if draw(st.integers(0, 3)) == 0 else {}
    pod = k8s.pod(f"p{draw(st.integers(0, 11))}", draw(st.sampled_from([*GROUPS, None])), cpu=cpu,
                  node_name=node, scalars=scalars,
                  phase=draw(st.sampled_from(["Running", "Running", "Succeeded"])) if node else "Pending",
                  deleting=draw(st.integers(0, 4)) == 0 if node else False)
    if draw(st.integers(0, 5)) == 0:
        pod["spec"]["schedulerName"] = "default-scheduler"
    return pod


step = st.one_of(
    st.tuples(st.sampled_from([ADDED, ADDED, MODIFIED, MODIFIED, DELETED]), an_object()),
    st.just(("SESSION", None)),
    st.just(("SESSION", None)),
)


def _base(cache: SchedulerCache) -> None:
    for o in [*(k8s.node(n, cpu=8) for n in NODES), k8s.queue("q0"), k8s.queue("q1"),
              *(k8s.podgroup(g, queue="q0") for g in GROUPS)]:
        cache.apply(WatchEvent(ADDED, o))


def _assert_as_full(ssn) -> None:  # type: ignore[no-untyped-def]
    assert differences(ssn) == []
    view = ssn.shared["node_view"]
    full = NodeView(ssn.nodes)
    assert np.array_equal(view.count, full.count) and np.array_equal(view.sums, full.sums)
    held = ssn.memo.get(VIEW_MEMO) if ssn.memo is not None else None
    if held is not None:  # the bound the next open starts from bounds the sums kept (K18's, for the view)
        assert held.bound < 2**52 and (not held.sums.size or held.bound >= np.abs(held.sums).max())
    plugin = next(p for o, p in ssn.plugins if o.name == "nodeorder")
    facts = _NodeFacts.read(ssn)
    assert np.array_equal(plugin.alloc, facts.alloc) and plugin._alloc_rows == facts.alloc_rows
    assert (plugin.cpu_mem_everywhere, plugin.no_soft_taints) == (facts.cpu_mem_everywhere, facts.no_soft_taints)
    assert plugin.index.same_nodes(ssn.nodes) and plugin.index.n == NodeIndex(ssn.nodes).n
    for job in ssn.jobs.values():
        for t in job.tasks.values():
            assert t.initial_status is t.status
    drf = next(p for o, p in ssn.plugins if o.name == "drf")
    want = {uid: drf._sum_and_share(job) for uid, job in ssn.jobs.items()}
    assert drf.shares == {uid: share for uid, (_, share) in want.items()}
    assert {u: (a.cpu, a.memory, a.scalars) for u, a in drf.allocated.items()} == {
        u: (a.cpu, a.memory, a.scalars) for u, (a, _) in want.items()}


def _run(steps: list, monkeypatch: pytest.MonkeyPatch, deltas: list | None = None) -> int:
    # the self-check would raise first; the comparison here is the test's own
    monkeypatch.delenv(check.ENV, raising=False)
    cache = SchedulerCache(report=lambda line: None)
    _base(cache)
    incremental = 0
    flips: list[int] = []
    for i, (typ, obj) in enumerate(steps):
        if typ == "PHASE":
            flips.append(obj)
            continue
        if typ != "SESSION":
            cache.apply(WatchEvent(typ, obj, f"event {i}"))
            continue
        snap = cache.snapshot(keep=True)
        snap.memo = cache.memo
        if flips and snap.jobs:
            # a job's phase changed in place, as a session's enqueue does (K35): compared in full
            snap.jobs_delta = None
            uids = sorted(snap.jobs)
            for at in flips:
                job = snap.jobs[uids[at % len(uids)]]
                job.phase = PodGroupPhase.INQUEUE if job.phase is not PodGroupPhase.INQUEUE else PodGroupPhase.RUNNING
        flips.clear()
        ssn = open_session(snap, CONF, session_id=f"s{i}")
        incremental += ssn.open_delta is not None
        if deltas is not None:
            deltas.append(ssn.open_delta)
        _assert_as_full(ssn)
        result = run_session(ssn)
        # what the session changed must not reach what the next open starts from
        base = cache.memo.get(OPEN_MEMO)
        if base is not None:
            assert all(list(n) == [e[1].key for e in r] or len(set(n)) < len(r)
                       for n, r in zip(base.node_tasks, base.rows))
        dispatch(result, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
    return incremental


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(step, min_size=1, max_size=40))
def test_an_incremental_open_is_a_full_one(monkeypatch: pytest.MonkeyPatch, steps: list) -> None:
    _run(steps, monkeypatch)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(step, min_size=1, max_size=40))
def test_an_incremental_open_without_pairing_is_a_full_one(monkeypatch: pytest.MonkeyPatch, steps: list) -> None:
    """The reference of K31: every placement of a changed job taken out and put in again."""
    monkeypatch.setattr(open_state, "PAIR_PLACEMENTS", False)
    _run(steps, monkeypatch)


def test_a_changed_job_placed_as_before_is_not_placed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """K31: when one pod of a running job completes, the job is built again, and its other tasks,
    placed as before, are paired with their last placements: the table takes out the completed pod
    alone, and the nodes' maps hold the new task objects (checked against a full open by `_run`)."""
    running = [(ADDED, k8s.pod(f"p{i}", "g0", node_name=NODES[i % 4], scalars={GPU: "1"} if i % 2 else {}))
               for i in range(6)]
    steps = [*running, (ADDED, k8s.pod("q0", "g1", node_name="n0")), ("SESSION", None), ("SESSION", None),
             (MODIFIED, k8s.pod("p1", "g0", node_name="n1", phase="Succeeded", scalars={GPU: "1"})),
             ("SESSION", None), (ADDED, k8s.pod("p9", "g0", node_name="n2")), ("SESSION", None)]
    deltas: list = []
    assert _run(steps, monkeypatch, deltas) == 3
    done, grown = deltas[2], deltas[3]
    assert "ns/g0" in done.changed and [e[1].key for e in done.removed] == ["ns/p1"] and not done.added
    assert sorted(o[1].key for o, _ in done.replaced) == [f"ns/p{i}" for i in (0, 2, 3, 4, 5)]
    assert all(o[1] is not n[1] and o[1].key == n[1].key and o[0] == n[0] for o, n in done.replaced)
    assert not grown.removed and [e[1].key for e in grown.added] == ["ns/p9"]


def test_the_incremental_open_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """The incremental path runs (not only agrees): sessions after a pod completes, a pod is added and
    a job is deleted start from the last open; a node's change sends the next one back to a full one."""
    running = [(ADDED, k8s.pod(f"p{i}", GROUPS[i % 4], node_name=NODES[i % 4], scalars={GPU: "1"} if i % 3 else {}))
               for i in range(12)]
    steps = [*running, ("SESSION", None), ("SESSION", None),
             (MODIFIED, k8s.pod("p0", "g0", node_name="n0", phase="Succeeded")), ("SESSION", None),
             (ADDED, k8s.pod("p20", "g1")), ("SESSION", None),
             (DELETED, k8s.podgroup("g2", queue="q0")), ("SESSION", None),
             (MODIFIED, k8s.node("n1", cpu=6)), ("SESSION", None), ("SESSION", None)]
    assert _run(steps, monkeypatch) == 5


def test_the_self_check_catches_a_stale_base(monkeypatch: pytest.MonkeyPatch) -> None:
    """A base edited behind the open's back (as a bug would) fails the self-check loudly."""
    monkeypatch.setenv(check.ENV, "1")
    cache = SchedulerCache(report=lambda line: None)
    _base(cache)
    for i in range(4):
        cache.apply(WatchEvent(ADDED, k8s.pod(f"p{i}", "g0", node_name=NODES[i])))
    for n in range(2):
        snap = cache.snapshot(keep=True)
        snap.memo = cache.memo
        run_session(open_session(snap, CONF, session_id=f"s{n}"))
    cache.memo[OPEN_MEMO].table.used[0, 0] += 1.0
    cache.apply(WatchEvent(ADDED, k8s.pod("p9", "g1", node_name="n1")))
    snap = cache.snapshot(keep=True)
    snap.memo = cache.memo
    with pytest.raises(check.StateCheckError):
        open_session(snap, CONF, session_id="s9")


def test_a_changed_job_keeps_its_place_in_a_node_task_map(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node shared by a job that changed and a kept job after it lists the changed job's tasks
    first, as a full open does (preempt and reclaim visit a node's tasks in that order)."""
    steps = [(ADDED, k8s.pod("a0", "g0", node_name="n0")), (ADDED, k8s.pod("b0", "g1", node_name="n0")),
             (ADDED, k8s.pod("b1", "g1", node_name="n0")), ("SESSION", None), ("SESSION", None),
             (ADDED, k8s.pod("a1", "g0", node_name="n0")), ("SESSION", None)]
    assert _run(steps, monkeypatch) == 2


def test_state_kept_from_an_older_open_is_not_taken_for_the_last_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions without the node view after a full open lost the base: the view kept from before the
    loss must not be taken for the last open's (generations are unique in the process)."""
    monkeypatch.delenv(check.ENV, raising=False)
    cache = SchedulerCache(report=lambda line: None)
    _base(cache)
    no_view = k8s.conf("enqueue, allocate", ["priority", "gang"], ["drf", "proportion"])
    for i in range(4):
        cache.apply(WatchEvent(ADDED, k8s.pod(f"p{i}", GROUPS[i], node_name=NODES[i])))

    def session(conf, n: int, nodes_key: bool = True):  # type: ignore[no-untyped-def]
        snap = cache.snapshot(keep=True)
        snap.memo = cache.memo
        if not nodes_key:
            snap.nodes_key = None
        ssn = open_session(snap, conf, session_id=f"s{n}")
        if "node_view" in ssn.shared:
            _assert_as_full(ssn)
        run_session(ssn)

    session(CONF, 1)
    session(CONF, 2)  # the node view is kept from here
    # as many pods on n0 as before, with other requests: only the sums tell the views apart
    cache.apply(WatchEvent(DELETED, k8s.pod("p0", "g0", node_name="n0")))
    cache.apply(WatchEvent(ADDED, k8s.pod("p7", "g2", node_name="n0", cpu=3)))
    session(no_view, 3, nodes_key=False)  # the base is lost, the view is not rebuilt
    session(no_view, 4)  # a full open again
    session(no_view, 5)
    cache.apply(WatchEvent(ADDED, k8s.pod("p9", "g1", node_name="n2")))
    session(CONF, 6)  # starts from open 5, for which no view was kept


def _summary(delta) -> tuple | None:  # type: ignore[no-untyped-def]
    """An open's delta by keys and rows (the twin runs' objects differ, their outcome must not)."""
    if delta is None:
        return None
    return (delta.since is not None, list(delta.gone), list(delta.changed),
            [(e[0], e[1].key, e[2], e[4], e[5]) for e in delta.removed],
            [(e[0], e[1].key, e[2], e[4], e[5]) for e in delta.added],
            [(o[0], o[1].key, n[1].key, n[2]) for o, n in delta.replaced])


def _same_either_way(monkeypatch: pytest.MonkeyPatch, switch: str, steps: list) -> None:
    """The opens over `steps` with open_state's `switch` on take out, put in and replace what they do with
    it off (`_run` compares each with a full open). Running jobs come first, which the cache hands out
    again, so that a phase moved in place has kept jobs to reach; the switch is set for each example
    (the fixture undoes its changes only after the last one)."""
    steps = [*((ADDED, k8s.pod(f"r{i}", GROUPS[i % 4], node_name=NODES[i % 4], scalars={GPU: "1"} if i % 3 else {}))
               for i in range(8)), ("SESSION", None), ("SESSION", None), *steps]
    seen: list[list] = []
    for on in (True, False):
        monkeypatch.setattr(open_state, switch, on)
        opens: list = []
        _run(steps, monkeypatch, opens)
        seen.append([_summary(d) for d in opens])
    assert seen[0] == seen[1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(step, step, step, st.tuples(st.just("PHASE"), st.integers(0, 7))), min_size=1, max_size=40))
def test_a_job_placed_as_held_is_the_walked_one(monkeypatch: pytest.MonkeyPatch, steps: list) -> None:
    """K35: an open that keeps the held placements of a changed job whose tasks did not move (its
    phase alone did) takes out, puts in and replaces what the walk over its tasks does, and both are
    a full open (`_run` compares each with one)."""
    _same_either_way(monkeypatch, "KEEP_HELD", steps)


def test_a_job_whose_phase_alone_moved_is_placed_as_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """K35: a job handed out again as the same object with the same task statuses and another phase
    (a session's enqueue changes a waiting job's phase in place; the simulator hands such a job out
    again) keeps its held placements as they are: no task of it is walked or paired, and the open is
    a full one all the same."""
    monkeypatch.delenv(check.ENV, raising=False)
    kept: list[str] = []
    real = open_state.placed_as_held

    def counted(job, held):  # type: ignore[no-untyped-def]
        got = real(job, held)
        if got:
            kept.append(job.uid)
        return got

    monkeypatch.setattr(open_state, "placed_as_held", counted)
    cache = SchedulerCache(report=lambda line: None)
    _base(cache)
    for i in range(6):
        cache.apply(WatchEvent(ADDED, k8s.pod(f"p{i}", GROUPS[i % 2], node_name=NODES[i % 4],
                                              scalars={GPU: "1"} if i % 3 else {})))
    deltas = []
    for n in range(3):
        snap = cache.snapshot(keep=True)
        snap.memo = cache.memo
        if n == 2:
            # every job compared with the last open's (the cache's delta names none of these)
            snap.jobs_delta = None
            job = snap.jobs["ns/g0"]
            job.phase = PodGroupPhase.INQUEUE if job.phase is not PodGroupPhase.INQUEUE else PodGroupPhase.RUNNING
        ssn = open_session(snap, CONF, session_id=f"s{n}")
        deltas.append(ssn.open_delta)
        _assert_as_full(ssn)
        dispatch(run_session(ssn), CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
    d = deltas[2]
    assert kept == ["ns/g0"] and "ns/g0" in d.changed
    assert not [e for e in d.removed + d.added if e[4] == "ns/g0"]
    assert not [o for o, _ in d.replaced if o[4] == "ns/g0"]


NAME_SETS = [frozenset(), frozenset({GPU}), frozenset({"example.com/fpga"}), frozenset({GPU, "example.com/fpga"})]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_scalar_counts_left_as_they_were_are_the_counted_ones(data: st.DataObject) -> None:
    """`_scalar_counts` with `NET_COUNTS` (a changed job listing the names it was held with leaves them
    as they were) against counting every job out and in: the same positive counts, and the base's own
    counts when no job's names moved."""
    from collections import Counter
    from types import SimpleNamespace

    held_names = data.draw(st.lists(st.sampled_from(NAME_SETS), max_size=8))
    held = {f"j{i}": (None, 0, [], ns, None) for i, ns in enumerate(held_names)}
    counts: Counter[str] = Counter()
    for h in held.values():
        counts.update(h[3])
    base = SimpleNamespace(jobs=held, scalar_counts=+counts)
    fate = data.draw(st.lists(st.sampled_from(["kept", "gone", "same", "equal", "other"]),
                              min_size=len(held), max_size=len(held)))
    gone = [uid for uid, f in zip(held, fate) if f != "kept"]
    names = {}
    for uid, f in zip(held, fate):
        if f == "same":
            names[uid] = held[uid][3]
        elif f == "equal":
            names[uid] = frozenset(set(held[uid][3]))
        elif f == "other":
            names[uid] = data.draw(st.sampled_from(NAME_SETS))
    for i in range(data.draw(st.integers(0, 3))):
        names[f"new{i}"] = data.draw(st.sampled_from(NAME_SETS))
    got = open_state._scalar_counts(base, gone, names)  # type: ignore[arg-type]
    try:
        open_state.NET_COUNTS = False
        want = open_state._scalar_counts(base, gone, names)  # type: ignore[arg-type]
    finally:
        open_state.NET_COUNTS = True
    assert dict(got) == dict(want) and all(c > 0 for c in got.values())
    if all(f in ("kept", "same", "equal") for f in fate) and not any(u.startswith("new") for u in names):
        assert got is base.scalar_counts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(step, step, step, st.tuples(st.just("PHASE"), st.integers(0, 7))), min_size=1, max_size=40))
def test_an_open_with_counts_left_as_they_were_is_the_counted_one(monkeypatch: pytest.MonkeyPatch,
                                                                   steps: list) -> None:
    """The open with `NET_COUNTS` takes out, puts in and replaces what the open counting every job's
    names out and in does, and both are a full open (`_run` compares each with one)."""
    _same_either_way(monkeypatch, "NET_COUNTS", steps)
