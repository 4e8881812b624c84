"""CapacityOverTime's average check against the previous implementation of the same algorithm.

`_average_within` walks the up and down event lists of the running integral in one merge; the
oracle below is the earlier code (grid, then a set of every event time sorted and scanned), kept
verbatim as the reference.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.reservation.average_window import average_within as _average_within
from apportion.reservation.average_window import merge_maps as _merge_maps
from apportion.reservation.resmath import Res


def _round_half_up(n: int, d: int) -> int:
    return (2 * n + d) // (2 * d)


def _integral_within(up, down, cs, ce, limit) -> bool:
    events = sorted({t for t, _ in up} | {t for t, _ in down})
    iu = idn = 0
    cu: Res = (0, 0)
    cd: Res = (0, 0)
    for t in [cs] + [t for t in events if cs < t <= ce]:
        while iu < len(up) and up[iu][0] <= t:
            cu = up[iu][1]
            iu += 1
        while idn < len(down) and down[idn][0] <= t:
            cd = down[idn][1]
            idn += 1
        if cu[0] - cd[0] > limit[0] or cu[1] - cd[1] > limit[1]:
            return False
    return True


def _oracle(f_map, W, cs, ce, limit) -> bool:
    grid: dict[int, Res | None] = {}
    for (k, v), (k2, v2) in zip(f_map, f_map[1:]):
        if v2 is None:
            continue
        for i in range(1, (k2 - k) // W + 1):
            grid[k + i * W] = v
    for k, v in f_map:
        grid[k] = v
    up, down = [], []
    prev_t = f_map[0][0]
    pm = pv = 0
    tm = tv = 0
    for g in sorted(grid):
        tm += pm * (g - prev_t)
        tv += pv * (g - prev_t)
        a = (_round_half_up(tm, W), _round_half_up(tv, W))
        up.append((g, a))
        down.append((g + W, a))
        v = grid[g]
        pm, pv = (v if v is not None else (0, 0))
        prev_t = g
    return _integral_within(up, down, cs, ce, limit)


def _map(points):
    out = []
    t = 0
    for dt, m, v, undefined in points:
        t += dt
        out.append((t, None if undefined else (m, v)))
    return out


maps = st.lists(st.tuples(st.integers(1, 40), st.integers(0, 9), st.integers(0, 5), st.booleans()), max_size=12)


@settings(max_examples=500, deadline=None)
@given(a=maps, b=maps, W=st.integers(1, 30), cs=st.integers(-20, 200), span=st.integers(0, 200),
       limit=st.tuples(st.integers(0, 9), st.integers(0, 5)), pick=st.integers(-1, 12), down=st.booleans())
def test_average_check_matches_the_previous_walk(a, b, W, cs, span, limit, pick, down):
    f_map = _merge_maps(_map(a), _map(b))
    if not f_map:
        return
    ce = cs + span
    if 0 <= pick < len(f_map) - 1:
        # the window ends exactly on an up or a down event, where the last check happens
        ce = max(cs, f_map[pick][0] + (W if down else 0))
    assert _average_within(f_map, W, cs, ce, limit) == _oracle(f_map, W, cs, ce, limit)
