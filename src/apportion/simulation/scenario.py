"""The scenario file: cluster, queues, scheduler configuration, workload, reservations, run settings.

Loading goes in three steps so every error names its field: the YAML is checked against
`scenario.schema.json` (shape and types), then Kubernetes objects go through the snapshot loader
(the same validation `apportion cycle` applies), then cross-references are checked (a job's queue
exists, a reservation's queue is reservable, ...). See docs/scenario.md for the format.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from apportion.cluster.snapshot import DEFAULT_QUEUE
from apportion.errors import InputError, QuantityError, shown
from apportion.framework.conf import SchedulerConf, conf_from_dict, default_conf, parse_conf
from apportion.kube import build_snapshot, load_yaml, read_documents, read_text
from apportion.resources import PODS, Resource
from apportion.simulation.scenario_schema import validate_document
from apportion.simulation.specs import (
    GeneratorSpec,
    JobSpec,
    NodeEvent,
    PlanSpec,
    ReservationSpec,
    RunSpec,
    Scenario,
    StageSpec,
    TraceSpec,
)

#: Queue annotation that makes a queue own a reservation plan.
RESERVABLE_KEY = "apportion.io/reservable"
#: PodGroup annotation that routes a job to a reservation's queue.
RESERVATION_ID_KEY = "apportion.io/reservation-id"

#: bounds on what a scenario may ask for, so its size (not a typo like `count: 3e300`) decides memory.
#: The schema holds the per-field ones (nodes per generator 100,000, jobs per generator 200,000,
#: tasks per job 100,000); a generator's drawn task counts and the whole workload are checked here.
MAX_JOB_TASKS = 100_000
MAX_WORKLOAD_TASKS = 10_000_000

# ===================================================================== loading
def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", where=str(p)) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", where=str(p)) from None
    return parse_scenario(text, source=str(p), base=p.parent)


def default_scenario_path() -> Path:
    """The built-in scenario shipped as package data."""
    from importlib import resources as ires  # (here: it costs a forecast's start more than its use)

    return Path(str(ires.files("apportion.data").joinpath("default-scenario.yaml")))


def _yaml(text: str, source: str) -> Any:
    """The scenario document, decoded within the readers' bounds (integer length, nesting depth)."""
    return load_yaml(text, source)


def parse_scenario(text: str, *, source: str = "<scenario>", base: Path | None = None) -> Scenario:
    """Parse scenario text (YAML). `base` resolves relative paths (snapshot, traces, conf file)."""
    base = base or Path(".")
    data = _yaml(text, source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"expected a mapping at the top level, got {type(data).__name__}", where=source)
    validate_document(data, source)
    return _build(data, source, base)


def _res(raw: dict[str, Any], where: str, *, pods: bool = False) -> Resource:
    try:
        r = Resource.from_resource_list(raw)
    except QuantityError as e:
        name, _, msg = e.bare.partition(": ")
        raise InputError(msg or e.bare, where=f"{where}.{name}") from None
    if pods and not r.has(PODS):
        r.set(PODS, 1.0)  # every task is one pod, as GetPodResourceRequest counts it
    return r


def _num(raw: Any) -> float:
    return float(raw)


def _build(data: dict[str, Any], source: str, base: Path) -> Scenario:
    from apportion.simulation.traces import load_trace

    warnings: list[str] = []
    cluster = data.get("cluster") or {}
    objects: list[tuple[str, Any]] = []
    for i, n in enumerate(cluster.get("nodes") or []):
        objects.append((f"{source}: cluster.nodes[{i}]", n))
    if "snapshot" in cluster:
        snap_path = (base / cluster["snapshot"]).as_posix()
        for where, obj in read_documents([snap_path]):
            if isinstance(obj, dict) and obj.get("kind") in ("Node", "Queue", "PriorityClass"):
                objects.append((where, obj))
    for gi, g in enumerate(cluster.get("generate") or []):
        objects.extend(_generated_nodes(g, f"{source}: cluster.generate[{gi}]", start=0))
    for i, q in enumerate(data.get("queues") or []):
        objects.append((f"{source}: queues[{i}]", q))

    # traces may add queues (and a cluster) of their own; they are loaded before the objects are built
    traces: list[TraceSpec] = []
    trace_jobs: list[JobSpec] = []
    trace_pcs: dict[str, int] = {}
    for ti, t in enumerate((data.get("workload") or {}).get("traces") or []):
        where = f"{source}: workload.traces[{ti}]"
        tspec = TraceSpec(type=t["type"], path=(base / t["path"]), options={k: v for k, v in t.items()
                                                                           if k not in ("type", "path")},
                         where=where)
        loaded = load_trace(tspec)
        traces.append(tspec)
        trace_jobs.extend(loaded.jobs)
        have = {o.get("metadata", {}).get("name") for _, o in objects if o.get("kind") == "Queue"}
        if tspec.options.get("queues", True):
            for q in loaded.queues:
                if q["metadata"]["name"] not in have:
                    objects.append((f"{where} (queue {q['metadata']['name']})", q))
        for n in loaded.nodes:
            objects.append((f"{where} (node {n['metadata']['name']})", n))
        warnings.extend(loaded.warnings)
        trace_pcs.update(loaded.priority_classes)

    for where, obj in objects:
        if obj.get("kind") not in ("Node", "Queue", "PriorityClass"):
            raise InputError(f"expected a Node or Queue object, got kind {shown(obj.get('kind'))}", where=f"{where}: kind")
    snap = build_snapshot(objects)
    warnings.extend(snap.warnings)
    if not snap.nodes:
        raise InputError("the cluster has no nodes (give cluster.nodes, cluster.snapshot or cluster.generate)",
                         where=f"{source}: cluster")
    priority_classes = dict(trace_pcs)
    priority_classes.update(snap.priority_classes)
    for name, value in (data.get("priorityClasses") or {}).items():
        priority_classes[str(name)] = int(value)
    queues = snap.queues
    for q in queues.values():
        if q.parent and q.parent not in queues and q.parent != "root":
            raise InputError(f"queue {q.name} names parent {q.parent!r}, which does not exist",
                             where=f"{source}: queues ({q.name}).spec.parent")

    conf, conf_text = _scheduler(data.get("scheduler"), source, base)

    # plans: every reservable queue has one (defaults when `plans` does not mention it)
    plans: dict[str, PlanSpec] = {}
    for q in queues.values():
        if q.annotations.get(RESERVABLE_KEY, "").lower() == "true":
            plans[q.name] = PlanSpec()
    for qname, raw in (data.get("plans") or {}).items():
        where = f"{source}: plans.{qname}"
        if qname not in plans:
            raise InputError(f"queue {qname!r} is not reservable (annotate it {RESERVABLE_KEY}: \"true\")",
                             where=where)
        plans[qname] = _plan(raw)
    for qname in plans:
        if any(q.parent == qname for q in queues.values()):
            raise InputError("a reservable queue must be a leaf: the plan follower creates its children",
                             where=f"{source}: queues ({qname})")

    run_raw = data.get("run") or {}
    run = RunSpec(
        horizon=_num(run_raw["horizon"]) if "horizon" in run_raw else None,
        period=_num(run_raw.get("period", 1.0)),
        seed=int(run_raw.get("seed", 0)),
        eviction_grace=_num(run_raw.get("evictionGracePeriod", 0.0)),
        sample_every=_num(run_raw["sampleEvery"]) if "sampleEvery" in run_raw else None,
        drain=bool(run_raw.get("drain", "horizon" not in run_raw)),
    )

    workload = data.get("workload") or {}
    jobs: list[JobSpec] = []
    names: set[str] = set()
    for i, j in enumerate(workload.get("jobs") or []):
        where = f"{source}: workload.jobs[{i}]"
        tasks = int(j.get("tasks", 1))
        spec: JobSpec = JobSpec(
            name=j["name"], queue=j["queue"], arrival=_num(j["arrival"]), duration=_num(j["duration"]),
            tasks=tasks, min_member=int(j.get("minMember", tasks)),
            resources=_res(j["resources"], f"{where}.resources", pods=True),
            priority_class=j.get("priorityClass", ""), preemptable=bool(j.get("preemptable", True)),
            reservation=j.get("reservation", ""), user=j.get("user", ""), source=where,
        )
        if spec.min_member > spec.tasks:
            raise InputError(f"minMember {spec.min_member} exceeds tasks {spec.tasks}", where=f"{where}.minMember")
        if spec.name in names:
            raise InputError(f"duplicate job name {spec.name!r}", where=f"{where}.name")
        names.add(spec.name)
        jobs.append(spec)
    jobs.extend(trace_jobs)

    generators: list[GeneratorSpec] = []
    for i, g in enumerate(workload.get("generators") or []):
        where = f"{source}: workload.generators[{i}]"
        qs = g["queues"]
        qmap = {qs: 1.0} if isinstance(qs, str) else {str(k): float(v) for k, v in qs.items()}
        generators.append(GeneratorSpec(
            name=g["name"], queues=qmap, count=int(g["count"]), start=_num(g.get("start", 0)),
            interarrival=g["interarrival"], duration=g["duration"], tasks=g.get("tasks", 1),
            gang=bool(g.get("gang", True)), resources=_res(g["resources"], f"{where}.resources", pods=True),
            priority_class=g.get("priorityClass", ""), preemptable=bool(g.get("preemptable", True)),
            where=where,
        ))
        if g["name"] in {x.name for x in generators[:-1]}:
            raise InputError(f"duplicate generator name {g['name']!r}", where=f"{where}.name")

    reservations: list[ReservationSpec] = []
    for i, r in enumerate(data.get("reservations") or []):
        where = f"{source}: reservations[{i}]"
        stages = [StageSpec(_res(s["resources"], f"{where}.requests[{si}].resources"), int(s["numContainers"]),
                            _num(s["duration"]), _concurrency(s, f"{where}.requests[{si}]"))
                  for si, s in enumerate(r["requests"])]
        spec_r = ReservationSpec(
            name=r["name"], queue=r["queue"], user=r.get("user", "user"), submit_at=_num(r["submitAt"]),
            arrival=_num(r["arrival"]), deadline=_num(r["deadline"]), interpreter=r.get("interpreter", "R_ALL"),
            gang=bool(r.get("gang", False)), stages=stages,
        )
        if spec_r.queue not in plans:
            raise InputError(f"queue {spec_r.queue!r} is not reservable (annotate it {RESERVABLE_KEY}: \"true\")",
                             where=f"{where}.queue")
        if spec_r.deadline <= spec_r.arrival:
            raise InputError("deadline must be after arrival", where=f"{where}.deadline")
        if spec_r.name in {x.name for x in reservations}:
            raise InputError(f"duplicate reservation name {spec_r.name!r}", where=f"{where}.name")
        reservations.append(spec_r)

    # cross references
    res_names = {r.name for r in reservations}
    for j in jobs:
        where = j.source or source
        if j.queue not in queues:
            raise InputError(f"queue {j.queue!r} does not exist", where=f"{where}.queue")
        if any(q.parent == j.queue for q in queues.values()):
            raise InputError(f"queue {j.queue!r} is not a leaf queue", where=f"{where}.queue")
        if j.reservation and j.reservation not in res_names:
            raise InputError(f"reservation {j.reservation!r} is not defined in reservations", where=f"{where}.reservation")
        if j.reservation and j.queue not in plans:
            raise InputError(f"a job naming a reservation must be submitted to its reservable queue, not {j.queue!r}",
                             where=f"{where}.queue")
        if j.priority_class and j.priority_class not in priority_classes:
            raise InputError(f"priority class {j.priority_class!r} is not defined", where=f"{where}.priorityClass")
    for g in generators:
        for qn in g.queues:
            if qn not in queues:
                raise InputError(f"queue {qn!r} does not exist", where=f"{g.where}.queues")
        if g.priority_class and g.priority_class not in priority_classes:
            raise InputError(f"priority class {g.priority_class!r} is not defined", where=f"{g.where}.priorityClass")

    node_events: list[NodeEvent] = []
    names_now = {n.name for n in snap.nodes}
    for i, ev in enumerate(cluster.get("events") or []):
        where = f"{source}: cluster.events[{i}]"
        ne = NodeEvent(at=_num(ev["at"]), type=ev["type"])
        if ev["type"] in ("fail", "recover"):
            if "nodes" not in ev:
                raise InputError(f"a {ev['type']} event names its nodes", where=f"{where}.nodes")
            for n in ev["nodes"]:
                if n not in names_now:
                    raise InputError(f"node {n!r} does not exist", where=f"{where}.nodes")
            ne.nodes = list(ev["nodes"])
        else:
            if "allocatable" not in ev:
                raise InputError("an add event gives allocatable", where=f"{where}.allocatable")
            gen = {"count": ev.get("count", 1), "namePrefix": ev.get("namePrefix", f"added{i}"),
                   "allocatable": ev["allocatable"]}
            ne.new_node_objects = _generated_nodes(gen, where, start=0)
            added = build_snapshot(ne.new_node_objects).nodes
            for n in added:
                if n.name in names_now:
                    raise InputError(f"node {n.name!r} already exists", where=f"{where}.namePrefix")
                names_now.add(n.name)
            ne.new_nodes = added
            ne.nodes = [n.name for n in added]
        node_events.append(ne)
    node_events.sort(key=lambda e: e.at)

    return Scenario(
        name=str(data.get("name", Path(source).stem)), source=source, base=base, nodes=snap.nodes, queues=queues,
        priority_classes=priority_classes, conf=conf, conf_text=conf_text, jobs=jobs, generators=generators,
        traces=traces, plans=plans, reservations=reservations, node_events=node_events, run=run,
        warnings=warnings, objects=objects,
    )


def _generated_nodes(g: dict[str, Any], where: str, *, start: int) -> list[tuple[str, Any]]:
    count = int(g["count"])
    prefix = g.get("namePrefix", "node")
    width = max(2, len(str(count - 1 + start)))
    alloc = {str(k): (str(v) if not isinstance(v, str) else v) for k, v in g["allocatable"].items()}
    alloc.setdefault("pods", "110")
    out = []
    for i in range(count):
        name = f"{prefix}-{i + start:0{width}d}"
        out.append((f"{where} ({name})", {"kind": "Node", "metadata": {"name": name, "labels": dict(g.get("labels") or {})},
                                          "status": {"allocatable": alloc}}))
    return out


def _scheduler(raw: Any, source: str, base: Path) -> tuple[SchedulerConf, str]:
    where = f"{source}: scheduler"
    if raw is None:
        conf = default_conf()
        from apportion.framework.conf import DEFAULT_CONF_YAML

        return conf, DEFAULT_CONF_YAML
    if isinstance(raw, str):
        return parse_conf(raw, source=where), raw
    if "file" in raw:
        from apportion.engine import load_conf_file

        path = (base / raw["file"]).as_posix()
        return load_conf_file(path), Path(path).read_text(encoding="utf-8")
    import yaml  # (here: the forecast, which builds a scenario in code, starts without PyYAML)

    return conf_from_dict(raw, source=where), yaml.safe_dump(raw, sort_keys=False)


def _plan(raw: dict[str, Any]) -> PlanSpec:
    p = PlanSpec()
    pol = raw.get("policy")
    if pol:
        p.policy = pol["type"]
        p.instantaneous = float(pol.get("instantaneousMaxCapacity", 1.0))
        p.average = float(pol.get("averageCapacity", 1.0))
        p.window = float(pol.get("window", 86400.0))
    if "step" in raw:
        p.step = float(raw["step"])
    p.move_on_expiry = bool(raw.get("moveOnExpiry", True))
    p.overuse = bool(raw.get("overuse", True))
    rp = raw.get("replanner", True)
    if isinstance(rp, dict):
        p.replanner = True
        p.enforcement_window = float(rp.get("enforcementWindow", 3600.0))
    else:
        p.replanner = bool(rp)
    p.agent = str(raw.get("agent", p.agent))
    p.calculator = str(raw.get("resourceCalculator", p.calculator))
    return p


def _concurrency(raw: dict[str, Any], where: str) -> int | None:
    """A request's `minConcurrency` (YARN's gang size); it must divide `numContainers`."""
    if "minConcurrency" not in raw:
        return None
    k = int(raw["minConcurrency"])
    if int(raw["numContainers"]) % k != 0:
        raise InputError(f"minConcurrency {k} does not divide numContainers {raw['numContainers']}",
                         where=f"{where}.minConcurrency")
    return k


def load_any_conf_or_scenario(path: str) -> tuple[str, Scenario | SchedulerConf]:
    """For --compare: a scenario file (has `cluster`) or a scheduler configuration (or its ConfigMap)."""
    p = Path(path)
    text = read_text(path)
    data = _yaml(text, path)
    if isinstance(data, dict) and "cluster" in data:
        return "scenario", parse_scenario(text, source=path, base=p.parent)
    from apportion.engine import load_conf_file

    return "conf", load_conf_file(path)


def finite_or_none(x: float | None) -> float | None:
    return None if x is None or math.isinf(x) else x


__all__ = [
    "DEFAULT_QUEUE",
    "RESERVABLE_KEY",
    "RESERVATION_ID_KEY",
    "GeneratorSpec",
    "JobSpec",
    "NodeEvent",
    "PlanSpec",
    "ReservationSpec",
    "RunSpec",
    "Scenario",
    "StageSpec",
    "TraceSpec",
    "default_scenario_path",
    "load_any_conf_or_scenario",
    "load_scenario",
    "parse_scenario",
]
