"""capacity's backlog watch sums a change's difference with cpu and memory as two integers and the
scalars apart (backlog_watch.py `_delta`): over random charged amounts (None fields and None amounts
included, scalars named as cpu or memory too), every dimension moves by the reference's sum."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from apportion.plugins.capacity.backlog_watch import _delta, _delta_reference, _nonzero

_INT = st.integers(-(2**40), 2**40)
_AMOUNT = st.tuples(_INT, _INT, st.lists(st.tuples(st.sampled_from(["nvidia.com/gpu", "pods", "x", "cpu"]), _INT),
                                         max_size=3, unique_by=lambda p: p[0]).map(tuple))
_AMOUNTS = st.none() | st.tuples(*[st.none() | _AMOUNT for _ in range(4)])


@given(_AMOUNTS, _AMOUNTS)
def test_delta_moves_each_dimension_as_the_reference(old: tuple | None, new: tuple | None) -> None:
    got = _delta(old, new)
    want = _delta_reference(old, new)
    if got is None:
        assert any(n in ("cpu", "memory") for a in (old or ()) + (new or ()) if a is not None for n, _ in a[2])
    else:
        assert _nonzero(got) == _nonzero(want)
