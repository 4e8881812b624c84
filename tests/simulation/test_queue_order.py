"""simulation/queue_order.py against its reference: snapshot after snapshot, the session's queues are the
same objects in the same order whether the cache's dict is copied while the names stay
(`QUEUE_ORDER_KEPT`) or they are ordered name by name every time (docs/semantics.md F13)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import ROOT_QUEUE
from apportion.simulation import queue_order
from apportion.simulation.queue_order import QueueOrder
from apportion.state.check import ENV, StateCheckError

_NAMES = ["a", "b", "c", "d", ROOT_QUEUE]


@st.composite
def _step(draw: st.DrawFn) -> tuple[list[str], list[str], list[str]]:
    """(the cache's names in its order, the scenario's, the children's)."""
    held = draw(st.permutations(_NAMES).map(lambda p: p[: draw(st.integers(0, len(_NAMES)))]))
    scenario = draw(st.lists(st.sampled_from(_NAMES), unique=True))
    kids = draw(st.lists(st.sampled_from(held), unique=True)) if held else []
    return list(held), scenario, kids


@given(st.lists(st.one_of(_step(), st.just(None)), min_size=1, max_size=12), st.booleans(), st.booleans())
def test_kept_order_is_the_reference(steps: list[tuple[list[str], list[str], list[str]] | None], hierarchical: bool,
                                     checking: bool) -> None:
    """Random snapshots, each new names or (None) the last ones again with new queue objects."""
    kept, plain = QueueOrder(), QueueOrder()
    last = None
    for step in steps:
        step = step or last
        if step is None:
            continue
        last = step
        held_names, scenario_names, kid_names = step
        held = {n: QueueInfo(name=n) for n in held_names}
        scenario = {n: QueueInfo(name=n) for n in scenario_names}
        children = {"plan": [QueueInfo(name=n) for n in kid_names]}
        got = kept.queues(held, scenario, children, hierarchical, checking)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(queue_order, "QUEUE_ORDER_KEPT", False)
            want = plain.queues(held, scenario, children, hierarchical, False)
        assert got is not held
        assert list(got) == list(want)
        for name, q in got.items():
            assert q is held.get(name, kept.root)
            assert (want[name] is held[name]) if name in held else (want[name] is plain.root)


def test_the_self_check_fails_loudly_on_a_kept_order_that_is_not_the_reference(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1")
    order = QueueOrder()
    held = {"b": QueueInfo(name="b"), "a": QueueInfo(name="a")}
    scenario = {"a": QueueInfo(name="a"), "b": QueueInfo(name="b")}
    order.queues(held, scenario, {}, False, True)
    assert order.names is None  # the scenario's order is not the cache's: nothing kept
    order.names = (("b", "a"), ("a", "b"), ())  # a wrong record of these names
    with pytest.raises(StateCheckError, match="not in the order worked out"):
        order.queues(held, scenario, {}, False, True)
