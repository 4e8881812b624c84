"""state/snapshots.py `nodes_unseen`: a caller that puts nodes of its own in the place of a snapshot's
(the forecast) is handed the same node list again, as it is, while the nodes stay; every snapshot is
still what a full assembly gives, and no node of one holds a task before a session runs on it (the
self-check, `check_snapshot`, raises otherwise)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cache_properties import CONF, GROUPS, NODES, an_object, an_unusual_pod, step

from apportion.cluster.model import TaskInfo, TaskStatus
from apportion.engine import dispatch, run_cache_session
from apportion.resources import Resource
from apportion.state.cache import SchedulerCache
from apportion.state.check import StateCheckError, check_snapshot
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater

import k8s

#: the indexed snapshots' steps (test_cache_properties.py), and a snapshot taken and its nodes
#: replaced by the caller's (UNSEEN), or taken and a task put on each of its nodes, as a session's
#: open does (SEEN)
_STEPS = st.lists(st.one_of(step, st.tuples(st.sampled_from([ADDED, MODIFIED, DELETED]), an_unusual_pod()),
                            st.tuples(st.just(ADDED), an_object().filter(lambda o: o["kind"] == "Pod")),
                            st.just(("UNSEEN", None)), st.just(("SEEN", None))),
                  min_size=1, max_size=40)


def _cache() -> SchedulerCache:
    cache = SchedulerCache(report=lambda line: None)
    for o in [*(k8s.node(n, cpu=4) for n in NODES), k8s.queue("q0"), *(k8s.podgroup(g, queue="q0") for g in GROUPS)]:
        cache.apply(WatchEvent(ADDED, o))
    return cache


def _indexed(cache: SchedulerCache) -> bool:
    """Whether the next session-after-session snapshot takes the indexed path (which hands nodes out
    again)."""
    return cache._shared_uids == 0 and not (cache.pods_by_node.keys() - cache.records.nodes.keys())


def _fill(nodes: list) -> None:
    """What a session's open does to the nodes it is given: a task map on each."""
    for node in nodes:
        node.tasks = {"x/filled": TaskInfo(uid="filled", name="filled", namespace="x", job="x/j", resreq=Resource(),
                                           status=TaskStatus.RUNNING, node_name=node.name)}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_STEPS)
def test_snapshots_after_unseen_nodes_are_full_assemblies(steps: list) -> None:
    cache = _cache()
    unseen: tuple[list, int, bool] | None = None
    for i, (typ, obj) in enumerate(steps):
        if typ in ("UNSEEN", "SEEN"):
            indexed = _indexed(cache)
            snap = cache.snapshot(keep=True)
            check_snapshot(cache, snap)  # a node holding a task raises
            if unseen is not None:
                # the list said unseen comes again while the nodes stay, when both snapshots are
                # indexed (the cache keeps the nodes of those alone)
                assert (snap.nodes is unseen[0]) == (unseen[2] and indexed and unseen[1] == cache._node_version)
            unseen = None
            if typ == "UNSEEN":
                cache.nodes_unseen(snap.nodes)
                unseen = (snap.nodes, cache._node_version, indexed)
                snap.nodes = []
            else:
                _fill(snap.nodes)
        elif typ == "SESSION":
            unseen = None
            result = run_cache_session(cache, CONF, session_id=f"s{i}", reuse=False)
            dispatch(result, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
        else:
            cache.apply(WatchEvent(typ, obj, f"event {i}"))
    check_snapshot(cache, cache.snapshot(keep=True))


def test_the_same_list_is_handed_out_again_until_a_node_changes() -> None:
    cache = _cache()
    first = cache.snapshot(keep=True)
    cache.nodes_unseen(first.nodes)
    second = cache.snapshot(keep=True)
    assert second.nodes is first.nodes
    cache.nodes_unseen(second.nodes)
    cache.apply(WatchEvent(ADDED, k8s.node("n9", cpu=2)))
    third = cache.snapshot(keep=True)
    assert third.nodes is not first.nodes and [n.name for n in third.nodes] == [*NODES, "n9"]
    # not said of this one: the next is a list of its own, its maps emptied
    _fill(third.nodes)
    fourth = cache.snapshot(keep=True)
    assert fourth.nodes is not third.nodes and not any(n.tasks for n in fourth.nodes)
    check_snapshot(cache, fourth)


def test_saying_it_of_another_list_hands_nothing_out_as_it_is() -> None:
    cache = _cache()
    first = cache.snapshot(keep=True)
    cache.nodes_unseen(list(first.nodes))
    _fill(first.nodes)
    second = cache.snapshot(keep=True)
    assert second.nodes is not first.nodes and not any(n.tasks for n in second.nodes)


def test_the_self_check_fails_loudly_on_nodes_a_session_saw() -> None:
    cache = _cache()
    first = cache.snapshot(keep=True)
    cache.nodes_unseen(first.nodes)
    _fill(first.nodes)  # what a session over them would do: the caller's word was wrong
    with pytest.raises(StateCheckError, match="holds tasks"):
        check_snapshot(cache, cache.snapshot(keep=True))
