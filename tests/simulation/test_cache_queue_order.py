"""`CacheQueueOrder` gives a session its queues in the order a live cache holds them: a queue keeps its
place while it exists, one that comes goes after every other (those coming together in name order),
and root, made or added by `prepare`, is last unless the cache holds its own root queue."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import ROOT_QUEUE
from apportion.simulation.queue_order import CacheQueueOrder

NAMES = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", ROOT_QUEUE])


def _held(names: list[str]) -> dict[str, QueueInfo]:
    return {n: QueueInfo(name=n) for n in names}


@settings(max_examples=300, deadline=None)
@given(initial=st.lists(NAMES, unique=True), steps=st.lists(st.lists(NAMES, unique=True), min_size=1, max_size=6),
       hierarchical=st.booleans())
def test_queues_keep_their_places_and_new_ones_come_last(initial: list[str], steps: list[list[str]],
                                                         hierarchical: bool) -> None:
    order = CacheQueueOrder(initial)
    cache = list(initial)  # the live cache's order, worked out by hand (root only if it held one)
    for names in steps:
        cache = [n for n in cache if n in names] + sorted(n for n in names if n not in cache and n != ROOT_QUEUE)
        held = _held(names)
        got = order.queues(held, {}, {}, hierarchical, False)
        want = list(cache)
        if ROOT_QUEUE in names and ROOT_QUEUE not in want:
            want.append(ROOT_QUEUE)  # added to the start state by `prepare`: last
        elif ROOT_QUEUE not in names and hierarchical:
            want.append(ROOT_QUEUE)
        assert list(got) == want
        # the cache's objects, and one root object for every session that makes it
        assert all(got[n] is held[n] for n in names)
        if ROOT_QUEUE not in names and hierarchical:
            assert got[ROOT_QUEUE] is order.queues(held, {}, {}, hierarchical, False)[ROOT_QUEUE]
