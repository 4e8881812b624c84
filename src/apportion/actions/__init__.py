"""The actions a session runs in the configured order: enqueue, allocate, backfill, reclaim, preempt."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from apportion.framework.session import Session


def get_action(name: str) -> Callable[[Session], None]:
    from apportion.actions import allocate, backfill, enqueue, preempt, reclaim

    return {
        "enqueue": enqueue.execute,
        "allocate": allocate.execute,
        "backfill": backfill.execute,
        "reclaim": reclaim.execute,
        "preempt": preempt.execute,
    }[name]
