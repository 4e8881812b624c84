"""Kept samples of each queue's allocated and deserved, for the queue page's chart over time.

The dashboard samples the scheduling loop's last queue report (the numbers `/metrics` exports) at
most once per `period_s` and only when a new session ran, and keeps the last `keep` samples per
queue in memory: the history starts when the server starts, it is not stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from apportion.service.dashboard.units import value

if TYPE_CHECKING:
    from apportion.service.core import Service


class QueueSamples:
    """(time ms, {resource: (allocated, deserved)}) per queue, newest last."""

    def __init__(self, period_s: float = 2.0, keep: int = 1800) -> None:
        self.period_ms = int(period_s * 1000)
        self.keep = keep
        self._series: dict[str, deque[tuple[int, dict[str, tuple[float, float]]]]] = {}
        self._last_tick = -1
        self._last_ms: int | None = None
        self._lock = threading.Lock()

    def observe(self, svc: Service) -> None:
        """Take a sample if a session ran since the last one and the period has passed."""
        loop = svc.loop
        report = loop.last_report
        now = svc.clock()
        with self._lock:
            if report is None or loop.ticks == self._last_tick:
                return
            if self._last_ms is not None and now - self._last_ms < self.period_ms:
                return
            self._last_tick, self._last_ms = loop.ticks, now
        for name, rep in report.items():
            alloc: dict[str, Any] = rep.get("allocated") or {}
            des: dict[str, Any] = rep.get("deserved") or {}
            self.add(name, now, {d: (value(alloc.get(d, 0)) or 0.0, value(des.get(d, 0)) or 0.0)
                                 for d in set(alloc) | set(des)})

    def add(self, queue: str, t_ms: int, point: dict[str, tuple[float, float]]) -> None:
        """Keep one sample of a queue: (allocated, deserved) per resource, in natural units."""
        with self._lock:
            self._series.setdefault(queue, deque(maxlen=self.keep)).append((t_ms, point))

    def series(self, queue: str, dim: str) -> tuple[list[float], list[float], list[float]]:
        """Times (seconds since the epoch), allocated and deserved of one queue on one resource."""
        with self._lock:
            pts = list(self._series.get(queue, ()))
        return ([t / 1000 for t, _ in pts], [p.get(dim, (0.0, 0.0))[0] for _, p in pts],
                [p.get(dim, (0.0, 0.0))[1] for _, p in pts])

    async def run(self, svc: Service) -> None:
        """Sample in the background for as long as the server runs."""
        while True:
            with contextlib.suppress(Exception):
                self.observe(svc)
            await asyncio.sleep(min(1.0, self.period_ms / 1000))
