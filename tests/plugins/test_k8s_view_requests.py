"""A node view added up in full takes every task's requests in one step (plugins/k8s_view.py `requests_of`,
docs/semantics.md K45): the very array `pod_requests` gives task by task, bit for bit (a zero's sign too),
for any amounts; a NaN or infinite one refused as `pod_requests` refuses it; and views made both ways
(`VECTOR_REQUESTS` on and off) hold the same counts and sums."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import NodeInfo, TaskInfo, TaskStatus
from apportion.plugins import k8s_view
from apportion.plugins.k8s_view import NodeView, pod_requests, requests_of
from apportion.resources import GPU, Resource

amount = st.one_of(
    st.floats(min_value=-4.0, max_value=4.0),
    st.floats(min_value=0.0, max_value=2.0**60),
    st.integers(0, 2**40).map(float),
    st.sampled_from([0.0, -0.0, -0.5, 0.5, 2.0**52 + 1.0, 2.0**53, 2.0**53 + 2.0, 1e300]),
)


def _task(i: int, a: tuple[float, float, float, float, float | None], node: str = "") -> TaskInfo:
    nz_cpu, nz_mem, cpu, mem, gpu = a
    scalars = {} if gpu is None else {GPU: gpu}
    return TaskInfo(uid=f"u{i}", name=f"t{i}", namespace="ns", job="ns/j", resreq=Resource(cpu, mem, scalars),
                    status=TaskStatus.RUNNING, node_name=node, nonzero_cpu=nz_cpu, nonzero_memory=nz_mem)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(amount, amount, amount, amount, st.one_of(st.none(), amount)), min_size=1, max_size=12))
def test_requests_in_one_step_are_each_tasks_pod_requests(amounts: list) -> None:
    tasks = [_task(i, a) for i, a in enumerate(amounts)]
    want = np.array([pod_requests(t) for t in tasks])
    got = requests_of(tasks)
    assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
    assert all(t.kube_requests is None for t in tasks)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("column", range(4))
def test_an_amount_that_is_not_finite_is_refused_as_pod_requests_refuses_it(bad: float, column: int) -> None:
    a = [1.0, 2.0, 3.0, 4.0, None]
    a[column] = bad
    tasks = [_task(0, (1.0, 1.0, 1.0, 1.0, None)), _task(1, tuple(a))]  # type: ignore[arg-type]
    with pytest.raises((ValueError, OverflowError)) as want:
        pod_requests(tasks[1])
    with pytest.raises(want.type):
        requests_of(tasks)
    assert math.isnan(bad) or math.isinf(bad)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.tuples(amount, amount, amount, amount, st.one_of(st.none(), amount))),
                max_size=12))
def test_a_view_added_up_in_one_step_is_the_one_added_task_by_task(placed: list) -> None:
    seen = []
    for vector in (True, False):
        nodes = [NodeInfo(name=f"n{i}", index=i, allocatable=Resource(8000.0, 2.0**34)) for i in range(4)]
        for i, (row, a) in enumerate(placed):
            t = _task(i, a, nodes[row].name)
            nodes[row].tasks[t.key] = t
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(k8s_view, "VECTOR_REQUESTS", vector)
            view = NodeView(nodes)
        seen.append((view.count.tobytes(), view.sums.tobytes()))
    assert seen[0] == seen[1]
