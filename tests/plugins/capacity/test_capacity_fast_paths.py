"""capacity's two loops written for speed, against the plain versions they stand for (issue 15).

- `_Limits.session_attr` fills a QueueAttr from a prepared dict instead of calling the dataclass
  constructor; the reference is `QueueAttr(...)` followed by `update_share()`.
- `TreeSetup._charge_jobs` skips adding a job's inqueue and elastic parts when they are zero and list no
  scalar; the reference adds every part. The sums must agree bit for bit.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.plugins.capacity.attrs import QueueAttr, _fmt
from apportion.plugins.capacity.reclaim_texts import fmt_limit, shares_dimension
from apportion.plugins.capacity.tree import _Limits
from apportion.resources import Resource

amount = st.one_of(st.just(0.0), st.floats(min_value=0.0, max_value=1e12, allow_nan=False), st.integers(0, 10**6))
scalars = st.dictionaries(st.sampled_from(["nvidia.com/gpu", "pods", "rdma/hca"]), amount, max_size=2)
resources = st.builds(lambda c, m, s: Resource(float(c), float(m), {k: float(v) for k, v in s.items()}),
                      amount, amount, scalars)


@settings(max_examples=60, deadline=None)
@given(deserved=resources, guarantee=resources, capability=st.one_of(st.none(), resources),
       real=st.one_of(st.none(), resources), parent=st.sampled_from(["", "root", "org"]),
       ancestors=st.lists(st.sampled_from(["root", "org", "team"]), max_size=3),
       children=st.lists(st.sampled_from(["a", "b"]), max_size=2))
def test_session_attr_is_the_constructor(deserved: Resource, guarantee: Resource, capability: Resource | None,
                                         real: Resource | None, parent: str, ancestors: list[str],
                                         children: list[str]) -> None:
    ref = QueueAttr(name="q", deserved=deserved, guarantee=guarantee, capability=capability,
                    real_capability=real, parent=parent, ancestors=ancestors, children=children)
    ref.update_share()
    fast = _Limits.of(ref).session_attr("q")
    for f in fields(QueueAttr):
        a, b = getattr(fast, f.name), getattr(ref, f.name)
        if isinstance(a, Resource):
            assert a.cpu == b.cpu and a.memory == b.memory and a.scalars == b.scalars, f.name
        else:
            assert a == b, f.name
    # the accounting is the session's own, never shared with the memo
    assert fast.allocated is not ref.allocated and fast.allocated.is_empty()


def _bits(r: Resource) -> tuple[Any, ...]:
    return (r.cpu.hex(), r.memory.hex(), tuple(sorted((k, v.hex()) for k, v in r.scalars.items())))


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.one_of(st.builds(Resource), resources), min_size=1, max_size=8))
def test_skipping_zero_adds_changes_no_bit(parts: list[Resource]) -> None:
    """Adding a part that is 0 everywhere and lists no scalar to a sum that started at +0.0 changes
    nothing, so skipping it (as _charge_jobs does for inqueue and elastic) gives the same bits."""
    from apportion.plugins.capacity.attrs import _adds_anything

    plain, skipping = Resource(), Resource()
    for part in parts:
        plain.add(part)
        if _adds_anything(part):
            skipping.add(part)
    assert _bits(plain) == _bits(skipping)


_amounts = st.sampled_from([0.0, -0.0, 0.05, 0.1, 1.0, 2000.0, 2.0**40])


@st.composite
def _resources(draw: Any) -> Resource:
    names = draw(st.lists(st.sampled_from(["nvidia.com/gpu", "pods", "example.com/fpga"]), unique=True))
    return Resource(draw(_amounts), draw(_amounts), {n: draw(_amounts) for n in names})


@settings(max_examples=500, deadline=None)
@given(a=_resources(), b=_resources(), ignore_pods=st.booleans())
def test_shares_dimension_is_intersection_names(a: Resource, b: Resource, ignore_pods: bool) -> None:
    """reclaimable's fast dimension test answers as the name sets' intersection."""
    assert shares_dimension(a, b, ignore_pods=ignore_pods) == bool(a.intersection_names(b, ignore_pods=ignore_pods))


@settings(max_examples=300, deadline=None)
@given(rs=st.lists(_resources(), min_size=1, max_size=6))
def test_a_kept_limit_text_is_the_fresh_one(rs: list[Resource]) -> None:
    """reclaimable's limit texts, kept by value, are what _fmt gives (the same values twice included)."""
    for r in [*rs, *rs]:
        assert fmt_limit(r) == _fmt(r)
