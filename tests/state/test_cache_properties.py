"""Property: whatever the event sequence (adds, updates, deletes, out of order, duplicates, sessions and
their decisions in between), the cache equals a cache rebuilt from its objects, and a session over it
decides what a session over the rebuild decides."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.engine import dispatch, run_cache_session
from apportion.state.cache import SchedulerCache
from apportion.state.check import check_cache, rebuilt
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater

import k8s

CONF = k8s.conf("enqueue, allocate, preempt, reclaim", ["priority", "gang", "conformance"],
                ["drf", "predicates", "proportion", "nodeorder"])
NODES = ["n0", "n1", "n2"]
GROUPS = ["g0", "g1", "g2"]


@st.composite
def an_object(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["Node", "Queue", "PodGroup", "Pod", "Pod", "Pod", "PriorityClass"]))
    if kind == "Node":
        return k8s.node(draw(st.sampled_from(NODES)), cpu=draw(st.sampled_from([2, 4])))
    if kind == "Queue":
        return k8s.queue(draw(st.sampled_from(["q0", "q1", "default"])), weight=draw(st.integers(1, 3)))
    if kind == "PodGroup":
        return k8s.podgroup(draw(st.sampled_from(GROUPS)), queue=draw(st.sampled_from(["q0", "q1", "default", "gone"])),
                            min_member=draw(st.integers(0, 2)),
                            phase=draw(st.sampled_from(["Pending", "Inqueue", "Running"])),
                            priority_class=draw(st.sampled_from(["", "hi"])))
    if kind == "PriorityClass":
        return k8s.priority_class("hi", draw(st.integers(0, 100)), global_default=draw(st.booleans()))
    node = draw(st.sampled_from(["", "", *NODES, "n9"]))
    return k8s.pod(f"p{draw(st.integers(0, 5))}", draw(st.sampled_from([*GROUPS, None])),
                   cpu=draw(st.sampled_from([1, 2])), node_name=node,
                   phase=draw(st.sampled_from(["Running", "Succeeded"])) if node else "Pending",
                   deleting=draw(st.booleans()) if node else False)


step = st.one_of(
    st.tuples(st.sampled_from([ADDED, ADDED, MODIFIED, DELETED]), an_object()),
    st.just(("SESSION", None)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=30))
def test_cache_equals_a_rebuild_after_any_events(steps: list) -> None:
    cache = SchedulerCache(report=lambda line: None)
    for i, (typ, obj) in enumerate(steps):
        if typ == "SESSION":
            result = run_cache_session(cache, CONF, session_id=f"s{i}")
            dispatch(result, CacheBinder(cache), CacheEvictor(cache), CacheStatusUpdater(cache))
        else:
            cache.apply(WatchEvent(typ, obj, f"event {i}"))
        check_cache(cache)
    mine = run_cache_session(cache, CONF).to_json()
    theirs = run_cache_session(rebuilt(cache), CONF).to_json()
    assert json.dumps(mine) == json.dumps(theirs)
