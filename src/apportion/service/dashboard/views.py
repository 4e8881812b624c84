"""What the queue, job and node pages show, read from the service's own state.

Every number comes from where `/api/v1`, `/ws/v1` and `/metrics` take theirs: the queue numbers from
the last session's queue report (`Service.queue_report`, as `/ws/v1/cluster/scheduler` and the
`volcano_queue_*` metrics), a job and why it waits from `/api/v1/jobs`' own reader, nodes and tasks
from the snapshot of the stored objects the session is built from. These functions run under the
service's read lock (`Service.read`), so a page never sees a change half-done.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import TYPE_CHECKING, Any

from apportion.cluster.model import ON_NODE_STATUSES
from apportion.cluster.snapshot import Snapshot
from apportion.kube.pods import GROUP_KEY
from apportion.lean_dataclass import dataclass
from apportion.resources import MEMORY, Resource, to_natural_value
from apportion.service.api_v1 import _job as api_job
from apportion.service.dashboard.units import GIB, dims_of, label, shown, unit, value
from apportion.service.idle_queues import configured_numbers, job_less, queue_plugin
from apportion.service.live import RESERVATION_KEY
from apportion.service.loop import STARTED_KEY
from apportion.web.charts import BAR_KEYS, Bar, LineChart, allocated_vs_deserved

if TYPE_CHECKING:
    from apportion.service.core import Service

#: job phases in the order the jobs page lists them: waiting first
PHASE_ORDER = {"Pending": 0, "Inqueue": 1, "Unknown": 2, "Running": 3, "Completed": 4}


def bar(queue: str, dim: str, scale: float, values: dict[str, float | None]) -> Bar:
    """One resource of one queue as the shared bars draw it (natural units in, memory shown in GiB)."""
    return Bar(queue=queue, dim=dim, label=label(dim), unit=unit(dim), scale=scale, values=values,
               divisor=GIB if dim == MEMORY else 1.0)


@dataclass
class QueueRow:
    """A queue in the tree with its numbers."""

    name: str
    parent: str
    depth: int
    state: str
    share: float | None
    bars: list[Bar]
    running: int = 0
    pending: int = 0
    reservable: bool = False
    reservation: bool = False
    #: the `<queue>-default` child that holds a plan's unreserved part
    plan_rest: bool = False
    #: whether the session's queue report has the queue
    reported: bool = True
    #: a queue the report leaves out because it had no job (with proportion or capacity running): its
    #: numbers are its configuration (`idle_queues.configured_numbers`)
    configured: bool = False
    children: list[str] = field(default_factory=list)


def _natural(r: Resource) -> dict[str, float]:
    return {n: to_natural_value(n, r.get(n)) for n in r.names()}


def _amount(rep: dict[str, Any], key: str, dim: str) -> float | None:
    """One number of the queue report: the report leaves out a zero cpu or memory, which for a
    capability means "not set" (None), and for the other numbers 0."""
    if key not in rep:
        return None
    got = (rep.get(key) or {}).get(dim)
    if got is None:
        return None if key in ("capability", "realCapability") else 0.0
    return value(got)


def job_counts(svc: Service) -> dict[str, tuple[int, int]]:
    """Running and waiting (Pending or Inqueue) jobs per queue; a job in a reservation also counts in
    the reservation's queue."""
    out: dict[str, list[int]] = {}
    for (kind, _ns, _n), pg in svc.objects.objects.items():
        if kind != "PodGroup":
            continue
        phase = (pg.get("status") or {}).get("phase", "Pending")
        queues = [str((pg.get("spec") or {}).get("queue") or "default")]
        rid = ((pg.get("metadata") or {}).get("annotations") or {}).get(RESERVATION_KEY)
        if rid:
            queues.append(str(rid))
        for q in queues:
            c = out.setdefault(q, [0, 0])
            if phase == "Running":
                c[0] += 1
            elif phase in ("Pending", "Inqueue"):
                c[1] += 1
    return {q: (c[0], c[1]) for q, c in out.items()}


def queue_rows(svc: Service) -> tuple[list[QueueRow], list[str], dict[str, float]]:
    """The queue tree in display order (depth first, children by name), the resources shown and the
    cluster's size per resource (the bars' one scale)."""
    report, cluster, apps, parents = svc.queue_report()
    specs = svc.queue_specs()
    plugin = queue_plugin(svc.loop.last_conf or svc.confs.effective(svc.objects.objects)[1])
    idle = set(job_less(specs, [q for q, n in apps.items() if n], report)) if plugin is not None else set()
    total = _natural(cluster)
    dims = [d for d in dims_of(list(total)) if total.get(d, 0) > 0]
    names = set(report) | set(parents)
    parent_of = {n: (parents.get(n) or (report.get(n) or {}).get("parent") or ("" if n == "root" else "root"))
                 for n in names}
    kids: dict[str, list[str]] = {}
    for n, p in parent_of.items():
        if n != "root":
            kids.setdefault(p if p in names else "root", []).append(n)
    counts = job_counts(svc)
    reservable = set(svc.reservations.plans)
    active = {str(r.id) for e in svc.reservations.plans.values() for r in e.plan.reservations.values()}
    rows: list[QueueRow] = []

    def visit(name: str, depth: int, seen: set[str]) -> None:
        seen.add(name)
        configured = name in idle and name not in reservable
        rep = report.get(name) or (configured_numbers(specs[name], plugin) if configured and plugin else {})
        bars = [bar(name, d, total[d], {k: _amount(rep, k, d) for k in BAR_KEYS}) for d in dims]
        share = rep.get("share")
        run, pend = counts.get(name, (0, 0))
        rows.append(QueueRow(name=name, parent=parent_of.get(name, ""), depth=depth,
                             state=str(rep.get("state", "Open")),
                             share=float(share) if isinstance(share, (int, float)) else None, bars=bars,
                             running=run, pending=pend, reservable=name in reservable,
                             reservation=name in active, plan_rest=any(name == f"{q}-default" for q in reservable),
                             reported=name in report, configured=configured,
                             children=sorted(kids.get(name, []))))
        for k in sorted(kids.get(name, [])):
            if k not in seen:
                visit(k, depth + 1, seen)

    seen: set[str] = set()
    for r in (["root"] if "root" in names else sorted(kids.get("root", [])) + sorted(kids.get("", []))):
        if r not in seen:
            visit(r, 0, seen)
    for n in sorted(names):  # a queue whose parent chain is broken still shows, at the top
        if n not in seen:
            visit(n, 0, seen)
    return rows, dims, total


def history_chart(queue: str, dim: str, t: list[float], allocated: list[float], deserved: list[float]) -> LineChart:
    """A queue's allocated against deserved over the kept samples (times in seconds since the epoch),
    drawn as the report draws its queues."""
    k = GIB if dim == MEMORY else 1.0
    return allocated_vs_deserved(
        "history-" + re.sub(r"[^A-Za-z0-9]+", "-", dim), queue, label(dim), unit(dim) or label(dim), t,
        [v / k for v in allocated], [v / k for v in deserved], time=True,
        table_caption=f"{label(dim)} of {queue}: the samples kept since the server started ({unit(dim) or label(dim)})")


_SNAPSHOTS: dict[int, tuple[int, Snapshot]] = {}


def stored_snapshot(svc: Service) -> Snapshot:
    """The model of the stored objects (pods on their nodes, their requests as the session reads
    them), built by the service's own reader and kept until the objects change."""
    gen = svc.generation()
    got = _SNAPSHOTS.get(id(svc))
    if got is None or got[0] != gen:
        got = (gen, svc.objects.snapshot())
        _SNAPSHOTS.clear()  # one service per process in practice; never keep a stopped one's
        _SNAPSHOTS[id(svc)] = got
    return got[1]


def _pods_of(svc: Service, ns: str, name: str) -> list[dict[str, Any]]:
    snap = stored_snapshot(svc)
    job = snap.jobs.get(f"{ns}/{name}")
    out = []
    pods = {(k[1], k[2]): v for k, v in svc.objects.objects.items() if k[0] == "Pod"
            and k[1] == ns and ((v.get("metadata") or {}).get("annotations") or {}).get(GROUP_KEY) == name}
    tasks = {t.name: t for t in job.tasks.values()} if job is not None else {}
    for (pns, pname), pod in sorted(pods.items()):
        t = tasks.get(pname)
        req = _natural(t.resreq) if t is not None else {}
        ann = (pod.get("metadata") or {}).get("annotations") or {}
        started = ann.get(STARTED_KEY)
        out.append({
            "name": pname, "namespace": pns,
            "phase": (pod.get("status") or {}).get("phase", "Pending"),
            "node": (pod.get("spec") or {}).get("nodeName", ""),
            "request": ", ".join(f"{label(d)} {shown(d, req[d])}{' ' + unit(d) if unit(d) else ''}"
                                 for d in dims_of(list(req)) if req.get(d)),
            "started_ms": int(started) if started and str(started).isdigit() else None,
            "duration": ann.get("apportion.io/duration", ""),
        })
    return out


def job_summary(svc: Service, ns: str, name: str) -> dict[str, Any] | None:
    """One job as `/api/v1/jobs/{ns}/{name}` answers it, with its pods' requests and nodes."""
    job = api_job(svc, ns, name)
    if job is None:
        return None
    pg = job["podgroup"]
    meta = pg.get("metadata") or {}
    spec = pg.get("spec") or {}
    pods = _pods_of(svc, ns, name)
    return {
        "namespace": ns, "name": name, "uid": f"{ns}/{name}", "phase": job["phase"],
        "queue": str(spec.get("queue") or "default"),
        "reservation": ((meta.get("annotations") or {}).get(RESERVATION_KEY) or ""),
        "min_member": spec.get("minMember", 0),
        "waiting": job.get("waiting", ""),
        "pods": pods,
        "running": sum(1 for p in pods if p["phase"] == "Running"),
        "pending": sum(1 for p in pods if p["phase"] == "Pending"),
        "done": sum(1 for p in pods if p["phase"] in ("Succeeded", "Failed")),
    }


def jobs(svc: Service, queue: str = "", namespace: str = "", state: str = "") -> tuple[list[dict[str, Any]],
                                                                                       dict[str, list[str]]]:
    """The jobs, waiting ones first, filtered; and the filter choices (queues, namespaces, states)."""
    everything = [j for (k, ns, n) in sorted(svc.objects.objects) if k == "PodGroup"
                  for j in [job_summary(svc, ns, n)] if j is not None]
    choices = {"queue": sorted({j["queue"] for j in everything} | {j["reservation"] for j in everything} - {""}),
               "namespace": sorted({j["namespace"] for j in everything}),
               "state": sorted({j["phase"] for j in everything}, key=lambda p: (PHASE_ORDER.get(p, 9), p))}
    picked = [j for j in everything
              if (not queue or queue in (j["queue"], j["reservation"]))
              and (not namespace or j["namespace"] == namespace) and (not state or j["phase"] == state)]
    picked.sort(key=lambda j: (PHASE_ORDER.get(j["phase"], 9), j["namespace"], j["name"]))
    return picked, choices


NODE_SORTS = ("name", "group", "allocatable", "allocated", "idle", "tasks")


def nodes(svc: Service, group_by: str = "", sort: str = "name", desc: bool = False) -> dict[str, Any]:
    """Every node's allocatable, allocated (tasks on it) and idle, grouped by a label and sorted."""
    snap = stored_snapshot(svc)
    label_keys = sorted({k for n in snap.nodes for k in n.labels})
    if group_by and group_by not in label_keys:
        group_by = ""
    totals = Resource()
    for n in snap.nodes:
        totals.add(n.allocatable)
    dims = dims_of([d for d, v in _natural(totals).items() if v > 0])
    # the snapshot keeps tasks on their jobs (a session fills the nodes' task maps when it opens)
    on_node: dict[str, list[Any]] = {}
    for t in [t for j in snap.jobs.values() for t in j.tasks.values()] + list(snap.orphan_tasks):
        if t.node_name and t.status in ON_NODE_STATUSES:
            on_node.setdefault(t.node_name, []).append(t)
    rows = []
    for n in snap.nodes:
        used = Resource()
        count = 0
        for t in on_node.get(n.name, []):
            used.add(t.resreq)
            count += 1
        alloc = _natural(n.allocatable)
        usedn = _natural(used)
        rows.append({
            "name": n.name, "group": n.labels.get(group_by, "(none)") if group_by else "",
            "unschedulable": n.unschedulable, "tasks": count,
            "allocatable": {d: alloc.get(d, 0.0) for d in dims},
            "allocated": {d: usedn.get(d, 0.0) for d in dims},
            "idle": {d: max(alloc.get(d, 0.0) - usedn.get(d, 0.0), 0.0) for d in dims},
        })
    main = dims[0] if dims else "cpu"
    if sort not in NODE_SORTS:
        sort = "name"

    def key(r: dict[str, Any]) -> Any:
        if sort in ("allocatable", "allocated", "idle"):
            return (r[sort].get(main, 0.0), r["name"])
        if sort == "tasks":
            return (r["tasks"], r["name"])
        if sort == "group":
            return (r["group"], r["name"])
        return r["name"]

    rows.sort(key=key, reverse=desc)
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(str(r["group"]), []).append(r)
    ordered = sorted(groups.items(), key=lambda kv: kv[0]) if group_by else list(groups.items())
    return {"groups": ordered, "dims": dims, "label_keys": label_keys, "group_by": group_by, "sort": sort,
            "desc": desc, "main": main, "count": len(rows)}
