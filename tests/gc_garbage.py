"""The cyclic garbage a block of test code leaves: the service freezes what is alive between ticks
(service/collector.py), so a reference cycle alive at that moment is only freed by a collection over
the whole heap, and the tests of the write paths check that they make none."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cyclic_garbage(kinds: tuple[str, ...]) -> Iterator[list[object]]:
    """Yield a list that, once the block ends, holds the objects of these type names (`frame`,
    `traceback`, a class's name) that the block left as cyclic garbage; the automatic collector is
    off meanwhile, and the garbage is dropped afterwards."""
    gc.collect()
    flags = gc.get_debug()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    before = len(gc.garbage)
    found: list[object] = []
    try:
        yield found
        gc.collect()
        found.extend(o for o in gc.garbage[before:] if type(o).__name__ in kinds)
    finally:
        del gc.garbage[before:]
        gc.set_debug(flags)
        gc.enable()


def named(objects: list[object]) -> list[str]:
    """Each object's code name if it is a frame, else its type's name (for an assertion's message)."""
    return [getattr(getattr(o, "f_code", None), "co_name", type(o).__name__) for o in objects]
