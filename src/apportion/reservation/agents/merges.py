"""Merges of sorted time arrays and the candidates' cost sums, for `aligned_arrays.ArrayWindows`.

Each is the fast form of a plain reference named in its docstring, property-tested against it
(tests/reservation/test_res_aligned_rows.py).
"""

from __future__ import annotations

import numpy as np

#: this many windows or fewer are summed one by one (np.add.accumulate), more position by position
_POSITIONS = 16
#: `window_sums` goes on position by position while more than this many windows have a piece there,
#: then sums those left one by one
_FEW = 8
#: ... or while the longest window has at most this many positions left
_FEW_DEPTH = 4
#: windows of at most this many terms each are summed as the columns of one padded array
_PADDED = 8
#: times of a magnitude below this, shifted left by a few bits, still fit int64
_PACKED = 1 << 62


def grid(*parts: np.ndarray, counted: int = 0) -> tuple[np.ndarray, list[np.ndarray]]:
    """The sorted distinct times of sorted parts, and for each part how many of its times lie at
    or before each of them (`part.searchsorted(grid, "right")`, the reference): one stable merge
    of the parts, where a binary search per time and part cost several times more. The counts
    are int32 running sums (a part of over 2**31 times is not a stage's). The first `counted`
    parts are not counted: their place in the list holds the grid itself (a caller that needs no
    count of a part)."""
    x = np.concatenate(parts)
    tag = np.repeat(np.arange(len(parts), dtype=np.int8), [len(p) for p in parts])
    bits = (len(parts) - 1).bit_length()
    filled = [p for p in parts if len(p)]
    if (filled and -(_PACKED >> bits) <= min(int(p[0]) for p in filled)
            and max(int(p[-1]) for p in filled) < _PACKED >> bits):
        # each time with its part's number in the low bits: one sort of the packed values orders
        # them as the stable sort by time does (equal times by part), without gathering by an order
        packed = (x << bits) | tag
        packed.sort(kind="stable")
        x = packed >> bits
        tag = packed & ((1 << bits) - 1)
    else:
        order = np.argsort(x, kind="stable")
        x = x[order]
        tag = tag[order]
    # the last of equal times: every part's times there are counted
    last = np.empty(len(x), dtype=bool)
    last[-1:] = True
    np.not_equal(x[1:], x[:-1], out=last[:-1])
    keep = np.flatnonzero(last)
    g = x[keep]
    return g, [g if k < counted else np.cumsum(tag == k, dtype=np.int32)[keep] for k in range(len(parts))]


def lattice_grid(lo: int, dur: int, starts: np.ndarray, part: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`grid(starts, part, counted=1)` where starts are every `lo + k dur` up to the last one and
    part's times lie in `[lo, starts[-1] + dur)`, with the candidate each grid time lies in: after
    the merge, the times at or before a grid time number its position + 1, and the starts among
    them its candidate + 1, so the part's count there is the difference (neither a running count
    nor which part a time came from is needed)."""
    x = np.concatenate((starts, part))
    x.sort(kind="stable")  # two sorted runs: merged in linear time
    last = np.empty(len(x), dtype=bool)
    last[-1:] = True
    np.not_equal(x[1:], x[:-1], out=last[:-1])
    keep = np.flatnonzero(last)
    g = x[keep]
    win = (g - lo) // dur
    return g, win, keep - win



def window_sums(terms: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Per window, its terms (rows first[w]:first[w + 1], in time order) added one after the other
    from 0.0, as a walk adds them: a few windows each with np.add.accumulate (which never
    regroups), many position by position across the windows that have a piece there, until
    only a few are left, which go on each with np.add.accumulate; windows of a few terms each as
    the columns of one array. No term may be -0.0 (a cost term, `ArrayWindows._terms`, never is)."""
    n = len(first)
    if n <= _POSITIONS:
        b = [*first.tolist(), len(terms)]
        return np.array([np.add.accumulate(terms[i:j])[-1] for i, j in zip(b, b[1:])], dtype=np.float64)
    bounds = np.append(first, len(terms))
    total = np.zeros(n, dtype=np.float64)
    sizes = np.diff(bounds)
    deepest = int(sizes.max())
    if deepest <= _PADDED:
        # each window's terms in a row of its own, padded with +0.0 after them: adding +0.0 leaves a
        # sum as it is (no term or partial sum here is -0.0), so adding column after column is
        # adding each window's terms in order; one scatter instead of a gather per position
        rows = np.zeros(n * deepest, dtype=np.float64)
        rows[np.arange(len(terms)) + np.repeat(np.arange(0, n * deepest, deepest) - first, sizes)] = terms
        grid = rows.reshape(n, deepest)
        for j in range(deepest):
            total += grid[:, j]
        return total
    # every window has a first piece; the windows with more than j pieces are found among those
    # with more than j - 1 (most windows have one or two pieces: a pass over all of them each
    # time cost more than the additions), and the last few go on one by one unless they are
    # only a few positions from their ends (a window each cost more than a position then)
    total += terms[first]
    has = np.flatnonzero(sizes > 1)
    j = 1
    while len(has) > _FEW or (len(has) and deepest - j <= _FEW_DEPTH):
        total[has] += terms[first[has] + j]
        j += 1
        has = has[sizes[has] > j]
    for w in has.tolist():
        total[w] = np.add.accumulate(np.concatenate(((total[w],), terms[bounds[w] + j:bounds[w + 1]])))[-1]
    return total


def sorted_union(*parts: np.ndarray) -> np.ndarray:
    """Sorted distinct times of sorted parts: a stable sort (timsort) merges the sorted runs in
    linear time, where the default quicksort sorts them again from scratch."""
    x = np.concatenate(parts)
    x.sort(kind="stable")
    keep = np.empty(len(x), dtype=bool)
    keep[:1] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]
