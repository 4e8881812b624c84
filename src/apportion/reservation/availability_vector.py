"""The plan's availability on numpy arrays (`PlanAvailability._available_fused`'s vectorised twin).

For the default calculator, the committed load's deltas are summed in time order as int64 arrays:
the same over-commit check, the same memory-ordered min with the policy's limit and the same
canonical step function as the scalar pass, which stays the reference (tests/reservation/
test_res_available_fast.py compares the two).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from apportion.reservation.resmath import ZERO, Res
from apportion.reservation.stepfn import StepFunction

#: values up to this size cannot overflow int64 when a few thousand of them are summed
VECTOR_MAX_VALUE = 1 << 48


def fused_vectorised(
    segs: list[tuple[tuple[list[int], list[Res]], int]], cap: Res, limit: Res | None, end: int,
    over_committed: Callable[[int, int], None],
) -> StepFunction | None:
    """`_available_fused` for the default calculator on numpy arrays: the same deltas summed in
    time order, the same over-commit check and memory-ordered min, the same canonical form.
    None (use the scalar pass) when a value is too large for exact int64 sums."""
    times = []
    deltas = []
    for (keys, values), col in segs:
        v = np.array(values, dtype=np.int64).reshape(-1, 2)
        if v.size and int(np.abs(v).max()) > VECTOR_MAX_VALUE:
            return None
        d = np.zeros((len(keys), 4), dtype=np.int64)
        d[:, col:col + 2] = np.diff(v, axis=0, prepend=np.zeros((1, 2), dtype=np.int64))
        times.append(np.array(keys, dtype=np.int64))
        deltas.append(d)
    t = np.concatenate(times)
    order = np.argsort(t, kind="stable")
    t = t[order]
    run = np.cumsum(np.concatenate(deltas)[order], axis=0)
    # the running sums after the last delta at each time
    last = np.ones(len(t), dtype=bool)
    last[:-1] = t[1:] != t[:-1]
    t = t[last]
    run = run[last]
    a = np.array(cap, dtype=np.int64) - run[:, 0:2]
    if bool((a < 0).any()):
        over_committed(int(t[(a < 0).any(axis=1)][0]), end - 1)
    if limit is not None:
        q = np.array(limit, dtype=np.int64) - run[:, 2:4]
        a = np.where((a[:, 0] > q[:, 0])[:, None], q, a)
    change = np.ones(len(t), dtype=bool)
    change[1:] = (a[1:] != a[:-1]).any(axis=1)
    change[0] = bool((a[0] != 0).any())
    keys_out: list[int] = t[change].tolist()
    kept = a[change]
    values_out: list[Res] = list(zip(kept[:, 0].tolist(), kept[:, 1].tolist()))
    if values_out and values_out[-1] != ZERO:
        keys_out.append(end)
        values_out.append(ZERO)
    return StepFunction._bulk(keys_out, values_out)
