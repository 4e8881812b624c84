"""The dashboard's pages: Queues (`/`), a queue, Jobs, a job, Reservations (with the submit form and
delete), Nodes. Server-rendered with Jinja2; every table is in the HTML, so a page works without
JavaScript; htmx re-fetches the page's live region every few seconds, and uPlot draws the charts.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from apportion.errors import InputError
from apportion.service.auth import Refused
from apportion.service.common import caller
from apportion.service.core import Service
from apportion.service.dashboard import plans, views
from apportion.service.dashboard.form import STAGE_FIELDS, STAGES, ReservationForm
from apportion.service.dashboard.samples import QueueSamples
from apportion.service.dashboard.units import label, shown, unit
from apportion.service.forecasts import Busy, forecast_for
from apportion.service.objects import ObjectNotFound
from apportion.service.yarn import _reservation_refusal as reservation_refusal
from apportion.web import environment

router = APIRouter(include_in_schema=False)
env = environment("apportion.service.dashboard")
#: seconds between live refreshes of a page's numbers
REFRESH_S = 3

NAV = (("queues", "/", "Queues"), ("jobs", "/jobs", "Jobs"), ("reservations", "/reservations", "Reservations"),
       ("nodes", "/nodes", "Nodes"))


def _svc(request: Request) -> Service:
    return request.app.state.service


def _samples(request: Request) -> QueueSamples:
    return request.app.state.dashboard_samples


def utc(ms: int | float | None, seconds: bool = True) -> str:
    """Epoch milliseconds as a UTC time for people."""
    if ms is None:
        return "-"
    t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC" if seconds else "%Y-%m-%d %H:%M UTC")


def iso(ms: int | float) -> str:
    """Epoch milliseconds as ISO 8601 (a `<time datetime>`)."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat(timespec="seconds")


def span(ms: int | float) -> str:
    """A duration for people."""
    s = ms / 1000
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


env.globals.update(label=label, unit=unit, shown=shown, utc=utc, iso=iso, span=span, nav=NAV,
                   refresh_s=REFRESH_S, web_static="/static/web", static="/static/dashboard",
                   stage_fields=STAGE_FIELDS, stages=STAGES)


def page(request: Request, template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
    """Render a page with what every page has (the clock of its numbers, the URL it refreshes from)."""
    svc = _svc(request)
    now = svc.clock()
    html = env.get_template(template).render(request=request, self_url=str(request.url.path) + (
        "?" + request.url.query if request.url.query else ""), updated_ms=now, ticks=svc.loop.ticks, **ctx)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


async def _read(request: Request, fn: Any) -> Any:
    svc = _svc(request)
    _samples(request).observe(svc)
    return await asyncio.to_thread(svc.read, fn)


def not_found(request: Request, what: str) -> HTMLResponse:
    """A page saying what was not found (404)."""
    return page(request, "notfound.html", status=404, active="", what=what)


# -- queues ------------------------------------------------------------------------------------------------
@router.get("/", response_class=HTMLResponse)
async def queues_page(request: Request) -> Response:
    """The queue tree with each queue's numbers as bars on the cluster's scale."""
    svc = _svc(request)
    rows, dims, total = await _read(request, lambda: views.queue_rows(svc))
    return page(request, "queues.html", active="queues", rows=rows, dims=dims, total=total)


@router.get("/queues/{name}", response_class=HTMLResponse)
async def queue_page(request: Request, name: str) -> Response:
    """One queue: its numbers, allocated against deserved over time, its jobs, its child queues."""
    svc = _svc(request)

    def collect() -> Any:
        rows, dims, total = views.queue_rows(svc)
        row = next((r for r in rows if r.name == name), None)
        if row is None:
            return None
        jobs, _ = views.jobs(svc, queue=name)
        children = [r for r in rows if r.parent == name]
        reservations = []
        if row.reservable:
            reservations = [r for r in plans.plan_view(svc, name, svc.clock())["reservations"]]
        return row, dims, total, jobs, children, reservations, {r.name for r in rows}

    got = await _read(request, collect)
    if got is None:
        return not_found(request, f"queue {name}")
    row, dims, total, jobs, children, reservations, known = got
    samples = _samples(request)
    history = [views.history_chart(name, d, *samples.series(name, d)) for d in dims]
    return page(request, "queue.html", active="queues", row=row, dims=dims, total=total, jobs=jobs,
                children=children, reservations=reservations, history=history, known=known)


# -- jobs --------------------------------------------------------------------------------------------------
@router.get("/jobs", response_class=HTMLResponse)
async def jobs_page(request: Request, queue: str = "", namespace: str = "", state: str = "") -> Response:
    """Every job, waiting ones first with why they wait; filters by queue, namespace and state."""
    svc = _svc(request)
    jobs, choices = await _read(request, lambda: views.jobs(svc, queue, namespace, state))
    return page(request, "jobs.html", active="jobs", jobs=jobs, choices=choices,
                picked={"queue": queue, "namespace": namespace, "state": state})


@router.get("/jobs/{namespace}/{name}", response_class=HTMLResponse)
async def job_page(request: Request, namespace: str, name: str) -> Response:
    """One job: why it waits, its tasks and the nodes they run on."""
    svc = _svc(request)
    job = await _read(request, lambda: views.job_summary(svc, namespace, name))
    if job is None:
        return not_found(request, f"job {namespace}/{name}")
    return page(request, "job.html", active="jobs", job=job, forecast=None, forecast_now=None, forecast_error="",
                assume="")


@router.get("/jobs/{namespace}/{name}/forecast", response_class=HTMLResponse)
async def job_forecast_page(request: Request, namespace: str, name: str, assume: str = "") -> Response:
    """The job's page with its forecast: when it is estimated to start, on what basis, and the cheapest
    changes that let it start in the next session (`GET /api/v1/jobs/{ns}/{name}/forecast`)."""
    svc = _svc(request)
    job = await _read(request, lambda: views.job_summary(svc, namespace, name))
    if job is None:
        return not_found(request, f"job {namespace}/{name}")
    answer: dict[str, Any] | None = None
    error = ""
    try:
        answer = await forecast_for(request, namespace, name, assume_runtime=assume.strip() or None)
    except ObjectNotFound:  # deleted since its summary was read
        return not_found(request, f"job {namespace}/{name}")
    except InputError as e:  # a bad runtime, a job that is not pending or not in the cache
        error = str(e)
    except Busy:
        error = "Other forecasts are running; try again in a few seconds."
    return page(request, "job.html", active="jobs", job=job, forecast=answer and answer["jobs"][0],
                forecast_now=answer and answer["now"], forecast_error=error, assume=assume)


# -- nodes -------------------------------------------------------------------------------------------------
@router.get("/nodes", response_class=HTMLResponse)
async def nodes_page(request: Request, group: str = "", sort: str = "name", desc: bool = False) -> Response:
    """Every node's allocatable, allocated and idle, grouped by a label, sortable by column."""
    svc = _svc(request)
    data = await _read(request, lambda: views.nodes(svc, group, sort, desc))

    def sort_url(col: str) -> str:
        q = {"group": data["group_by"], "sort": col, "desc": "false" if (data["sort"] == col and data["desc"])
             or (data["sort"] != col and col == "name") else "true"}
        return "/nodes?" + urlencode({k: v for k, v in q.items() if v})

    return page(request, "nodes.html", active="nodes", sort_url=sort_url, **data)


# -- reservations ------------------------------------------------------------------------------------------
def _plans(svc: Service, user: str | None) -> list[dict[str, Any]]:
    now = svc.clock()
    # with --acls, only the plans YARN's list would show this caller
    return [plans.plan_view(svc, name, now) for name in svc.listable_plans(user)]


@router.get("/reservations", response_class=HTMLResponse)
async def reservations_page(request: Request, submitted: str = "", deleted: str = "") -> Response:
    """Per reservable queue: the Gantt chart, the plan's load against capacity and the policy's limits;
    the submit form."""
    svc = _svc(request)
    views_ = await _read(request, lambda: _plans(svc, caller(request)))
    user = caller(request) or "dashboard"
    form = ReservationForm.blank(user, views_[0]["name"] if views_ else "")
    return page(request, "reservations.html", active="reservations", plans=views_, form=form,
                submitted=submitted, deleted=deleted)


@router.post("/reservations", response_class=HTMLResponse)
async def submit_reservation(request: Request) -> Response:
    """Submit the form through YARN's submit handler; on an error the form comes back with it next to
    the field, and nothing is stored."""
    svc = _svc(request)
    data = await request.form()
    form = ReservationForm({k: str(v) for k, v in data.items()})
    reservable = sorted(svc.reservations.plans)
    user = caller(request) or form.get("user").strip()
    # the form is checked before an id is taken: a rejected form uses up no id and writes nothing
    body = form.to_body(reservable, svc.clock(), "")
    status, answer = (await svc.reservation("new_reservation", user, None)) if body is not None else (0, None)
    rid = answer.get("reservation-id", "") if status == 200 and isinstance(answer, dict) else ""
    if rid and body is not None:
        body["reservation-id"] = rid
        status, answer, refused = await yarn_call(svc, "submit", user, body)
        if status == 202:
            return RedirectResponse(f"/reservations?submitted={rid}#plan-{body['queue']}", status_code=303)
        if refused:
            form.errors["form"] = refused
        else:
            form.answer_error((answer or {}).get("RemoteException", {}).get("message", f"refused ({status})"))
    elif body is not None:
        form.errors["form"] = (answer or {}).get("RemoteException", {}).get("message", "no reservation id")
    views_ = await _read(request, lambda: _plans(svc, caller(request)))
    return page(request, "reservations.html", active="reservations", plans=views_, form=form, submitted="",
                deleted="")


async def yarn_call(svc: Service, op: str, user: str, body: Any) -> tuple[int, Any, str]:
    """A reservation write as `/ws/v1/cluster/reservation/<op>` makes it: the same handler, with the
    same ACL check in the same writer job, counted in the same metric. Returns the status, the answer
    and, when an ACL refused it, the refusal's message."""
    check = (lambda: reservation_refusal(svc, op, user, body)) if user else None
    try:
        status, answer = await svc.reservation(op, user or None, body, check)
    except Refused as e:
        svc.metrics.reservation_request(op, 403)
        return 403, None, e.refusal.message()
    svc.metrics.reservation_request(op, status)
    return status, answer, ""


def _find(svc: Service, rid: str, user: str | None) -> dict[str, Any] | None:
    """One reservation, if `user` may list its plan (YARN's list ACL, as the reservations page)."""
    now = svc.clock()
    for name in svc.listable_plans(user):
        for r in plans.plan_view(svc, name, now)["reservations"]:
            if r["id"] == rid:
                return dict(r, queue=name)
    return None


@router.get("/reservations/{rid}/delete", response_class=HTMLResponse)
async def confirm_delete(request: Request, rid: str) -> Response:
    """Ask before deleting."""
    svc = _svc(request)
    r = await _read(request, lambda: _find(svc, rid, caller(request)))
    if r is None:
        return not_found(request, f"reservation {rid}")
    return page(request, "delete.html", active="reservations", r=r, user=caller(request) or r["user"], error="")


@router.post("/reservations/{rid}/delete", response_class=HTMLResponse)
async def delete_reservation(request: Request, rid: str) -> Response:
    """Delete through YARN's delete handler (with its ACL check)."""
    svc = _svc(request)
    data = await request.form()
    user = caller(request) or str(data.get("user", "")).strip()
    body = {"reservation-id": rid}
    status, answer, refused = await yarn_call(svc, "delete", user, body)
    if status == 200:
        return RedirectResponse(f"/reservations?deleted={rid}", status_code=303)
    error = refused or (answer or {}).get("RemoteException", {}).get("message", f"refused ({status})")
    r = await _read(request, lambda: _find(svc, rid, caller(request)))
    if r is None:
        return not_found(request, f"reservation {rid}")
    return page(request, "delete.html", active="reservations", r=r, user=user, error=error)
