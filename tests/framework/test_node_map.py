"""Session open keeps the nodes' map by name over a memo while the same NodeInfo objects come back in
the same order (framework/session.py `_node_by_name`), and makes it again when they do not; under the
self-check a kept map is compared with one made from the nodes."""

from __future__ import annotations

import pytest

from apportion.engine import run_cache_session
from apportion.framework.session import NODES_MEMO, _node_by_name
from apportion.state import check
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, WatchEvent

import k8s


def test_the_map_is_kept_while_the_nodes_are_the_same_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")
    cache = SchedulerCache(report=lambda line: None)
    for o in (k8s.node("n0"), k8s.node("n1"), k8s.podgroup("g"), k8s.pod("p0", "g", node_name="n0")):
        cache.apply(WatchEvent(ADDED, o, "t"))
    first = run_cache_session(cache, reuse=False).session
    second = run_cache_session(cache, reuse=False).session
    assert second.node_by_name is first.node_by_name
    assert second.node_by_name == {n.name: n for n in second.nodes}
    cache.apply(WatchEvent(ADDED, k8s.node("n2"), "t"))
    third = run_cache_session(cache, reuse=False).session
    assert third.node_by_name is not first.node_by_name
    assert list(third.node_by_name) == ["n0", "n1", "n2"]


def test_other_objects_or_order_make_the_map_again() -> None:
    nodes = k8s.snapshot(k8s.node("a"), k8s.node("b")).nodes
    memo: dict = {}
    kept = _node_by_name(nodes, memo)
    assert _node_by_name(list(nodes), memo) is kept
    assert _node_by_name(nodes[::-1], memo) is not kept
    fresh = k8s.snapshot(k8s.node("a"), k8s.node("b")).nodes
    got = _node_by_name(fresh, memo)
    assert got == {"a": fresh[0], "b": fresh[1]} and all(got[n.name] is n for n in fresh)
    assert memo[NODES_MEMO][1] is got


def test_a_kept_map_that_differs_fails_the_self_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(check.ENV, "1")
    nodes = k8s.snapshot(k8s.node("a"), k8s.node("b")).nodes
    memo: dict = {}
    _node_by_name(nodes, memo)
    memo[NODES_MEMO][1]["a"] = nodes[1]
    with pytest.raises(check.StateCheckError, match="by name"):
        _node_by_name(nodes, memo)
