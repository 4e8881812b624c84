"""enqueue's and capacity's admission answers read in bulk (docs/semantics.md K55): the kept queues compared by
maps (`KeptQueues`), the bare answers from each bucket's plan read once per plans (`Plans.walks`), a
level's verdict on the cpu and memory floats (`two_dimension_verdict`), the drain survey's shares and work
read by maps and a parent's leaves put in order when the drain reaches it (`DrainPicker._expand`).

Over random events and sessions on one cache over a tree that changes (K43's test steps), every K55
switch on and off decide the same, and explain the same where the sessions make texts, with and without
the self-check; and the pieces against their references directly."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_capacity_carried_plans import CONFS, _base, a_step

from apportion.cluster.model import QueueInfo
from apportion.cluster.snapshot import same_queues
from apportion.framework import kept_queues
from apportion.framework.kept_queues import KeptQueues
from apportion.plugins.capacity import bare_answers, drain_subset
from apportion.plugins.capacity.attrs import QueueAttr
from apportion.resources import Resource
from apportion.state import check
from session_steps import play_texts


def _sessions(steps: list, on: bool, conf: Any, texts: list[bool], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setattr(kept_queues, "lean_compare", on)
    monkeypatch.setattr(bare_answers, "lean_bare", on)
    monkeypatch.setattr(bare_answers, "lean_verdict", on)
    monkeypatch.setattr(drain_subset, "lazy_leaves", on)
    monkeypatch.setattr(drain_subset, "unit_pickers", on)
    return play_texts(steps, _base, conf, texts)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(st.lists(a_step(), min_size=1, max_size=25), st.sampled_from(CONFS),
       st.lists(st.booleans(), min_size=1, max_size=3), st.booleans())
def test_k55_switches_decide_and_explain_as_the_references(monkeypatch: pytest.MonkeyPatch, steps: list, conf: Any,
                                                           texts: list[bool], checking: bool) -> None:
    if checking:
        monkeypatch.setenv(check.ENV, "1")
    else:
        monkeypatch.delenv(check.ENV, raising=False)
    assert (_sessions(steps, True, conf, texts, monkeypatch)
            == _sessions(steps, False, conf, texts, monkeypatch))


_QUEUES = [QueueInfo(name=f"q{i}") for i in range(4)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(range(4)), max_size=4, unique=True),
       st.lists(st.tuples(st.sampled_from(range(4)), st.booleans()), max_size=4))
def test_kept_queues_compare_as_same_queues(kept: list[int], now: list[tuple[int, bool]]) -> None:
    """Names and objects, in order: another object of the same name (an equal QueueInfo) is not the same."""
    before = {f"q{i}": _QUEUES[i] for i in kept}
    known = {f"q{i}": (_QUEUES[i] if same else QueueInfo(name=f"q{i}")) for i, same in now}
    ref = same_queues(list(before.items()), known)
    assert KeptQueues(before).same(known) == ref
    assert KeptQueues(before).items() == list(before.items())
    assert KeptQueues(known).same(known)


_AMOUNTS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                     st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.1, 0.2, 0.3, 1e16, -1.0]))


def _res(cpu: float, memory: float) -> Resource:
    return Resource(cpu, memory)


@settings(max_examples=150, deadline=None)
@given(st.lists(_AMOUNTS, min_size=10, max_size=10), st.booleans(), st.booleans())
def test_two_dimension_verdict_is_the_resource_verdict(v: list[float], capped: bool, scalars_elsewhere: bool) -> None:
    """minResources + allocated + inqueue - elastic <= realCapability on minResources' dimensions, on the
    floats as on Resource objects: NaN, infinities, -0.0, rounding, scalars on the other sides."""
    mr = _res(v[0], v[1])
    a = QueueAttr(name="q", deserved=Resource(), guarantee=Resource(), capability=Resource(),
                  real_capability=_res(v[8], v[9]) if capped else None, allocated=_res(v[2], v[3]),
                  inqueue=_res(v[4], v[5]), elastic=_res(v[6], v[7]))
    if scalars_elsewhere:
        a.allocated.scalars["nvidia.com/gpu"] = 1.0
        a.inqueue.scalars["pods"] = 2.0
    need = mr.plus(a.allocated).add(a.inqueue).sub_without_assert(a.elastic)
    assert bare_answers.two_dimension_verdict(a, mr) == need.less_equal_with_dimension(a.real_capability, mr)[0]
