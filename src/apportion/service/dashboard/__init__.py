"""The dashboard `apportion serve` shows at `/`: queues, jobs, reservations and nodes, live.

`install(app)` adds the pages, the static files (the shared look, and htmx and uPlot vendored from
npm by `make vendor`) and the background sampler of the queue history to the service's app.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from importlib import resources as ires
from typing import Any

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from apportion.service.dashboard.samples import QueueSamples


def install(app: FastAPI) -> None:
    """Serve the dashboard from this app (its service is `app.state.service`)."""
    from apportion.service.dashboard.routes import router

    samples = QueueSamples()
    app.state.dashboard_samples = samples
    app.mount("/static/web", StaticFiles(directory=str(ires.files("apportion.web").joinpath("static"))),
              name="web-static")
    app.mount("/static/dashboard",
              StaticFiles(directory=str(ires.files("apportion.service.dashboard").joinpath("static"))),
              name="dashboard-static")
    app.include_router(router)
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        # the history of the queue page is sampled whether or not a page is open
        task = asyncio.create_task(samples.run(app.state.service))
        try:
            async with inner(a) as state:
                yield state
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    app.router.lifespan_context = lifespan


__all__ = ["install"]
