"""What runs on a Ray node for one bound pod: a process (a command) or a function, or an actor.

A command runs as a child of the Ray worker and dies with it (Linux's parent-death signal), so a
`ray.cancel(force=True)` of the task also stops the process it started; a non-zero exit status fails
the task. Ray's own retries are off (`max_retries=0`): whether and where a task runs again is the
scheduler's decision, not Ray's.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the Ray worker that started it dies."""
    # not Linux (no prctl): the process may outlive a cancelled task
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def run_command(argv: Sequence[str]) -> int:
    """Run a process to its end; its exit status, or RuntimeError when it is not zero."""
    code = subprocess.run(list(argv), preexec_fn=_die_with_parent, check=False).returncode
    if code != 0:
        raise RuntimeError(f"{argv[0]}: exit status {code}")
    return 0


def call_function(fn: Any, args: Sequence[Any]) -> Any:
    """Call a submitted function (its result stays in Ray's object store)."""
    return fn(*args)


_remote: dict[str, Any] = {}


def remote(name: str) -> Any:
    """The Ray remote function `command` or `function` (made once per process, after Ray is imported)."""
    if name not in _remote:
        import ray

        _remote["command"] = ray.remote(max_retries=0)(run_command)
        _remote["function"] = ray.remote(max_retries=0)(call_function)
    return _remote[name]
