"""The dashboard's pages without a browser: the HTML every page serves, the form's checks, the queue
tree, the plan arithmetic and the vendored files (the report's shared look: test_shared_charts.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from workload import NS, busy_cluster

from apportion.reservation.stepfn import StepFunction
from apportion.service.app import create_app
from apportion.service.core import ServiceConfig
from apportion.service.dashboard.form import ReservationForm
from apportion.service.dashboard.plans import max_window_average

ROOT = Path(__file__).parents[3]
U = {"user.name": "admin"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """The app on a fresh SQLite database with the busy cluster applied and one session run (the loop
    itself is off, so every number is fixed)."""
    app = create_app(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'a.db'}", loop=False))
    with TestClient(app) as c:
        import json

        r = c.post("/api/v1/apply", params=U, content=json.dumps({"kind": "List", "apiVersion": "v1",
                                                                   "items": busy_cluster()}))
        assert r.status_code == 200, r.text
        app.state.service.loop.tick()
        yield c


PATHS = ["/", "/queues/batch", "/queues/dedicated", "/jobs", f"/jobs/{NS}/huge", f"/jobs/{NS}/serving",
         "/jobs?state=Running", "/nodes", "/nodes?group=example.com/pool&sort=idle&desc=true",
         "/reservations"]


def test_every_page_is_html_with_its_tables_and_only_local_assets(client: TestClient) -> None:
    for path in PATHS:
        r = client.get(path)
        assert r.status_code == 200, path
        assert r.headers["content-type"].startswith("text/html")
        html = r.text
        assert "<table" in html or "<svg" in html, path  # the numbers are in the HTML itself
        # no CDN: every script and style sheet is one of the package's own files
        for url in re.findall(r'(?:src|href)="([^"]+\.(?:js|css))"', html):
            assert url.startswith("/static/"), (path, url)
            assert client.get(url).status_code == 200, url
    assert client.get("/queues/nope").status_code == 404
    assert client.get(f"/jobs/{NS}/nope").status_code == 404


def test_queue_tree_lists_each_queue_once_under_its_parent(client: TestClient) -> None:
    html = client.get("/").text
    names = re.findall(r'<tr data-queue="([^"]+)"', html)
    assert len(names) == len(set(names)), names  # dedicated-default was listed twice once
    assert names.index("dedicated-default") == names.index("dedicated") + 1
    assert "tree-1" in html


def test_waiting_job_shows_the_api_reason(client: TestClient) -> None:
    api = client.get(f"/api/v1/jobs/{NS}/huge").json()
    assert api["waiting"]
    html = client.get(f"/jobs/{NS}/huge").text
    assert re.search(r'id="job-reason">([^<]*)<', html).group(1) == _html(api["waiting"])  # type: ignore[union-attr]


def test_a_long_reason_opens_on_demand_in_the_lists() -> None:
    from apportion.service.dashboard.routes import env

    long = "gang 0/4 tasks placeable (minMember 4); " + "; ".join(f"queue q{i}: not above its deserved" for i in range(20))
    short = "queue q: cpu 24 > deserved 21.33 (short by 2.667)"
    jobs = [{"uid": f"ns/{n}", "namespace": "ns", "name": n, "queue": "q", "reservation": "", "phase": "Pending",
             "running": 0, "pending": 1, "done": 0, "waiting": w} for n, w in (("a", long), ("b", short))]
    html = env.from_string('{% from "macros.html" import jobs_table with context %}{{ jobs_table(jobs, "c") }}'
                           ).render(jobs=jobs)
    a, b = html.split('<tr data-job="ns/b">')
    # the whole reason is there (without JavaScript too), its start shown and the rest behind a click
    assert f"<summary>{_html(long[:160])}…</summary>{_html(long)}</details>" in a
    assert f'<td class="reason">{_html(short)}</td>' in b


def _html(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


def _listed(client: TestClient) -> list[dict[str, Any]]:
    r = client.get("/ws/v1/cluster/reservation/list", params={"queue": "dedicated", **U})
    return r.json().get("reservations") or []


def _form(**kw: str) -> dict[str, str]:
    base = {"user": "alice", "queue": "dedicated", "name": "n", "interpreter": "R_ALL", "arrival": "5",
            "deadline": "65", "stage-0-memory": "4096", "stage-0-vcores": "2", "stage-0-containers": "4",
            "stage-0-concurrency": "4", "stage-0-duration": "30"}
    base.update(kw)
    return base


@pytest.mark.parametrize("field, value, message", [
    ("deadline", "1", "after the arrival"),
    ("arrival", "soon", "whole number"),
    ("stage-0-vcores", "", "required"),
    ("stage-0-concurrency", "9", "cannot exceed"),
    ("queue", "batch", "reservable"),
    ("stage-0-memory", "99999999", "largest gang"),  # YARN's validator answers this one
])
def test_invalid_form_shows_the_error_by_the_field_and_stores_nothing(client: TestClient, field: str, value: str,
                                                                       message: str) -> None:
    r = client.post("/reservations", data=_form(**{field: value}), follow_redirects=False)
    assert r.status_code == 200
    err_id = "stage-0-concurrency" if message == "largest gang" else field
    m = re.search(rf'<span class="error" id="err-{err_id}">([^<]*)</span>', r.text)
    assert m and message in m.group(1), r.text[:3000]
    assert f'name="{field}"' in r.text and 'aria-invalid="true"' in r.text
    assert _listed(client) == []


def test_valid_form_is_submitted_through_yarn_and_listed(client: TestClient) -> None:
    r = client.post("/reservations", data=_form(interpreter="R_ORDER_NO_GAP", **{
        "stage-1-memory": "2048", "stage-1-vcores": "1", "stage-1-containers": "2", "stage-1-concurrency": "2",
        "stage-1-duration": "10"}), follow_redirects=False)
    assert r.status_code == 303, r.text[:2000]
    rid = re.search(r"submitted=(reservation_\d+_\d+)", r.headers["location"]).group(1)  # type: ignore[union-attr]
    listed = _listed(client)
    assert [x["reservation-id"] for x in listed] == [rid]
    d = listed[0]["reservation-definition"]
    assert d["reservation-requests"]["reservation-request-interpreter"] == 3
    assert len(d["reservation-requests"]["reservation-request"]) == 2
    page = client.get(r.headers["location"]).text
    assert f'<g data-reservation="{rid}">' in page
    # delete asks first, then deletes through YARN's handler
    assert client.get(f"/reservations/{rid}/delete").status_code == 200
    assert len(_listed(client)) == 1
    r = client.post(f"/reservations/{rid}/delete", data={"user": "alice"}, follow_redirects=False)
    assert r.status_code == 303
    assert _listed(client) == []


def test_form_checks_without_the_service() -> None:
    f = ReservationForm(_form(**{"stage-1-memory": "100"}))
    assert f.to_body(["dedicated"], 0, "reservation_1_0001") is None
    assert set(f.errors) == {"stage-1-vcores", "stage-1-containers", "stage-1-concurrency", "stage-1-duration"}
    f = ReservationForm(_form(**{"stage-0-memory": "", "stage-0-vcores": "", "stage-0-containers": "",
                                 "stage-0-concurrency": "", "stage-0-duration": ""}))
    assert f.to_body(["dedicated"], 0, "r") is None and "stage-0-memory" in f.errors
    body = ReservationForm(_form()).to_body(["dedicated"], 1_000, "reservation_1_0001")
    assert body is not None
    d = body["reservation-definition"]
    assert (d["arrival"], d["deadline"]) == (1_000 + 5 * 60_000, 1_000 + 65 * 60_000)
    assert d["reservation-requests"]["reservation-request"][0]["duration"] == 30 * 60_000


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(1, 20), st.integers(0, 9)), min_size=1, max_size=6),
       st.integers(1, 30))
def test_max_window_average_is_the_brute_force_maximum(pieces: list[tuple[int, int, int]], window: int) -> None:
    f = StepFunction.from_intervals([(a, a + n, (v, v)) for a, n, v in pieces])
    s, e = 10, 70
    brute = max(f.integral(a, a + window)[0] // window for a in range(s - window, e))
    assert max_window_average(f, s, e, window)[0] == brute


def test_vendored_libraries_match_the_makefile_pins() -> None:
    vendor = ROOT / "src/apportion/web/static/vendor"
    make = (ROOT / "Makefile").read_text()
    versions = dict(line.split() for line in (vendor / "VERSIONS").read_text().splitlines())
    assert f"HTMX_VERSION := {versions['htmx.org']}" in make
    assert f"UPLOT_VERSION := {versions['uplot']}" in make
    for f in ("htmx.min.js", "uPlot.iife.min.js", "uPlot.min.css", "LICENSE.htmx", "LICENSE.uplot"):
        assert (vendor / f).stat().st_size > 100, f


def test_nodes_page_counts_the_running_pods_on_each_node(client: TestClient) -> None:
    pods = client.get("/api/v1/pods").json()["items"]
    want: dict[str, float] = {}
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if node and p["status"]["phase"] == "Running":
            cpu = p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
            want[node] = want.get(node, 0.0) + float(cpu)
    assert want  # the busy cluster runs something
    html = client.get("/nodes").text
    got = {n: float(c) for n, c in re.findall(r'data-node="([^"]+)" data-allocated-cpu="([^"]+)"', html)}
    assert {n: c for n, c in got.items() if c} == want  # the nodes page once showed every node idle


def test_nodes_group_by_a_label_and_sort_by_a_column(client: TestClient) -> None:
    html = client.get("/nodes", params={"group": "example.com/pool", "sort": "idle", "desc": "true"}).text
    captions = re.findall(r"<caption>example.com/pool = (\w+): (\d) nodes", html)
    assert captions == [("blue", "2"), ("green", "2")]
    # within a group, most idle first (the main resource, cpu), ties by name
    for block in html.split("<caption>")[1:]:
        nodes = re.findall(r'data-node="([^"]+)" data-allocated-cpu="([^"]+)"', block)
        used = [float(c) for _, c in nodes]
        assert used == sorted(used), nodes
    assert 'aria-sort="descending"' in html


IDLE_QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "idle"},
              "spec": {"weight": 1, "deserved": {"cpu": "4", "memory": "8Gi"},
                       "guarantee": {"resource": {"cpu": "2"}}, "capability": {"cpu": "16", "memory": "64Gi"}}}
CAPACITY_CONF = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: capacity\n'
NO_QUEUE_PLUGIN_CONF = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n'


def _one_job(name: str, queue: str) -> list[dict[str, Any]]:
    return [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": name, "namespace": "t"}, "spec": {"queue": queue, "minMember": 1}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": f"{name}-0", "namespace": "t", "annotations": {"scheduling.k8s.io/group-name": name}},
             "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
             "status": {"phase": "Pending"}}]


def _served(tmp_path: Path, conf: str | None, objs: list[dict[str, Any]]) -> tuple[dict[str, dict[str, dict[str, str]]],
                                                                                   str, dict[tuple[str, str], float]]:
    """One tick over the objects under the conf (None: Volcano's default): each queue's bars as the
    dashboard's `data-` attributes, the index page, and the `volcano_queue_*` samples."""
    import json

    from prometheus_client.parser import text_string_to_metric_families

    conf_path = None
    if conf is not None:
        (tmp_path / "s.conf").write_text(conf)
        conf_path = str(tmp_path / "s.conf")
    app = create_app(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'q.db'}", loop=False, conf_path=conf_path))
    with TestClient(app) as c:
        body = json.dumps({"kind": "List", "apiVersion": "v1", "items": objs})
        assert c.post("/api/v1/apply", params=U, content=body).status_code == 200
        app.state.service.loop.tick()
        assert app.state.service.loop.last_error is None
        html = c.get("/").text
        bars: dict[str, dict[str, dict[str, str]]] = {}
        for q, dim, attrs in re.findall(r'<div class="bar" data-queue="([^"]+)" data-resource="([^"]+)"([^>]*)>', html):
            bars.setdefault(q, {})[dim] = dict(re.findall(r'data-([a-z]+)="([^"]*)"', attrs))
        samples = {(s.name, s.labels.get("queue_name", "")): s.value
                   for fam in text_string_to_metric_families(c.get("/metrics").text) for s in fam.samples
                   if s.name.startswith("volcano_queue")}
        return bars, html, samples


def _note_of(html: str, queue: str) -> str:
    row = html[html.index(f'<tr data-queue="{queue}"'):]
    row = row[:row.index("</tr>")]
    notes = re.findall(r'<p class="muted">([^<]*)</p>', row)
    return notes[0] if notes else ""


def test_a_queue_without_jobs_shows_its_configuration_and_allocated_zero(tmp_path: Path) -> None:
    """Under proportion (Volcano's default conf) a queue no session reports, having no job, draws its
    bars from its spec with nothing allocated, and `/metrics` gives it allocated 0, as Volcano's queue
    plugins record such a queue; its deserved stays unknown, since proportion ignores the spec's."""
    bars, html, samples = _served(tmp_path, None, [IDLE_QUEUE])
    assert "No job in the last session" in _note_of(html, "idle")
    cpu, mem = bars["idle"]["cpu"], bars["idle"]["memory"]
    assert (cpu["allocated"], cpu["guarantee"], cpu["capability"]) == ("0.0", "2.0", "16.0")
    assert cpu["deserved"] == "" and mem["deserved"] == ""
    assert mem["guarantee"] == "0.0" and float(mem["capability"]) == 64 * 1024**3
    assert mem["realcapability"] == ""  # not written by the spec: not shown as a number
    assert samples[("volcano_queue_allocated_milli_cpu", "idle")] == 0.0
    assert samples[("volcano_queue_allocated_memory_bytes", "idle")] == 0.0
    assert ("volcano_queue_share", "idle") not in samples  # no attributes, no share


def test_under_capacity_a_job_less_queue_shows_its_spec_deserved(tmp_path: Path) -> None:
    """capacity takes `spec.deserved` as it is (and records it for a job-less queue)."""
    bars, html, samples = _served(tmp_path, CAPACITY_CONF, [IDLE_QUEUE])
    cpu, mem = bars["idle"]["cpu"], bars["idle"]["memory"]
    assert cpu["deserved"] == "4.0" and float(mem["deserved"]) == 8 * 1024**3
    assert cpu["allocated"] == "0.0" and samples[("volcano_queue_allocated_milli_cpu", "idle")] == 0.0


def test_without_a_queue_plugin_a_queue_with_a_job_has_no_numbers(tmp_path: Path) -> None:
    """With neither proportion nor capacity nothing reports queues: a queue whose job runs is not
    drawn as empty, and no gauge says it has nothing allocated; nor is a job-less one (no plugin
    records one)."""
    bars, html, samples = _served(tmp_path, NO_QUEUE_PLUGIN_CONF, [IDLE_QUEUE, *_one_job("busy", "batch")])
    assert "no numbers" in _note_of(html, "batch") and "no numbers" in _note_of(html, "idle")
    assert not bars
    assert not any(q in ("batch", "idle") for _, q in samples)


def test_a_job_held_for_its_reservation_is_forecast_on_its_page(client: TestClient) -> None:
    """A job submitted to a reservation that is not active waits outside the scheduler: its page
    forecasts it all the same and names the reservation it waits for."""
    import json

    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "held", "namespace": NS, "annotations": {"apportion.io/reservation": "reservation_1_0009"}},
          "spec": {"queue": "dedicated", "minMember": 1}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "held-0", "namespace": NS, "annotations": {"scheduling.k8s.io/group-name": "held"}},
           "spec": {"schedulerName": "volcano", "containers": [
               {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
           "status": {"phase": "Pending"}}
    r = client.post("/api/v1/apply", params=U, content=json.dumps({"kind": "List", "apiVersion": "v1",
                                                                   "items": [pg, pod]}))
    assert r.status_code == 200, r.text
    client.app.state.service.loop.tick()  # type: ignore[attr-defined]
    r = client.get(f"/jobs/{NS}/held/forecast")
    assert r.status_code == 200 and 'id="forecast-error"' not in r.text
    held = re.search(r'id="forecast-held">([^<]*)<', r.text).group(1)  # type: ignore[union-attr]
    assert "reservation_1_0009" in held
    start = re.search(r'id="forecast-start">([^<]*)<', r.text).group(1)  # type: ignore[union-attr]
    assert start.startswith("not found") and "held out of the scheduler" in start

def test_a_waiting_job_is_forecast_on_its_page(client: TestClient) -> None:
    page = client.get(f"/jobs/{NS}/huge").text
    assert f'action="/jobs/{NS}/huge/forecast"' in page  # waiting: the form is there
    assert 'id="forecast"' not in client.get(f"/jobs/{NS}/train").text  # running: no form
    r = client.get(f"/jobs/{NS}/huge/forecast", params={"assume": "1h"})
    assert r.status_code == 200
    api = client.get(f"/api/v1/jobs/{NS}/huge/forecast", params={"assumeRuntime": "1h"}).json()
    [want] = api["jobs"]
    # 40 cores in a queue capped at 16: it never starts, and the page says so with what would fix it
    assert want["start"] is None and want["fits"], want
    start = re.search(r'id="forecast-start">([^<]*)<', r.text).group(1)  # type: ignore[union-attr]
    assert start.startswith("not found")
    fits = re.findall(r"<li>([^<]*)</li>", r.text.split('id="forecast-fits"')[1].split("</ol>")[0])
    assert fits == [_html(f["text"]) for f in want["fits"]]
    # the errors are the page's, not a stack trace: a running job, a runtime that does not parse
    r = client.get(f"/jobs/{NS}/train/forecast")
    assert r.status_code == 200 and "is not pending" in r.text and 'id="forecast-error"' in r.text
    r = client.get(f"/jobs/{NS}/huge/forecast", params={"assume": "{nope: 1}"})
    assert r.status_code == 200 and "not a distribution" in r.text and "Traceback" not in r.text
    assert client.get(f"/jobs/{NS}/nope/forecast").status_code == 404
