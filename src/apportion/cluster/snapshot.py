"""Snapshot loading: kubectl YAML (Nodes, Queues, PodGroups, Pods, PriorityClasses, the scheduler
ConfigMap) into session objects, per `shared/spec/snapshot-format.md`.

Every malformed object is reported with the file, the document index (and `items[i]` for a List) and the
field path; nothing here raises anything but InputError for bad input.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass, field, replace
from typing import Any

import orjson
import yaml

from apportion.cluster.model import (
    JobInfo,
    NodeInfo,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PodGroupPhase,
    PreferredTerm,
    QueueInfo,
    Taint,
    TaskInfo,
    TaskStatus,
    Toleration,
)
from apportion.errors import ConfError, InputError, QuantityError
from apportion.framework.conf import SchedulerConf, parse_conf
from apportion.resources import CPU, MEMORY, PODS, Resource

try:  # the C loader is ~8x faster on large kubectl dumps
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

log = logging.getLogger(__name__)

GROUP_KEY = "scheduling.k8s.io/group-name"
PREEMPTABLE_KEY = "volcano.sh/preemptable"
TASK_PRIORITY_KEY = "volcano.sh/task-priority"
TASK_SPEC_KEY = "volcano.sh/task-spec"
CONF_KEY = "volcano-scheduler.conf"
DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"
SCHEDULER_NAMES = ("volcano",)
KNOWN_KINDS = ("Node", "Queue", "PodGroup", "Pod", "PriorityClass", "ConfigMap")
_PHASES = {p.value: p for p in PodGroupPhase}
#: kube-scheduler's defaults for containers without requests (scoring only).
DEFAULT_NONZERO_CPU = 100.0
DEFAULT_NONZERO_MEMORY = 200.0 * 1024 * 1024


@dataclass
class Snapshot:
    """Everything one session needs, built from Kubernetes objects."""

    nodes: list[NodeInfo] = field(default_factory=list)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    #: tasks that hold node capacity but belong to no session job (other schedulers, dropped jobs).
    orphan_tasks: list[TaskInfo] = field(default_factory=list)
    conf: SchedulerConf | None = None
    warnings: list[str] = field(default_factory=list)
    priority_classes: dict[str, int] = field(default_factory=dict)
    #: values derived from the snapshot that a caller carries from one snapshot to the next (the
    #: simulator does); each user keys its entry by the inputs it was computed from, so none goes stale.
    #: A caller that passes a memo replaces a QueueInfo that changes and never edits one in place:
    #: entries may be keyed by the object itself.
    memo: dict[str, Any] | None = None

    def ensure_queue(self, name: str) -> None:
        if name not in self.queues:
            self.queues[name] = QueueInfo(name=name, reclaimable=name != ROOT_QUEUE)


# ===================================================================== typed field access
class _Obj:
    """A mapping with its location, for field access that names the field on error."""

    def __init__(self, data: Any, where: str) -> None:
        self.data = data
        self.where = where

    def fail(self, path: str, msg: str) -> InputError:
        return InputError(msg, where=f"{self.where}: {path}" if path else self.where)

    def get(self, path: str, default: Any = None) -> Any:
        cur = self.data
        for part in path.split("."):
            if cur is None:
                return default
            if not isinstance(cur, dict):
                raise self.fail(path, f"expected a mapping at {part!r}, got {type(cur).__name__}")
            cur = cur.get(part)
        return default if cur is None else cur

    def str_(self, path: str, default: str | None = None, *, required: bool = False) -> str:
        v = self.get(path)
        if v is None:
            if required:
                raise self.fail(path, "required field is missing")
            return default or ""
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise self.fail(path, f"expected a string, got {type(v).__name__}")
        return str(v)

    def int_(self, path: str, default: int) -> int:
        v = self.get(path)
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, str) and v.strip().lstrip("-").isdigit():
                return int(v)
            raise self.fail(path, f"expected an integer, got {v!r}")
        return v

    def bool_(self, path: str, default: bool) -> bool:
        v = self.get(path)
        if v is None:
            return default
        if isinstance(v, bool):
            return v
        if isinstance(v, str) and v.lower() in ("true", "false"):
            return v.lower() == "true"
        raise self.fail(path, f"expected a boolean, got {v!r}")

    def map_(self, path: str) -> dict[str, Any]:
        v = self.get(path)
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise self.fail(path, f"expected a mapping, got {type(v).__name__}")
        return v

    def str_map(self, path: str) -> dict[str, str]:
        m = self.map_(path)
        out = {}
        for k, v in m.items():
            if isinstance(v, (dict, list)):
                raise self.fail(f"{path}.{k}", f"expected a string, got {type(v).__name__}")
            out[str(k)] = "" if v is None else (str(v).lower() if isinstance(v, bool) else str(v))
        return out

    def list_(self, path: str) -> list[Any]:
        v = self.get(path)
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(path, f"expected a list, got {type(v).__name__}")
        return v

    def resource(self, path: str) -> Resource | None:
        v = self.get(path)
        if v is None:
            return None
        if not isinstance(v, dict):
            raise self.fail(path, f"expected a resource list mapping, got {type(v).__name__}")
        try:
            return Resource.from_resource_list(v)
        except QuantityError as e:
            raise self.fail(f"{path}.{e.bare.split(':', 1)[0]}", e.bare.split(": ", 1)[-1]) from None


def _parse_bool_loose(v: str) -> bool | None:
    if v in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if v in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None


# ===================================================================== reading files
def read_documents(paths: list[str]) -> list[tuple[str, Any]]:
    """(location, object) for every object in the files; `-` reads stdin. Lists are flattened."""
    out: list[tuple[str, Any]] = []
    for path in paths:
        try:
            if path == "-":
                text = sys.stdin.read()
            else:
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", where=path) from None
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", where=path) from None
        name = "<stdin>" if path == "-" else path
        out.extend(parse_documents(text, name))
    return out


def parse_documents(text: str, name: str) -> list[tuple[str, Any]]:
    """(location, object) for every object in a kubectl dump: YAML documents, or JSON (`kubectl get -o
    json`: one object or List, or several objects one after another)."""
    out: list[tuple[str, Any]] = []
    if text.lstrip()[:1] in ("{", "["):
        docs = json_documents(text, name)
    else:
        try:
            docs = list(yaml.load_all(text, Loader=_Loader))
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            loc = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise InputError(f"malformed YAML{loc}: {problem}", where=name) from None
    for di, doc in enumerate(docs):
        where = f"{name}: document {di}"
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError(f"expected a Kubernetes object (a mapping), got {type(doc).__name__}", where=where)
        if doc.get("kind") == "List":
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise InputError("items: expected a list", where=where)
            for ii, item in enumerate(items):
                if not isinstance(item, dict):
                    raise InputError(f"items[{ii}]: expected a Kubernetes object, got {type(item).__name__}", where=where)
                out.append((f"{where} items[{ii}]", item))
        else:
            out.append((where, doc))
    return out


def json_documents(text: str, name: str) -> list[Any]:
    """The JSON values in text: one (orjson, the fast path) or several one after another."""
    try:
        return [orjson.loads(text)]
    except orjson.JSONDecodeError:
        pass
    docs: list[Any] = []
    dec = json.JSONDecoder()
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos].isspace():
            pos += 1
        if pos >= end:
            return docs
        try:
            doc, pos = dec.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise InputError(f"malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}", where=name) from None
        docs.append(doc)


# ===================================================================== per-object records
# Each Kubernetes object is parsed on its own into a record; a Snapshot is assembled from the records.
# The cache (apportion.state) keeps records between sessions and re-parses only the objects an event
# changes; `build_snapshot` parses a whole dump and assembles it once.


@dataclass(slots=True)
class PriorityClassSpec:
    """A PriorityClass: its value and whether it is the cluster's global default."""

    name: str
    value: int
    global_default: bool


@dataclass(slots=True)
class ConfMapSpec:
    """A ConfigMap: the scheduler conf text it carries (None when it carries none)."""

    text: str | None


@dataclass(slots=True)
class NodeSpec:
    """A Node as read; NodeInfo objects (with their per-session task maps) are made from it."""

    name: str
    allocatable: Resource
    labels: dict[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool


@dataclass(slots=True)
class PodGroupSpec:
    """A PodGroup as read; the priority is resolved against the PriorityClasses at assembly."""

    uid: str
    name: str
    namespace: str
    queue: str
    min_available: int
    min_task_member: dict[str, int]
    min_resources: Resource | None
    priority_class_name: str
    phase: PodGroupPhase
    creation: str
    annotations: dict[str, str]


@dataclass(slots=True)
class PodSpec:
    """A Pod as read: the task (a template, copied into each snapshot) and how it joins a job."""

    key: str
    task: TaskInfo
    scheduler: str
    #: the scheduling.k8s.io/group-name annotation ("" when the pod names no PodGroup)
    group: str


#: kind -> whether its objects are namespaced (keyed namespace/name) or cluster-scoped (keyed name)
NAMESPACED = {"Node": False, "Queue": False, "PriorityClass": False, "PodGroup": True, "Pod": True,
              "ConfigMap": True}


@dataclass
class Records:
    """Parsed objects by kind, each keyed as Kubernetes keys it, as (location, record), in arrival order."""

    priority_classes: dict[str, tuple[str, PriorityClassSpec]] = field(default_factory=dict)
    configmaps: dict[str, tuple[str, ConfMapSpec]] = field(default_factory=dict)
    nodes: dict[str, tuple[str, NodeSpec]] = field(default_factory=dict)
    queues: dict[str, tuple[str, QueueInfo]] = field(default_factory=dict)
    podgroups: dict[str, tuple[str, PodGroupSpec]] = field(default_factory=dict)
    pods: dict[str, tuple[str, PodSpec]] = field(default_factory=dict)
    #: warnings about the objects read (kinds apportion does not read)
    warnings: list[str] = field(default_factory=list)

    def table(self, kind: str) -> dict[str, tuple[str, Any]]:
        """The records of one kind."""
        return {
            "PriorityClass": self.priority_classes, "ConfigMap": self.configmaps, "Node": self.nodes,
            "Queue": self.queues, "PodGroup": self.podgroups, "Pod": self.pods,
        }[kind]  # type: ignore[return-value]


def object_key(kind: str, o: _Obj) -> str:
    """The object's Kubernetes key: `name` for cluster-scoped kinds, `namespace/name` for the others."""
    name = _check_name(o)
    if NAMESPACED[kind]:
        return f"{o.str_('metadata.namespace', 'default') or 'default'}/{name}"
    return name


def parse_object(kind: str, o: _Obj, node_names: set[str] | None = None) -> Any:
    """The record of one object of a kind apportion reads (KNOWN_KINDS)."""
    if kind == "Pod":
        return parse_pod(o, node_names)
    return _PARSERS[kind](o)


# ===================================================================== building the snapshot
def load_snapshot(paths: list[str], *, scheduler_names: tuple[str, ...] = SCHEDULER_NAMES) -> Snapshot:
    """Load one or more kubectl YAML files (or `-`) into a Snapshot."""
    return build_snapshot(read_documents(paths), scheduler_names=scheduler_names)


def build_snapshot(objects: list[tuple[str, Any]], *, scheduler_names: tuple[str, ...] = SCHEDULER_NAMES) -> Snapshot:
    """A Snapshot of a whole dump: every object parsed (errors in kind order), then assembled."""
    return assemble(parse_objects(objects), scheduler_names=scheduler_names, copy=False)


def parse_objects(objects: list[tuple[str, Any]]) -> Records:
    """Parse a dump strictly: duplicates, several global defaults, conflicting confs and pods on
    nodes the dump does not contain are errors. Kinds are parsed in dependency order, so the first
    error reported does not depend on the order of the documents."""
    rec = Records()
    by_kind: dict[str, list[_Obj]] = {k: [] for k in KNOWN_KINDS}
    for where, data in objects:
        kind = data.get("kind")
        if not isinstance(kind, str):
            raise InputError("kind: required field is missing or not a string", where=where)
        if kind not in by_kind:
            rec.warnings.append(f"{where}: kind {kind} is not read by apportion; skipped")
            continue
        by_kind[kind].append(_Obj(data, where))

    defaults: list[str] = []
    for o in by_kind["PriorityClass"]:
        name = _check_name(o)
        if name in rec.priority_classes:
            raise o.fail("metadata.name", f"duplicate PriorityClass {name!r}")
        pc = parse_priority_class(o)
        rec.priority_classes[name] = (o.where, pc)
        if pc.global_default:
            defaults.append(name)
    if len(defaults) > 1:
        raise InputError(
            f"several PriorityClasses are globalDefault ({', '.join(defaults)}); Kubernetes allows one",
            where=by_kind["PriorityClass"][0].where,
        )
    texts: list[tuple[str, str]] = []
    for o in by_kind["ConfigMap"]:
        # ConfigMaps are not checked for duplicates: only the conf text matters, and it must agree
        key, cm = object_key("ConfigMap", o), parse_conf_map(o)
        if cm.text is not None:
            texts.append((o.where, cm.text))
        if key not in rec.configmaps or cm.text is not None:
            rec.configmaps[key] = (o.where, cm)
    if len({t for _, t in texts}) > 1:
        raise InputError("several ConfigMaps carry different volcano-scheduler.conf; keep one", where=texts[-1][0])
    if texts:
        conf_of(*texts[0])
    for o in by_kind["Node"]:
        name = _check_name(o)
        if name in rec.nodes:
            raise o.fail("metadata.name", f"duplicate Node {name!r}")
        rec.nodes[name] = (o.where, parse_node(o))
    for o in by_kind["Queue"]:
        name = _check_name(o)
        if name in rec.queues:
            raise o.fail("metadata.name", f"duplicate Queue {name!r}")
        rec.queues[name] = (o.where, parse_queue(o))
    for o in by_kind["PodGroup"]:
        uid = object_key("PodGroup", o)
        if uid in rec.podgroups:
            raise o.fail("metadata.name", f"duplicate PodGroup {uid!r}")
        rec.podgroups[uid] = (o.where, parse_podgroup(o))
    uids: set[str] = set()
    node_names = set(rec.nodes)
    for o in by_kind["Pod"]:
        key = object_key("Pod", o)
        if key in rec.pods:
            raise o.fail("metadata.name", f"duplicate Pod {key!r}")
        uid = o.str_("metadata.uid", "") or key
        if uid in uids:
            raise o.fail("metadata.uid", f"duplicate pod uid {uid!r}")
        uids.add(uid)
        rec.pods[key] = (o.where, parse_pod(o, node_names))
    return rec


def _check_name(o: _Obj, path: str = "metadata.name") -> str:
    name = o.str_(path, required=True)
    if not name:
        raise o.fail(path, "must not be empty")
    return name


def parse_priority_class(o: _Obj) -> PriorityClassSpec:
    """A PriorityClass object."""
    return PriorityClassSpec(name=_check_name(o), value=o.int_("value", 0),
                             global_default=o.bool_("globalDefault", False))


def parse_conf_map(o: _Obj) -> ConfMapSpec:
    """A ConfigMap: only its volcano-scheduler.conf is read."""
    data = o.map_("data")
    if CONF_KEY not in data:
        return ConfMapSpec(None)
    text = data[CONF_KEY]
    if not isinstance(text, str):
        raise o.fail(f"data.{CONF_KEY}", "expected a string")
    return ConfMapSpec(text)


_CONF_CACHE: dict[tuple[str, str], SchedulerConf] = {}


def conf_of(where: str, text: str) -> SchedulerConf:
    """The parsed conf of a ConfigMap's text (kept by text: a stream repeats the same ConfigMap). The
    result is shared: callers copy it before changing it."""
    hit = _CONF_CACHE.get((where, text))
    if hit is None:
        try:
            hit = parse_conf(text, source=f"{where}: data.{CONF_KEY}")
        except ConfError:
            raise
        if len(_CONF_CACHE) > 64:
            _CONF_CACHE.clear()
        _CONF_CACHE[(where, text)] = hit
    return hit


def _taints(o: _Obj) -> tuple[Taint, ...]:
    out = []
    for i, t in enumerate(o.list_("spec.taints")):
        to = _Obj(t, o.where)
        if not isinstance(t, dict):
            raise o.fail(f"spec.taints[{i}]", "expected a mapping")
        effect = to.str_("effect", "NoSchedule")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise o.fail(f"spec.taints[{i}].effect", f"unknown taint effect {effect!r}")
        out.append(Taint(key=to.str_("key", required=True), value=to.str_("value", ""), effect=effect))
    return tuple(out)


def parse_node(o: _Obj) -> NodeSpec:
    """A Node object."""
    name = _check_name(o)
    alloc = o.resource("status.allocatable") or Resource()
    labels = o.str_map("metadata.labels")
    taints = _taints(o)
    unsched = o.bool_("spec.unschedulable", False)
    labels.setdefault("kubernetes.io/hostname", name)
    return NodeSpec(name=name, allocatable=alloc, labels=labels, taints=taints, unschedulable=unsched)


def parse_queue(o: _Obj) -> QueueInfo:
    """A Queue object. The QueueInfo is shared by every snapshot made from it: sessions only read it."""
    name = _check_name(o)
    weight = o.int_("spec.weight", 1)
    if weight < 0:
        raise o.fail("spec.weight", f"must not be negative, got {weight}")
    cap_raw = o.map_("spec.capability")
    return QueueInfo(
        name=name,
        weight=weight,
        capability=o.resource("spec.capability") or Resource(),
        deserved=o.resource("spec.deserved") or Resource(),
        guarantee=o.resource("spec.guarantee.resource") or Resource(),
        capability_set=bool(cap_raw),
        deserved_set=bool(o.map_("spec.deserved")),
        parent=o.str_("spec.parent", ""),
        reclaimable=o.bool_("spec.reclaimable", True),
        priority=o.int_("spec.priority", 0),
        state=o.str_("status.state", "Open") or "Open",
        creation=o.str_("metadata.creationTimestamp", ""),
        annotations=o.str_map("metadata.annotations"),
        capability_names=frozenset(k for k in cap_raw if k in (CPU, MEMORY)),
    )


def parse_podgroup(o: _Obj) -> PodGroupSpec:
    """A PodGroup object."""
    name = _check_name(o)
    ns = o.str_("metadata.namespace", "default") or "default"
    min_member = o.int_("spec.minMember", 1)
    if min_member < 0:
        raise o.fail("spec.minMember", f"must not be negative, got {min_member}")
    mtm: dict[str, int] = {}
    for role, v in o.map_("spec.minTaskMember").items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise o.fail(f"spec.minTaskMember.{role}", f"expected a non-negative integer, got {v!r}")
        mtm[str(role)] = v
    phase_s = o.str_("status.phase", "Pending") or "Pending"
    if phase_s not in _PHASES:
        raise o.fail("status.phase", f"unknown PodGroup phase {phase_s!r} (one of {', '.join(_PHASES)})")
    return PodGroupSpec(
        uid=f"{ns}/{name}",
        name=name,
        namespace=ns,
        queue=o.str_("spec.queue", DEFAULT_QUEUE) or DEFAULT_QUEUE,
        min_available=min_member,
        min_task_member=mtm,
        min_resources=o.resource("spec.minResources"),
        priority_class_name=o.str_("spec.priorityClassName", ""),
        phase=_PHASES[phase_s],
        creation=o.str_("metadata.creationTimestamp", ""),
        annotations=o.str_map("metadata.annotations"),
    )


def _requirements(o: _Obj, path: str, items: Any) -> tuple[NodeSelectorRequirement, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise o.fail(path, "expected a list")
    out = []
    for i, r in enumerate(items):
        if not isinstance(r, dict):
            raise o.fail(f"{path}[{i}]", "expected a mapping")
        op = r.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            raise o.fail(f"{path}[{i}].operator", f"unknown operator {op!r}")
        vals = r.get("values") or []
        if not isinstance(vals, list):
            raise o.fail(f"{path}[{i}].values", "expected a list")
        key = r.get("key")
        if not isinstance(key, str):
            raise o.fail(f"{path}[{i}].key", "required string is missing")
        out.append(NodeSelectorRequirement(key=key, operator=op, values=tuple(str(v) for v in vals)))
    return tuple(out)


def _term(o: _Obj, path: str, t: Any) -> NodeSelectorTerm:
    if not isinstance(t, dict):
        raise o.fail(path, "expected a node selector term mapping")
    return NodeSelectorTerm(
        match_expressions=_requirements(o, f"{path}.matchExpressions", t.get("matchExpressions")),
        match_fields=_requirements(o, f"{path}.matchFields", t.get("matchFields")),
    )


def _affinity(o: _Obj) -> tuple[tuple[NodeSelectorTerm, ...] | None, tuple[PreferredTerm, ...]]:
    base = "spec.affinity.nodeAffinity"
    na = o.map_(base)
    required = None
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if req is not None:
        if not isinstance(req, dict):
            raise o.fail(f"{base}.requiredDuringSchedulingIgnoredDuringExecution", "expected a mapping")
        terms = req.get("nodeSelectorTerms") or []
        if not isinstance(terms, list):
            raise o.fail(f"{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", "expected a list")
        required = tuple(
            _term(o, f"{base}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]", t)
            for i, t in enumerate(terms)
        )
    preferred = []
    pref = na.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    if not isinstance(pref, list):
        raise o.fail(f"{base}.preferredDuringSchedulingIgnoredDuringExecution", "expected a list")
    for i, p in enumerate(pref):
        path = f"{base}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        if not isinstance(p, dict):
            raise o.fail(path, "expected a mapping")
        w = p.get("weight", 0)
        if isinstance(w, bool) or not isinstance(w, int):
            raise o.fail(f"{path}.weight", f"expected an integer, got {w!r}")
        preferred.append(PreferredTerm(weight=w, term=_term(o, f"{path}.preference", p.get("preference") or {})))
    return required, tuple(preferred)


def _tolerations(o: _Obj) -> tuple[Toleration, ...]:
    out = []
    for i, t in enumerate(o.list_("spec.tolerations")):
        if not isinstance(t, dict):
            raise o.fail(f"spec.tolerations[{i}]", "expected a mapping")
        to = _Obj(t, o.where)
        op = to.str_("operator", "Equal") or "Equal"
        if op not in ("Equal", "Exists"):
            raise o.fail(f"spec.tolerations[{i}].operator", f"unknown operator {op!r}")
        out.append(Toleration(key=to.str_("key", ""), operator=op, value=to.str_("value", ""),
                              effect=to.str_("effect", "")))
    return tuple(out)


def _container_requests(o: _Obj, path: str) -> list[tuple[Resource, dict[str, Any], bool]]:
    out = []
    for i, c in enumerate(o.list_(path)):
        if not isinstance(c, dict):
            raise o.fail(f"{path}[{i}]", "expected a container mapping")
        co = _Obj(c, o.where)
        try:
            raw = co.map_("resources.requests")
        except InputError:
            raise o.fail(f"{path}[{i}].resources.requests", "expected a mapping") from None
        try:
            r = Resource.from_resource_list(raw)
        except QuantityError as e:
            raise o.fail(f"{path}[{i}].resources.requests.{e.bare.split(':', 1)[0]}", e.bare.split(': ', 1)[-1]) from None
        sidecar = c.get("restartPolicy") == "Always"
        out.append((r, raw, sidecar))
    return out


def pod_request(o: _Obj) -> tuple[Resource, float, float]:
    """GetPodResourceRequest (§2.2), plus kube-scheduler's non-zero cpu/memory for scoring."""
    containers = _container_requests(o, "spec.containers")
    inits = _container_requests(o, "spec.initContainers")
    req = Resource()
    nz_cpu = nz_mem = 0.0
    for r, raw, _ in containers:
        req.add(r)
        nz_cpu += r.cpu if CPU in raw else DEFAULT_NONZERO_CPU
        nz_mem += r.memory if MEMORY in raw else DEFAULT_NONZERO_MEMORY
    sidecars = Resource()
    init_max = Resource()
    for r, _, sidecar in inits:
        if sidecar:
            req.add(r)
            sidecars.add(r)
        else:
            init_max = Resource.max_of(init_max, r.plus(sidecars))
            nz_cpu = max(nz_cpu, r.cpu)
            nz_mem = max(nz_mem, r.memory)
    req = Resource.max_of(req, init_max)
    req.scalars[PODS] = req.scalars.get(PODS, 0.0) + 1.0
    pod_level = o.resource("spec.resources.requests")
    if pod_level is not None:
        for n in pod_level.names():
            if pod_level.has(n) and (n not in (CPU, MEMORY) or pod_level.get(n) > 0):
                req.set(n, pod_level.get(n))
    overhead = o.resource("spec.overhead")
    if overhead is not None:
        req.add(overhead)
        nz_cpu += overhead.cpu
        nz_mem += overhead.memory
    return req, nz_cpu, nz_mem


def _task_status(phase: str, deleting: bool, node: str) -> TaskStatus:
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if node else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


def parse_pod(o: _Obj, node_names: set[str] | None = None) -> PodSpec:
    """A Pod object. With `node_names`, a pod on a node not among them is an error (a dump must be
    whole; a stream leaves that to assembly)."""
    name = _check_name(o)
    ns = o.str_("metadata.namespace", "default") or "default"
    key = f"{ns}/{name}"
    uid = o.str_("metadata.uid", "") or key
    node = o.str_("spec.nodeName", "")
    if node and node_names is not None and node not in node_names:
        raise o.fail("spec.nodeName", f"pod {key} is on node {node!r}, which the snapshot does not contain")
    phase = o.str_("status.phase", "Pending") or "Pending"
    deleting = bool(o.get("metadata.deletionTimestamp"))
    status = _task_status(phase, deleting, node)
    annotations = o.str_map("metadata.annotations")
    labels = o.str_map("metadata.labels")
    req, nz_cpu, nz_mem = pod_request(o)
    prio_raw = o.get("spec.priority")
    if prio_raw is not None and (isinstance(prio_raw, bool) or not isinstance(prio_raw, int)):
        raise o.fail("spec.priority", f"expected an integer, got {prio_raw!r}")
    priority = 1 if prio_raw is None else int(prio_raw)
    tp = annotations.get(TASK_PRIORITY_KEY)
    if tp is not None:
        try:
            v = int(tp, 10)
            if -(2**31) <= v < 2**31:
                priority = v
        except ValueError:
            pass
    pre_raw = annotations.get(PREEMPTABLE_KEY, labels.get(PREEMPTABLE_KEY))
    preemptable = True if pre_raw is None else bool(_parse_bool_loose(pre_raw))
    policy = o.str_("spec.preemptionPolicy", "")
    required, preferred = _affinity(o)
    gates = o.list_("spec.schedulingGates")
    task = TaskInfo(
        uid=uid,
        name=name,
        namespace=ns,
        job="",
        resreq=req,
        status=status,
        node_name=node,
        priority=priority,
        raw_priority=0 if prio_raw is None else int(prio_raw),
        priority_class_name=o.str_("spec.priorityClassName", ""),
        preemptable=preemptable,
        preempt_never=policy == "Never",
        role=annotations.get(TASK_SPEC_KEY, labels.get(TASK_SPEC_KEY, "")),
        creation=o.str_("metadata.creationTimestamp", ""),
        start_time=o.str_("status.startTime", ""),
        gated=bool(gates),
        labels=labels,
        annotations=annotations,
        node_selector=o.str_map("spec.nodeSelector"),
        required_terms=required,
        preferred_terms=preferred,
        tolerations=_tolerations(o),
        nonzero_cpu=nz_cpu,
        nonzero_memory=nz_mem,
    )
    return PodSpec(key=key, task=task, scheduler=o.str_("spec.schedulerName", ""),
                   group=annotations.get(GROUP_KEY) or "")


_PARSERS = {
    "PriorityClass": parse_priority_class, "ConfigMap": parse_conf_map, "Node": parse_node,
    "Queue": parse_queue, "PodGroup": parse_podgroup,
}


# ===================================================================== assembly
def _fresh_task(t: TaskInfo) -> TaskInfo:
    # the fields a session writes (status, node, the per-session vectors) get their own copy; the
    # read-only ones (requests, labels, terms) are shared with the record
    return replace(t)


def assemble(rec: Records, *, scheduler_names: tuple[str, ...] = SCHEDULER_NAMES, copy: bool = True,
             strict: bool = True) -> Snapshot:
    """A Snapshot from records. `copy=False` hands the records' tasks to the snapshot (the records are
    then spent: only for a one-shot build). `strict=False` (a stream) turns what a whole dump may not
    contain into warnings: several global defaults, different confs, pods on nodes that are gone,
    duplicate pod uids."""
    snap = Snapshot()
    snap.warnings.extend(rec.warnings)
    global_default: int | None = None
    defaults = []
    for _, pc in rec.priority_classes.values():
        snap.priority_classes[pc.name] = pc.value
        if pc.global_default:
            global_default = pc.value
            defaults.append(pc.name)
    if len(defaults) > 1 and not strict:
        snap.warnings.append(f"several PriorityClasses are globalDefault ({', '.join(defaults)}); "
                             f"the last one ({defaults[-1]}) is used")
    texts = [(w, c.text) for w, c in rec.configmaps.values() if c.text is not None]
    if texts:
        if len({t for _, t in texts}) > 1:
            snap.warnings.append("several ConfigMaps carry different volcano-scheduler.conf; "
                                 f"the first ({texts[0][0]}) is used")
        conf = conf_of(*texts[0])
        snap.conf = replace(conf, warnings=[])
        snap.warnings.extend(conf.warnings)
    specs = sorted((n for _, n in rec.nodes.values()), key=lambda n: n.name)
    for i, n in enumerate(specs):
        snap.nodes.append(NodeInfo(name=n.name, index=i, allocatable=n.allocatable, labels=n.labels,
                                   taints=n.taints, unschedulable=n.unschedulable))
    for name, (_, q) in rec.queues.items():
        snap.queues[name] = q
    snap.ensure_queue(DEFAULT_QUEUE)
    for uid, (_, pg) in rec.podgroups.items():
        if pg.priority_class_name in snap.priority_classes:
            prio = snap.priority_classes[pg.priority_class_name]
        else:
            prio = global_default if global_default is not None else 0
        snap.jobs[uid] = JobInfo(
            uid=uid, name=pg.name, namespace=pg.namespace, queue=pg.queue, min_available=pg.min_available,
            min_task_member=dict(pg.min_task_member),
            min_resources=pg.min_resources.clone() if pg.min_resources is not None else None,
            priority=prio, priority_class_name=pg.priority_class_name, phase=pg.phase, creation=pg.creation,
            annotations=dict(pg.annotations),
        )
    _join_pods(snap, rec, scheduler_names, copy=copy, strict=strict)
    return snap


def _join_pods(snap: Snapshot, rec: Records, scheduler_names: tuple[str, ...], *, copy: bool,
               strict: bool) -> None:
    node_names = {n.name for n in snap.nodes} if not strict else None
    uids: set[str] | None = set() if not strict else None
    for key, (where, ps) in rec.pods.items():
        task = _fresh_task(ps.task) if copy else ps.task
        node = task.node_name
        if node_names is not None and node and node not in node_names:
            snap.warnings.append(f"{where}: pod {key} is on node {node!r}, which is not in the cache; "
                                 "left out of the session")
            continue
        if uids is not None:
            if task.uid in uids:
                snap.warnings.append(f"{where}: pod {key} repeats pod uid {task.uid!r}; left out of the session")
                continue
            uids.add(task.uid)
        status = task.status
        sched = ps.scheduler or scheduler_names[0]
        if sched not in scheduler_names:
            if node and status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
                snap.orphan_tasks.append(task)
            continue
        ns = task.namespace
        if ps.group:
            job_uid = f"{ns}/{ps.group}"
            job = snap.jobs.get(job_uid)
            if job is None:
                snap.warnings.append(f"{where}: pod {key} names PodGroup {job_uid!r}, which is missing; "
                                     "left out of the session")
                if node:
                    snap.orphan_tasks.append(task)
                continue
        else:
            uid = task.uid
            job_uid = f"{ns}/podgroup-{uid.replace('/', '-')}"
            job = snap.jobs.get(job_uid)
            if job is None:
                job = JobInfo(uid=job_uid, name=f"podgroup-{uid.replace('/', '-')}", namespace=ns,
                              queue=DEFAULT_QUEUE, min_available=1, creation=task.creation,
                              phase=PodGroupPhase.RUNNING if node else PodGroupPhase.PENDING)
                snap.jobs[job_uid] = job
        task.job = job_uid
        job.add_task(task)
    # podgroups whose queue does not exist leave the session (their placed pods still use capacity)
    for uid in sorted(snap.jobs):
        job = snap.jobs[uid]
        if job.queue not in snap.queues:
            snap.warnings.append(f"PodGroup {uid} names queue {job.queue!r}, which does not exist; left out of the session")
            for t in job.tasks.values():
                if t.node_name and t.status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
                    snap.orphan_tasks.append(t)
            del snap.jobs[uid]
