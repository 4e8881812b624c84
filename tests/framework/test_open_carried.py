"""Property: a session opened from what the last open kept (capacity's ledger, where a changed job taken
in again changes only the fields whose amounts moved and each scalar name's first lister is cached; the
node side, whose exactness is read from a bound carried in the base; docs/semantics.md K18) decides what
a session built from scratch decides (no memo: every queue charged, every task placed), in every field,
session after session, with several scalar names in either order and node amounts near 2**52 and past
2**53; and the carried paths are the ones taken."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_closing import GANG, GROUPS, LEAVES, _tree, twin_sessions

from apportion.engine import _decided, dispatch, run_cache_session
from apportion.framework import open_state
from apportion.framework.open_state import OPEN_MEMO
from apportion.plugins.capacity.ledger import LEDGER_MEMO, Ledger
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater

import k8s

CONFS = {
    "tree": k8s.conf("enqueue, allocate, backfill, reclaim", GANG,
                     ["drf", "predicates", {"name": "capacity", "enableHierarchy": True}, "nodeorder"]),
    "flat": k8s.conf("enqueue, allocate, backfill", GANG, ["drf", "predicates", "capacity", "nodeorder"]),
}
NODES = ["n0", "n1", "n2"]
#: two scalar names: a sum that lists both orders them by their first lister in uid order
A, B = "example.com/a", "example.com/b"
SCALARS = [{}, {A: "1"}, {B: "1"}, {A: "1", B: "2"}, {B: "2", A: "1"}]
#: 16Gi is far from any bound; 3Pi (3 * 2**50 bytes) puts a node's table amounts near 2**52, so the
#: carried bound soon passes it and the table is looked at; 9Pi is past 2**53 (never a base)
MEMORY = ["16Gi", "16Gi", "3Pi", "9Pi"]
#: pods' memory: an odd 2**51 + 1 bytes, of which four on one node sum past 2**53, where float sums
#: round and their order matters: the bound must send such an open back to a full placement
POD_MEMORY = ["1Gi", "2Gi", "1Ti", str(2**51 + 1)]


@st.composite
def an_object(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["Node", "PodGroup", "Pod", "Pod", "Pod", "Pod"]))
    if kind == "Node":
        return k8s.node(draw(st.sampled_from(NODES)), cpu=draw(st.sampled_from([3, 4])),
                        memory=draw(st.sampled_from(MEMORY)), scalars={A: "4", B: "8"})
    if kind == "PodGroup":
        size = draw(st.integers(1, 2))
        return k8s.podgroup(draw(st.sampled_from(GROUPS)), queue=draw(st.sampled_from(LEAVES)),
                            min_member=size, phase=draw(st.sampled_from(["Pending", "Inqueue", "Running"])),
                            min_resources={"cpu": str(size)})
    node = draw(st.sampled_from(["", "", *NODES]))
    phase = draw(st.sampled_from(["Running", "Running", "Succeeded"])) if node else "Pending"
    return k8s.pod(f"p{draw(st.integers(0, 7))}", draw(st.sampled_from(GROUPS)), cpu=draw(st.sampled_from([1, 2])),
                   memory=draw(st.sampled_from(POD_MEMORY)), node_name=node, phase=phase,
                   scalars=draw(st.sampled_from(SCALARS)))


step = st.one_of(st.tuples(st.sampled_from([ADDED, ADDED, MODIFIED, DELETED]), an_object()),
                 st.just(("SESSION", None)), st.just(("SESSION", None)), st.just(("SESSION", None)))

START = [*_tree(), *(k8s.node(n, cpu=4, scalars={A: "4", B: "8"}) for n in NODES),
         k8s.podgroup("g0", queue="a1", min_member=2, phase="Running"),
         k8s.pod("p0", "g0", cpu=1, node_name="n0", scalars={B: "1", A: "1"}),
         k8s.pod("p1", "g0", cpu=1, node_name="n1", scalars={A: "1"}),
         k8s.podgroup("g1", queue="b1", phase="Inqueue"), k8s.pod("p2", "g1", cpu=2, scalars={B: "2"}),
         k8s.podgroup("g2", queue="a2", phase="Pending", min_resources={"cpu": "2"}), k8s.pod("p3", "g2", cpu=2)]


def _session_way(conf: str) -> Any:
    def session(carried: bool, cache: SchedulerCache, sid: str, _: Any) -> Any:
        if not carried:
            cache.memo.clear()  # from scratch: no ledger, no open base, no carried close or report
        result = run_cache_session(cache, CONFS[conf], session_id=sid, reuse=False)
        assert result.session is not None
        dispatch(result, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
        return (_decided(result), [(e.object, e.reason, e.message) for e in result.events],
                result.session.explanations, sorted(result.podgroups.items()))
    return session


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(conf=st.sampled_from(sorted(CONFS)), steps=st.lists(step, min_size=1, max_size=30))
def test_a_carried_open_decides_as_one_built_from_scratch(conf: str, steps: list,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # the self-check compares the ledger with a recount and the node side with a full placement too
    monkeypatch.setenv(check.ENV, "1")
    twin_sessions(START, steps, _session_way(conf), sort_keys=True)


def _cache(*objs: dict) -> SchedulerCache:
    cache = SchedulerCache(report=lambda line: None)
    for o in [*START, *objs]:
        cache.apply(WatchEvent(ADDED, o, "t"))
    return cache


def test_a_job_whose_amounts_did_not_move_leaves_its_queues_as_they_were(monkeypatch: pytest.MonkeyPatch) -> None:
    """A running job whose pod only moves from Bound to Running changes its version but no amount: the
    ledger takes it in again without making its queues dirty, and the next session's attributes of its
    leaf are the very object of the last one."""
    monkeypatch.setenv(check.ENV, "1")
    cache = _cache(k8s.podgroup("g3", queue="a1", phase="Running"),
                   k8s.pod("p4", "g3", cpu=1, node_name="n2", phase="Pending"))
    session = _session_way("tree")
    for i in range(3):
        session(True, cache, f"s{i}", None)
    ledger = cache.memo[LEDGER_MEMO]
    assert isinstance(ledger, Ledger) and "ns/g3" in ledger.entries
    leaf = ledger.base["a1"]
    job = ledger.entries["ns/g3"].job
    cache.apply(WatchEvent(MODIFIED, k8s.pod("p4", "g3", cpu=1, node_name="n2", phase="Running"), "started"))
    taken: list[tuple[str, bool, bool]] = []
    admit = Ledger.admit

    def spy(self: Ledger, job: Any, path: Any, amounts: Any) -> None:
        replacing, dirty = job.uid in self.replacing, dict(self.dirty)
        admit(self, job, path, amounts)
        taken.append((job.uid, replacing, self.dirty == dirty))
    monkeypatch.setattr(Ledger, "admit", spy)
    session(True, cache, "s3", None)
    assert ("ns/g3", True, True) in taken
    assert ledger.entries["ns/g3"].job is not job  # built anew, and taken in again
    assert ledger.base["a1"] is leaf


def test_a_bound_past_2_52_looks_at_the_table_and_stays_carried(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes whose memory is 3Pi: their amounts are exact, but the bound carried from open to open
    soon passes 2**52; the open then looks at the table (exact: carried on, with the bound made
    afresh) rather than falling back to a full placement."""
    monkeypatch.setenv(check.ENV, "1")
    big = [k8s.node(n, cpu=4, memory="3Pi", scalars={A: "4", B: "8"}) for n in NODES]
    cache = _cache(*big)
    looks: list[bool] = []
    exact = open_state._table_exact

    def spy(t: Any) -> bool:
        looks.append(True)
        return exact(t)
    session = _session_way("tree")
    session(True, cache, "s0", None)
    monkeypatch.setattr(open_state, "_table_exact", spy)
    for i in range(1, 4):
        cache.apply(WatchEvent(ADDED, k8s.pod(f"p{10 + i}", "g1", cpu=1, memory="1Pi", node_name=NODES[i % 3]), "t"))
        looks.clear()
        result = run_cache_session(cache, CONFS["tree"], session_id=f"s{i}", reuse=False)
        assert result.session is not None and result.session.open_delta is not None  # carried
        # the bound passed 2**52 (3Pi nodes and a 1Pi pod): the table was looked at beside the self-check
        assert len(looks) >= 2
        base = cache.memo[OPEN_MEMO]
        assert base.bound == open_state._table_bound(base.table)
        dispatch(result, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))


def _checked_after_two_sessions(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A cache under the self-check after two carried sessions of the tree conf (the memo holds a base)."""
    monkeypatch.setenv(check.ENV, "1")
    cache = _cache()
    session = _session_way("tree")
    session(True, cache, "s0", None)
    session(True, cache, "s1", None)
    return cache


def test_a_bound_that_does_not_hold_fails_the_self_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A base whose bound understates its amounts (as a bug would) is caught by the self-check."""
    cache = _checked_after_two_sessions(monkeypatch)
    base = cache.memo[OPEN_MEMO]
    base.table.used[0, 1] = 0.5  # not an integer, and the bound says nothing of it
    cache.apply(WatchEvent(ADDED, k8s.pod("p9", "g1", cpu=1, node_name="n2"), "t"))
    with pytest.raises(check.StateCheckError):
        run_cache_session(cache, CONFS["tree"], session_id="s2", reuse=False)


def test_a_cached_first_lister_that_is_wrong_fails_the_self_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cached first lister of a scalar name is compared with the smallest of its listers."""
    cache = _checked_after_two_sessions(monkeypatch)
    ledger = cache.memo[LEDGER_MEMO]
    s = ledger.sums["root"][1]
    assert A in s.listers
    s.first[A] = ("zz", 9)
    cache.apply(WatchEvent(ADDED, k8s.pod("p9", "g1", cpu=1, node_name="n2", scalars={A: "1"}), "t"))
    with pytest.raises(check.StateCheckError, match="first lister"):
        _session_way("tree")(True, cache, "s2", None)


def test_sums_past_2_53_are_never_carried(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pods of 2**50 + 1, 2**50 + 1 and 2**53 - 3 bytes on one node: the table is exact with the first
    two (below 2**52), and the third takes the node's sums past 2**53, where float sums round: taking
    the first out of a carried table would then leave another amount than a full placement of the
    other two. The bound sends the open that passes 2**52 to look at the table, which is not exact, so
    that open is a full placement and keeps no base: every session decides as one built from scratch."""
    monkeypatch.setenv(check.ENV, "1")
    pods = [k8s.pod(f"big{i}", "g1", cpu=0, memory=str(m), node_name="n0")
            for i, m in enumerate((2**50 + 1, 2**50 + 1, 2**53 - 3))]
    steps: list[tuple[str, Any]] = [(ADDED, pods[0]), (ADDED, pods[1]), ("SESSION", None), ("SESSION", None),
                                    (ADDED, pods[2]), ("SESSION", None), (DELETED, pods[0]), ("SESSION", None),
                                    ("SESSION", None)]
    twin_sessions(START, steps, _session_way("tree"), sort_keys=True)
