"""Python's cycle collector off around work that allocates much and leaves little garbage in cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_off() -> Iterator[None]:
    """The cycle collector off inside (and back on after, as it was).

    For what allocates many objects that live on or die by reference counting: importing a command's
    modules, and a whole `cycle` (the 5,000-node session's collections cost 5 % of its CPU, three full
    passes over what it holds, and writing the 1,000-node JSON made one full pass over the dump: 5 %
    of that command; the 5k cycle peaks at the same RSS with the collector off). Before the collector
    is back on, what was allocated meanwhile is moved to the oldest generation without a pass (freeze,
    then unfreeze), so the first allocation after does not scan it all as the youngest."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if was:
            gc.enable()
