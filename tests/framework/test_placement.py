"""The placement cache changes speed, never decisions: random sessions decide the same with it and
without it (binds, pipelines, evictions, phases, queues and every explanation)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.cluster.node_table import NodeTable
from apportion.framework import extension as ep
from apportion.framework import node_choice, placement
from apportion.framework.conf import parse_conf
from apportion.framework.node_choice import NodeChoice
from apportion.framework.placement import PlacementCache
from apportion.state import check

from k8s import cycle, node, pod, podgroup, queue

CONFS = {
    "default": None,
    "binpack-capacity": """
actions: "enqueue, allocate, reclaim, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: capacity}, {name: nodeorder}, {name: binpack}]
""",
    "weights": """
actions: "allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins:
  - {name: predicates}
  - {name: proportion}
  - name: nodeorder
    arguments: {leastrequested.weight: 0, mostrequested.weight: 2, balancedresource.weight: 3}
""",
}

SHAPES = [(1, "1Gi"), (2, "2Gi"), (2, "8Gi"), (4, "4Gi"), ("500m", "512Mi")]


@st.composite
def clusters(draw: Any) -> list[dict]:
    objs: list[dict] = []
    n_nodes = draw(st.integers(2, 9))
    for i in range(n_nodes):
        kw: dict[str, Any] = {"labels": {"zone": f"z{i % 3}"}}
        taint = draw(st.sampled_from([None, None, "NoSchedule", "PreferNoSchedule"]))
        if taint:
            kw["taints"] = [{"key": "dedicated", "value": "gpu", "effect": taint}]
        if draw(st.integers(0, 9)) == 0:
            kw["unschedulable"] = True
        if i % 2:
            kw["scalars"] = {"nvidia.com/gpu": "2"}
        objs.append(node(f"n{i}", cpu=draw(st.sampled_from([4, 8, 16])), memory=draw(st.sampled_from(["8Gi", "16Gi"])),
                         pods=draw(st.sampled_from([3, 110])), **kw))
    objs += [queue("qa", weight=2, deserved={"cpu": "20", "memory": "40Gi"}),
             queue("qb", weight=1, deserved={"cpu": "10", "memory": "20Gi"})]
    for g in range(draw(st.integers(1, 8))):
        size = draw(st.integers(1, 6))
        q = draw(st.sampled_from(["qa", "qb"]))
        objs.append(podgroup(f"g{g}", queue=q, min_member=draw(st.integers(1, size)),
                             phase=draw(st.sampled_from(["Inqueue", "Running", "Pending"]))))
        cpu, mem = draw(st.sampled_from(SHAPES))
        extra: dict[str, Any] = {}
        if draw(st.booleans()):
            extra["nodeSelector"] = {"zone": draw(st.sampled_from(["z0", "z1", "z2"]))}
        if draw(st.booleans()):
            extra["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        if draw(st.integers(0, 3)) == 0:
            extra["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["z1"]}]}}]}}
        gpu = {"scalars": {"nvidia.com/gpu": "1"}} if draw(st.integers(0, 4)) == 0 else {}
        for t in range(size):
            running = draw(st.integers(0, 4)) == 0
            where = f"n{draw(st.integers(0, n_nodes - 1))}" if running else ""
            deleting = running and draw(st.booleans())
            objs.append(pod(f"g{g}-{t}", f"g{g}", cpu=cpu, memory=mem, node_name=where, deleting=deleting,
                            **gpu, **extra))
    return objs


def _decide(objs: list[dict], conf: str | None, cached: bool, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setattr(PlacementCache, "enabled", cached)
    return cycle(objs, conf).to_json()


@pytest.mark.parametrize(("top", "share", "row_refresh"), [(2, 10**6, 12), (32, 10**6, 0), (1, 3, 1)])
@pytest.mark.parametrize("conf", sorted(CONFS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(objs=clusters())
def test_cache_decides_as_the_full_recomputation(conf: str, top: int, share: int, row_refresh: int,
                                                 objs: list[dict], monkeypatch: pytest.MonkeyPatch) -> None:
    # top=2 makes the ranked prefix shorter than the node list, so it runs empty and is re-ranked;
    # share=3 sizes it by the node count instead (a third of the nodes, at least one); row_refresh 0
    # refreshes touched rows with the array functions always, 12 (these clusters have at most 9 nodes)
    # one node at a time always
    monkeypatch.setattr(placement, "TOP", top)
    monkeypatch.setattr(placement, "TOP_SHARE", share)
    monkeypatch.setattr(placement, "ROW_REFRESH", row_refresh)
    with_cache = _decide(objs, CONFS[conf], True, monkeypatch)
    without = _decide(objs, CONFS[conf], False, monkeypatch)
    assert with_cache == without


@pytest.mark.parametrize("conf", sorted(CONFS))
@settings(max_examples=40, deadline=None)
@given(objs=clusters())
def test_one_node_functions_equal_the_array_functions(conf: str, objs: list[dict]) -> None:
    """The plugins' one-node answers (the cache's refresh) equal their array answers on every node."""
    from k8s import session

    text = CONFS[conf]
    ssn = session(objs, parse_conf(text) if text else None)
    rows = np.arange(len(ssn.nodes))
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            for point in (ep.PREDICATE, ep.NODE_ORDER):
                for _, opt, fn in ssn.consulted(point):
                    row_fn = ssn.node_row_fns.get(opt.name)
                    if row_fn is None:
                        continue
                    full = fn(task, rows)
                    for r in rows.tolist():
                        got = row_fn(task, r)
                        if point == ep.PREDICATE:
                            assert got == (bool(full.ok[r]), bool(full.unresolvable[r]))
                        else:
                            assert got == float(full[r]) and isinstance(got, float)


def test_cache_is_used_and_refreshes_only_touched_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten identical tasks on four nodes: one full computation, then a one-node refresh per placement."""
    objs = [node(f"n{i}", cpu=8) for i in range(4)] + [podgroup("g", min_member=10)]
    objs += [pod(f"g-{t}", "g", cpu=2, memory="1Gi") for t in range(10)]
    computed: list[int] = []
    real = PlacementCache._compute

    def spy(self: PlacementCache, task: Any, rows: Any, pos: int, *rest: Any) -> Any:
        computed.append(len(rows))
        return real(self, task, rows, pos, *rest)

    refreshed: list[int] = []
    real_row = PlacementCache._row

    def spy_row(self: PlacementCache, task: Any, row: int, *rest: Any) -> Any:
        refreshed.append(row)
        return real_row(self, task, row, *rest)

    monkeypatch.setattr(PlacementCache, "_compute", spy)
    monkeypatch.setattr(PlacementCache, "_row", spy_row)
    result = cycle(objs)
    assert len(result.binds) == 10
    # least-requested spreads the tasks: n0..n3 get 3, 3, 2, 2 (ties to the smaller name)
    assert sorted(result.binds.values()) == ["n0"] * 3 + ["n1"] * 3 + ["n2"] * 2 + ["n3"] * 2
    assert computed == [4]
    # each refresh is the node the previous task went to
    assert refreshed == [0, 1, 2, 3, 0, 1, 2, 3, 0]


def test_a_normalised_score_turns_the_cache_off() -> None:
    """Preferred node affinity is normalised over the candidates: no placement key for that task."""
    from k8s import session

    objs = [node("n0", labels={"zone": "z1"}), node("n1"), podgroup("g")]
    objs.append(pod("g-0", "g", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}}]}}))
    objs.append(pod("h-0", None))
    ssn = session(objs)
    tasks = {t.name: t for j in ssn.jobs.values() for t in j.tasks.values()}
    assert ssn.placement.key(tasks["g-0"]) is None
    assert ssn.placement.key(tasks["h-0"]) is not None


_COLUMNS = ["cpu", "memory", "nvidia.com/gpu", "pods"]
# amounts near the rule's 0.1 tolerance and its edges, as well as plain ones
_AMOUNTS = st.one_of(st.sampled_from([0.0, 0.05, 0.1, 0.15, 1.0, 2.0, 2.05, 1e9]),
                     st.floats(-5, 5e9, allow_nan=False), st.just(float("nan")))


@settings(max_examples=300, deadline=None)
@given(data=st.data(), n_rows=st.integers(0, 7))
def test_short_summary_equals_the_column_by_column_reference(data: Any, n_rows: int) -> None:
    """The failure summary's resource part, all columns at once, is the column-by-column one exactly
    (counts, best amounts, order), NaN and empty tables included."""
    from types import SimpleNamespace

    from apportion.framework.node_choice import NodeChoice

    ssn = SimpleNamespace(table=SimpleNamespace(columns=_COLUMNS))
    vec = np.array(data.draw(st.lists(_AMOUNTS, min_size=4, max_size=4)))
    future = np.array(data.draw(st.lists(st.lists(_AMOUNTS, min_size=4, max_size=4), min_size=n_rows,
                                         max_size=n_rows))).reshape(n_rows, 4)
    cols = np.array(sorted(set(data.draw(st.lists(st.integers(0, 3), max_size=4)))), dtype=np.int64)
    fast = NodeChoice.short_summary(ssn, vec, cols, future)  # type: ignore[arg-type]
    reference = NodeChoice.short_summary_reference(ssn, vec, cols, future)  # type: ignore[arg-type]
    assert fast == reference


#: node-order sums take few distinct values; -0.0 and 0.0 tie, as do repeats of one value
SCORES = st.sampled_from([0.0, -0.0, 1.0, 2.5, 2.5, 100.0, 400.0, 406.0, -3.0])


@settings(max_examples=300, deadline=None)
@given(data=st.data(), n=st.integers(0, 60), top=st.integers(1, 8), share=st.integers(1, 20))
def test_rank_equals_the_partition_reference(data: Any, n: int, top: int, share: int) -> None:
    """`_Answers.rank` (one stable sort per class) ranks as `rank_reference` (a partition at the cut, then
    a lexsort): the same `top`, `in_top` and `bound`, with ties and signed zeros among the scores and
    cuts inside either class."""
    bools = st.lists(st.booleans(), min_size=n, max_size=n)
    fit, idle_fit, ok = (np.array(data.draw(bools), dtype=bool) for _ in range(3))
    scores = np.array(data.draw(st.lists(SCORES, min_size=n, max_size=n)), dtype=float)
    saved = placement.TOP, placement.TOP_SHARE
    placement.TOP, placement.TOP_SHARE = top, share
    try:
        fast = placement._Answers(0, fit.copy(), idle_fit.copy(), ok.copy(), np.zeros(n, dtype=bool), scores.copy())
        ref = placement._Answers(0, fit.copy(), idle_fit.copy(), ok.copy(), np.zeros(n, dtype=bool), scores.copy())
        ref.rank_reference()
    finally:
        placement.TOP, placement.TOP_SHARE = saved
    # repr: -0.0 and 0.0 compare equal, and the ranking must keep the very score
    assert repr(fast.top) == repr(ref.top)
    assert fast.in_top == ref.in_top and repr(fast.bound) == repr(ref.bound)
    assert len(fast.top) == min(int((fit & ok).sum()), max(top, n // share))


def test_a_nan_score_ranks_nothing_and_leaves_the_choice_to_the_full_path() -> None:
    """With a NaN score `rank` keeps no ranking (the reference may fail on one) and `choose` answers None."""
    n = 8
    scores = np.full(n, 5.0)
    scores[3] = float("nan")
    saved = placement.TOP
    placement.TOP = 2
    try:
        answers = placement._Answers(0, np.ones(n, bool), np.ones(n, bool), np.ones(n, bool), np.zeros(n, bool),
                                     scores)
    finally:
        placement.TOP = saved
    assert answers.nan and answers.top == [] and answers.in_top == {} and answers.bound is placement._ALL


def _decide_choosing(objs: list[dict], conf: str | None, lean: bool, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setattr(node_choice, "LEAN_CHOICE", lean)
    return cycle(objs, conf).to_json()


@pytest.mark.parametrize(("top", "row_refresh"), [(32, 12), (2, 0)])
@pytest.mark.parametrize("conf", sorted(CONFS))
# 25 clusters for each of the six parametrizations: each example runs two cycles, the lean one under
# the self-check (every choice also made step by step), and 60 took a minute of the suite's CPU
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(objs=clusters())
def test_lean_node_choice_decides_as_the_step_by_step_choice(conf: str, top: int, row_refresh: int,
                                                            objs: list[dict],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`choose_node` (failures looked up only when kept, the key made once, the first resource test handed
    to the cache) decides and explains as `choose_node_reference` on random sessions; the lean run is
    made under the self-check, which makes every choice both ways and compares them."""
    monkeypatch.setattr(placement, "TOP", top)
    monkeypatch.setattr(placement, "ROW_REFRESH", row_refresh)
    monkeypatch.setenv(check.ENV, "1")
    lean = _decide_choosing(objs, CONFS[conf], True, monkeypatch)
    monkeypatch.delenv(check.ENV)
    reference = _decide_choosing(objs, CONFS[conf], False, monkeypatch)
    assert lean == reference


def test_the_first_choice_tests_futureidle_over_every_row_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten identical tasks on four nodes: the reference tests FutureIdle over every row twice for the
    first choice (its own look for a request that fits nowhere, then the cache's), the lean choice once."""
    objs = [node(f"n{i}", cpu=8) for i in range(4)] + [podgroup("g", min_member=10)]
    objs += [pod(f"g-{t}", "g", cpu=2, memory="1Gi") for t in range(10)]
    real = NodeTable.fits
    whole: list[bool] = []

    def spy(self: NodeTable, req: Any, cols: Any, avail: Any) -> Any:
        if len(avail) == len(self.names):
            whole.append(avail is self.future)
        return real(self, req, cols, avail)

    monkeypatch.setattr(NodeTable, "fits", spy)
    counts = {}
    for lean in (True, False):
        whole.clear()
        result = _decide_choosing(objs, None, lean, monkeypatch)
        assert len(result["binds"]) == 10
        counts[lean] = (whole.count(True), whole.count(False))
    # (against FutureIdle, against Idle) over every row
    assert counts == {True: (1, 1), False: (2, 1)}


def test_a_choice_that_differs_from_the_step_by_step_one_fails_the_self_check(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The self-check compares every lean choice with the reference: a lean choice gone wrong is caught."""
    objs = [node(f"n{i}", cpu=8) for i in range(4)] + [podgroup("g", min_member=2)]
    objs += [pod(f"g-{t}", "g", cpu=2, memory="1Gi") for t in range(2)]
    real = NodeChoice._choose_lean

    def wrong(self: NodeChoice, task: Any) -> Any:
        row, fits_idle, summary = real(self, task)
        return (row + 1) % len(self.nodes), fits_idle, summary

    monkeypatch.setattr(NodeChoice, "_choose_lean", wrong)
    monkeypatch.setenv(check.ENV, "1")
    with pytest.raises(check.StateCheckError, match="node choice"):
        cycle(objs)
