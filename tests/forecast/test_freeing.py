"""The search for running jobs to free (`freeing.choose`) against its reference (`choose_reference`):
the same answer whenever freeing more never hurts, with fewer sessions where most drops succeed; and
an answer that works (the search's last check) whatever the predicate."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.forecast import freeing
from apportion.resources import Resource, dominant_share

TOTAL = Resource(cpu=64_000, memory=256 * 2**30, scalars={"nvidia.com/gpu": 16_000})


def cost(r: Resource) -> float:
    return dominant_share(r, TOTAL)


@st.composite
def candidates(draw: st.DrawFn) -> list[freeing.Candidate]:
    out = []
    for i in range(draw(st.integers(1, 40))):
        held = Resource(cpu=1000 * draw(st.integers(0, 8)), memory=2**30 * draw(st.integers(0, 16)),
                        scalars={"nvidia.com/gpu": 1000 * draw(st.integers(0, 2))})
        if held.is_empty():
            held = Resource(cpu=500)
        out.append((cost(held), f"ns/j{i:02d}", held))
    return out


@st.composite
def monotone(draw: st.DrawFn, names: list[str]) -> Callable[[list[str]], bool]:
    """Freeing more never hurts: every required job freed, and each weighted sum over a threshold."""
    required = set(draw(st.lists(st.sampled_from(names), max_size=3)))
    sums = []
    for _ in range(draw(st.integers(0, 3))):
        weights = {u: draw(st.integers(0, 5)) for u in names}
        sums.append((weights, draw(st.integers(0, sum(weights.values()) + 2))))

    def works(uids: list[str]) -> bool:
        s = set(uids)
        return required <= s and all(sum(w[u] for u in s) >= t for w, t in sums)
    return works


def counted(works: Callable[[list[str]], bool]) -> tuple[Callable[[list[str]], bool], list[frozenset[str]]]:
    calls: list[frozenset[str]] = []

    def f(uids: list[str]) -> bool:
        calls.append(frozenset(uids))
        return works(uids)
    return f, calls


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_same_answer_as_the_reference_when_freeing_more_never_hurts(data: st.DataObject) -> None:
    running = data.draw(candidates())
    works = data.draw(monotone([u for _, u, _ in running]))
    ref_works, ref_calls = counted(works)
    fast_works, fast_calls = counted(works)
    ref = freeing.choose_reference(running, ref_works, cost)
    fast = freeing.choose(running, fast_works, cost)
    assert fast == ref
    # no set is checked twice
    assert len(set(fast_calls)) == len(fast_calls)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_answer_was_checked_whatever_the_predicate(data: st.DataObject) -> None:
    running = data.draw(candidates())
    names = [u for _, u, _ in running]
    table = {}

    def works(uids: list[str]) -> bool:  # any answer, the same one for the same set
        key = frozenset(uids)
        if key not in table:
            table[key] = data.draw(st.booleans())
        return table[key]

    fast_works, calls = counted(works)
    fast = freeing.choose(running, fast_works, cost)
    if fast is None:
        assert not table[frozenset(names)]
    else:
        assert fast and table[frozenset(fast)] and len(set(fast)) == len(fast) and set(fast) <= set(names)


def test_fewer_sessions_where_most_drops_succeed() -> None:
    # the job starts once j00 and j01 are freed: largest first, the whole list is the shortest
    # prefix, and 14 of the 16 drops tried succeed; smallest first, the two are the first prefix
    running = [(cost(Resource(cpu=1000 * (i + 1))), f"ns/j{i:02d}", Resource(cpu=1000 * (i + 1))) for i in range(30)]

    def works(uids: list[str]) -> bool:
        return {"ns/j00", "ns/j01"} <= set(uids)

    ref_works, ref_calls = counted(works)
    fast_works, fast_calls = counted(works)
    assert freeing.choose(running, fast_works, cost) == freeing.choose_reference(running, ref_works, cost) == [
        "ns/j00", "ns/j01"]
    assert len(fast_calls) < len(ref_calls) * 2 / 3
