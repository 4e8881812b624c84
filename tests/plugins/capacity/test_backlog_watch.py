"""capacity's backlog watch (plugins/capacity/backlog_watch.py) kept from charge to charge answers as
its pairs judged afresh on every level of their paths, whatever the charges and whenever it is asked
(it stops at the first open pair and looks at the rest later)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.plugins.capacity.backlog_watch import BacklogWatch, _Level
from apportion.resources import CPU, MEMORY, Resource

#: a small tree: two leaves under one parent under the root, and a leaf of its own under the root
_PATHS = {"qa": ("qa", "p", "root"), "qb": ("qb", "p", "root"), "qc": ("qc", "root")}
_LEVELS = ("qa", "qb", "qc", "p", "root")

_amount = st.tuples(st.sampled_from([0, 5, 10, 40]), st.integers(0, 40), st.just(()))
_charged = st.tuples(_amount, _amount, st.one_of(st.none(), _amount), st.one_of(st.none(), _amount))


def _watch(caps: list[tuple[int, int] | None], accs: list[tuple[int, int]],
           pairs: list[tuple[str, int, int]]) -> BacklogWatch:
    watch = BacklogWatch(False, {}, {}, True)
    watch.paths.update(_PATHS)
    for name, cap, (cpu, memory) in zip(_LEVELS, caps, accs):
        watch.levels[name] = _Level(None if cap is None else Resource(*cap), {CPU: cpu, MEMORY: memory})
    for queue, cpu, memory in pairs:
        key = (queue, float(cpu), float(memory), ())
        if key in watch.pairs:
            continue
        dims = {d: float(v) for d, v in ((CPU, cpu), (MEMORY, memory)) if v > 0}
        watch.pairs[key] = (_PATHS[queue], dims)
        watch._find_witness(key)
    return watch


@settings(max_examples=500, deadline=None)
@given(caps=st.lists(st.one_of(st.none(), st.tuples(st.integers(0, 120), st.integers(0, 120))),
                     min_size=len(_LEVELS), max_size=len(_LEVELS)),
       accs=st.lists(st.tuples(st.integers(0, 100), st.integers(0, 100)), min_size=len(_LEVELS),
                     max_size=len(_LEVELS)),
       pairs=st.lists(st.tuples(st.sampled_from(sorted(_PATHS)), st.sampled_from([0, 5, 10, 20]),
                                st.integers(0, 30)), max_size=12),
       steps=st.lists(st.tuples(st.sampled_from(sorted(_PATHS)), st.one_of(st.none(), _charged),
                                st.one_of(st.none(), _charged), st.booleans(), st.integers(0, 11)),
                      max_size=16))
def test_the_watch_answers_as_every_pair_judged_afresh(caps: list[Any], accs: list[tuple[int, int]],
                                                       pairs: list[tuple[str, int, int]],
                                                       steps: list[tuple[Any, ...]]) -> None:
    watch = _watch(caps, accs, pairs)
    assert watch.admits_any() == watch.admits_reference()
    for queue, old, new, ask, drop in steps:
        watch.charge(queue, old, new)
        if drop < len(pairs) and drop % 3 == 0:
            q, cpu, memory = pairs[drop]
            watch.drop_pair((q, float(cpu), float(memory), ()))
        if ask:
            assert watch.admits_any() == watch.admits_reference()
            _kept_right(watch)
    assert watch.admits_any() == watch.admits_reference()
    _kept_right(watch)


def _kept_right(watch: BacklogWatch) -> None:
    """Every pair is open or in the bucket of its witness, under its request there, and fails at its
    witness unless that is waiting to be looked at again (`moved`); open pairs are admitted."""
    for key in watch.pairs:
        assert (key in watch.open_pairs) != (key in watch.witness)
    for key, (name, dim) in watch.witness.items():
        amount = watch.pairs[key][1][dim]
        assert key in watch.buckets[name, dim][amount]
        if (name, dim) not in watch.moved:
            assert watch.levels[name].fails(dim, amount)
    assert not watch.open_pairs or watch.admits_reference()
