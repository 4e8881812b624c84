"""The recorder's kept cluster use (`_Use`) is the ordered pass over every queue with work, bit for bit,
whatever the sequence of changes: exact integer amounts, fractional ones, amounts past 2**53, queues
coming and going."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.simulation.recorder import _Use

amount = st.one_of(st.integers(0, 10**6).map(float), st.integers(0, 10**12).map(float),
                   st.sampled_from([0.5, 1e-3, 2.0**53, 2.0**60, -0.0, 3.0]))
change = st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]),
                   st.one_of(st.none(), st.lists(amount, min_size=3, max_size=3)))


@settings(max_examples=400, deadline=None)
@given(st.lists(change, min_size=1, max_size=40))
def test_kept_use_is_the_ordered_pass(changes: list) -> None:
    use = _Use(3)
    work: dict[str, tuple[list[float], list[float]]] = {}
    for q, a in changes:
        if a is None:
            work.pop(q, None)
        else:
            work[q] = (a, [0.0] * 3)
        use.change(q, a)
        want = [0.0] * 3
        for name in sorted(work):
            for i in range(3):
                want[i] += work[name][0][i]
        got = use.total(work)
        assert [x.hex() for x in got] == [x.hex() for x in want]
