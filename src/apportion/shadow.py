"""A shadow scheduler: a cache kept from a watch stream, a session every period of stream time, and
each session's decisions printed as a JSON line. Nothing is sent to the cluster: it shows what this
Volcano configuration would do next to the scheduler that really runs (a dry run before installing).

Stream time is an event's `time` field when the stream carries one (seconds, or an RFC 3339 time: a
recorded stream replays the same way every time), else the wall time the event arrived at. A session
runs once `period` of stream time has passed since the first event it has not seen, when the stream
pauses for `period` seconds, and at its end.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import datetime
from typing import IO, Any

import orjson

from apportion.engine import CycleResult, dispatch, run_cache_session
from apportion.errors import InputError
from apportion.framework.conf import SchedulerConf
from apportion.kube.watch import LineSource, Pause, Value, values
from apportion.state.cache import SchedulerCache, stderr_report
from apportion.state.events import parse_event
from apportion.state.memory import CacheBinder, CacheEvictor, CacheStatusUpdater


def stream_time(data: Any, where: str) -> float | None:
    """The event's own time in seconds, or None when it carries none."""
    t = data.get("time") if isinstance(data, dict) else None
    if t is None:
        return None
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        return float(t)
    if isinstance(t, str):
        try:
            return datetime.fromisoformat(t).timestamp()
        except ValueError:
            pass
    raise InputError(f"time: expected seconds or an RFC 3339 time, got {t!r}", where=where)


class Shadow:
    """The cache, the clock and the sessions of one shadow run."""

    def __init__(self, conf: SchedulerConf | None, *, period: float = 1.0, apply: bool = False,
                 keep_going: bool = False, out: Callable[[str], None] | None = None,
                 report: Callable[[str], None] | None = None) -> None:
        self.conf = conf
        self.period = period
        self.apply_decisions = apply
        self.keep_going = keep_going
        self.out = out or _print_line
        self.report = report or stderr_report
        self.cache = SchedulerCache(report=self.report)
        self.sessions = 0
        self.events = 0
        self.skipped = 0
        #: stream time of the first event no session has seen yet (None: every event was seen)
        self.pending_since: float | None = None
        self._warned: set[str] = set()
        #: stream time of the last event read
        self.last_time = 0.0
        self._t0 = time.monotonic()

    # ================================================================= input
    def feed(self, source: LineSource, name: str, *, once: bool = False) -> None:
        """Read the stream to its end, running sessions as it goes (only one, at the end, with once)."""
        for item in values(source, name, timeout=None if once else self.period):
            if isinstance(item, Pause):
                if self.pending_since is not None:
                    self.last_time = self._wall()
                    self.session(self.last_time)
                continue
            if isinstance(item, InputError):
                self._bad(item)
                continue
            assert isinstance(item, Value)
            try:
                self._value(item, f"{name}: line {item.line}", once)
            except InputError as e:
                self._bad(e)
        if not once and (self.pending_since is not None or self.sessions == 0):
            self.session(self.last_time)

    def _value(self, item: Value, where: str, once: bool) -> None:
        ev = parse_event(item.data, where)
        t = stream_time(item.data, where)
        t = self._wall() if t is None else t
        self.last_time = t
        if not once and self.pending_since is not None and t >= self.pending_since + self.period:
            self.session(t)
        self.cache.apply(ev)
        self.events += 1
        if self.pending_since is None:
            self.pending_since = t

    def _bad(self, e: InputError) -> None:
        if not self.keep_going:
            raise e
        self.skipped += 1
        self.report(f"{e}; skipped")

    def _wall(self) -> float:
        return time.monotonic() - self._t0

    # ================================================================= sessions
    def run_session(self) -> CycleResult:
        """One session over the cache as it is (decisions sent back into it with `apply`)."""
        self.sessions += 1
        result = run_cache_session(self.cache, self.conf, session_id=f"session-{self.sessions}")
        if self.apply_decisions:
            dispatch(result, CacheBinder(self.cache), CacheEvictor(self.cache), CacheStatusUpdater(self.cache))
        self.pending_since = None
        return result

    def session(self, t: float) -> None:
        """Run a session and print its decisions as one JSON line."""
        result = self.run_session()
        for w in result.warnings:
            if w not in self._warned:
                self._warned.add(w)
                self.report(w)
        line: dict[str, Any] = {"session": self.sessions, "time": round(t, 6), "applied": self.events}
        body = result.to_json()
        body.pop("queues", None)
        line.update(body)
        if result.bind_errors:
            line["bindErrors"] = dict(sorted(result.bind_errors.items()))
        self.out(orjson.dumps(line).decode())


def _print_line(line: str) -> None:
    # flushed at once: a person or a pipe reading a live shadow sees each session as it ends
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def open_stream(path: str) -> IO[bytes]:
    """The stream's file (stdin for `-`), opened for unbuffered line reads."""
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", where=path) from None
