"""allocate's per-task arithmetic written for speed, against the plain versions it stands for (issue 16).

- `queue_share` (capacity's and proportion's share refresh on every allocate event) unrolls
  `queue_share_reference`'s Share and max;
- `dominant_share` (drf's share on every allocate event) unrolls `dominant_share_reference`'s;
- `path_fits` (capacity's allocatable test of every task) compares `allocated + request` with each
  queue's realCapability without building the sums; the reference is the loop that builds them.

Amounts include NaN, infinities, negatives and values below Volcano's 0.1 threshold, so the order of
the comparisons, not just their results on tidy inputs, is what is tested.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.plugins.capacity.attrs import QueueAttr
from apportion.plugins.capacity.base import CapacityBase, path_fits
from apportion.plugins.queue_common import queue_share, queue_share_reference
from apportion.resources import Resource, dominant_share, dominant_share_reference, share_terms

amount = st.one_of(st.just(0.0), st.just(0.05), st.just(0.1), st.just(-1.0), st.just(math.inf), st.just(math.nan),
                   st.floats(min_value=0.0, max_value=1e12, allow_nan=False), st.integers(0, 10**6).map(float))
scalars = st.dictionaries(st.sampled_from(["nvidia.com/gpu", "pods", "rdma/hca"]), amount, max_size=3)
resources = st.builds(lambda c, m, s: Resource(c, m, s), amount, amount, scalars)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


@settings(max_examples=400, deadline=None)
@given(allocated=resources, deserved=resources)
def test_queue_share_is_the_reference(allocated: Resource, deserved: Resource) -> None:
    assert _same(queue_share(allocated, deserved), queue_share_reference(allocated, deserved))


@settings(max_examples=400, deadline=None)
@given(allocated=resources, basis=resources,
       terms=st.lists(st.tuples(st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"]), amount), max_size=4))
def test_dominant_share_is_the_reference(allocated: Resource, basis: Resource,
                                         terms: list[tuple[str, float]]) -> None:
    assert _same(dominant_share(allocated, basis), dominant_share_reference(allocated, basis))
    assert _same(dominant_share(allocated, share_terms(basis)), dominant_share_reference(allocated, share_terms(basis)))
    # callers may hand terms of their own, zeros included
    assert _same(dominant_share(allocated, terms), dominant_share_reference(allocated, terms))


class _Explaining:
    def __init__(self) -> None:
        self.explained: list[tuple[str, str]] = []

    def explain(self, obj: str, message: str) -> None:
        self.explained.append((obj, message))


class _Task:
    key = "ns/t"

    def __init__(self, resreq: Resource) -> None:
        self.resreq = resreq


@settings(max_examples=400, deadline=None)
@given(req=resources, levels=st.lists(st.tuples(resources, st.one_of(st.none(), resources)), min_size=1, max_size=4))
def test_path_fits_is_the_reference(req: Resource, levels: list[tuple[Resource, Resource | None]]) -> None:
    names = [f"q{i}" for i in range(len(levels))]  # q0 is the root, the last one the leaf
    attrs = {}
    for i, (allocated, real) in enumerate(levels):
        attrs[names[i]] = QueueAttr(name=names[i], deserved=Resource(), guarantee=Resource(), capability=None,
                                    real_capability=real, allocated=allocated, ancestors=names[:i])
    leaf = attrs[names[-1]]
    plugin = CapacityBase.__new__(CapacityBase)
    plugin.ssn = _Explaining()  # type: ignore[assignment]
    want = plugin._allocatable_on_path_reference(attrs, leaf, _Task(req), explain=False)  # type: ignore[arg-type]
    assert path_fits(attrs, leaf, req) == want
    # the public test answers the same and explains a refusal as the reference does
    fast_ssn, ref_ssn = _Explaining(), _Explaining()
    plugin.ssn = fast_ssn  # type: ignore[assignment]
    got = plugin._allocatable_on_path(attrs, leaf, _Task(req), explain=True)  # type: ignore[arg-type]
    plugin.ssn = ref_ssn  # type: ignore[assignment]
    ref = plugin._allocatable_on_path_reference(attrs, leaf, _Task(req), explain=True)  # type: ignore[arg-type]
    assert got == ref == want
    assert fast_ssn.explained == ref_ssn.explained
