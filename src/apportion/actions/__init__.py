"""The actions a session runs in the configured order: enqueue, allocate, backfill, reclaim, preempt.

Importing the package registers them with the framework (`interface.register_action`).
"""

from __future__ import annotations

from apportion.actions import allocate, backfill, enqueue, preempt, reclaim
from apportion.framework.interface import FunctionAction, register_action

#: the built-in actions, by the name the conf's `actions` line uses
BUILTIN = {
    "enqueue": enqueue.execute,
    "allocate": allocate.execute,
    "backfill": backfill.execute,
    "reclaim": reclaim.execute,
    "preempt": preempt.execute,
}


def register_builtins() -> None:
    """Register every built-in action (again: a name a caller replaced gets the built-in back)."""
    for name, run in BUILTIN.items():
        register_action(FunctionAction(name, run))


register_builtins()
