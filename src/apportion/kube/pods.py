"""Pods into tasks: requests (GetPodResourceRequest), status, priority, node affinity, tolerations, and
the podgroup each pod names (assembly joins it to that job, or to the one-pod job Volcano makes for a
pod without a group)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, NamedTuple

import orjson

from apportion.cluster.model import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredTerm,
    TaskInfo,
    TaskStatus,
    Toleration,
)
from apportion.errors import InputError, QuantityError, shown
from apportion.kube.fields import Fields, check_name, parse_bool_loose, plain_strs
from apportion.kube.records import PodSpec
from apportion.resources import CPU, MEMORY, PODS, Resource

GROUP_KEY = "scheduling.k8s.io/group-name"
PREEMPTABLE_KEY = "volcano.sh/preemptable"
TASK_PRIORITY_KEY = "volcano.sh/task-priority"
TASK_SPEC_KEY = "volcano.sh/task-spec"
#: kube-scheduler's defaults for containers without requests (scoring only).
DEFAULT_NONZERO_CPU = 100.0
DEFAULT_NONZERO_MEMORY = 200.0 * 1024 * 1024


def _requirements(o: Fields, path: str, items: Any) -> tuple[NodeSelectorRequirement, ...]:
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
            raise o.fail(f"{path}[{i}].operator", f"unknown operator {shown(op)}")
        vals = r.get("values") or []
        if not isinstance(vals, list):
            raise o.fail(f"{path}[{i}].values", "expected a list")
        key = r.get("key")
        if not isinstance(key, str):
            raise o.fail(f"{path}[{i}].key", "required string is missing")
        out.append(NodeSelectorRequirement(key=key, operator=op, values=tuple(str(v) for v in vals)))
    return tuple(out)


def _term(o: Fields, path: str, t: Any) -> NodeSelectorTerm:
    if not isinstance(t, dict):
        raise o.fail(path, "expected a node selector term mapping")
    return NodeSelectorTerm(
        match_expressions=_requirements(o, f"{path}.matchExpressions", t.get("matchExpressions")),
        match_fields=_requirements(o, f"{path}.matchFields", t.get("matchFields")),
    )


def _affinity(o: Fields) -> tuple[tuple[NodeSelectorTerm, ...] | None, tuple[PreferredTerm, ...]]:
    """The node affinity of a pod's `spec` (`o` is the spec's view)."""
    base = "affinity.nodeAffinity"
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
            raise o.fail(f"{path}.weight", f"expected an integer, got {shown(w)}")
        preferred.append(PreferredTerm(weight=o.int32(f"{path}.weight", w), term=_term(o, f"{path}.preference", p.get("preference") or {})))
    return required, tuple(preferred)


def _tolerations(o: Fields) -> tuple[Toleration, ...]:
    """The tolerations of a pod's `spec` (`o` is the spec's view)."""
    out = []
    for i, t in enumerate(o.list_("tolerations")):
        if not isinstance(t, dict):
            raise o.fail(f"tolerations[{i}]", "expected a mapping")
        to = Fields(t, o.where)
        op = to.str_("operator", "Equal") or "Equal"
        if op not in ("Equal", "Exists"):
            raise o.fail(f"tolerations[{i}].operator", f"unknown operator {shown(op)}")
        out.append(Toleration(key=to.str_("key", ""), operator=op, value=to.str_("value", ""),
                              effect=to.str_("effect", "")))
    return tuple(out)


def _container_requests(o: Fields, path: str) -> list[tuple[Resource, dict[str, Any], bool]]:
    out = []
    for i, c in enumerate(o.list_(path)):
        if not isinstance(c, dict):
            raise o.fail(f"{path}[{i}]", "expected a container mapping")
        co = Fields(c, o.where)
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


def pod_request(o: Fields) -> tuple[Resource, float, float]:
    """GetPodResourceRequest (§2.2), plus kube-scheduler's non-zero cpu/memory for scoring."""
    return _spec_request(o.sub("spec"))


def _spec_request(o: Fields) -> tuple[Resource, float, float]:
    """`pod_request` of a pod's `spec` (`o` is the spec's view)."""
    containers = _container_requests(o, "containers")
    inits = _container_requests(o, "initContainers")
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
    pod_level = o.resource("resources.requests")
    if pod_level is not None:
        for n in pod_level.names():
            if pod_level.has(n) and (n not in (CPU, MEMORY) or pod_level.get(n) > 0):
                req.set(n, pod_level.get(n))
    overhead = o.resource("overhead")
    if overhead is not None:
        req.add(overhead)
        nz_cpu += overhead.cpu
        nz_mem += overhead.memory
    return req, nz_cpu, nz_mem


#: the statuses `_task_status` returns, read once: on Python 3.11 each read of an Enum class's member
#: (`TaskStatus.RUNNING`) goes through the enum metaclass's `__getattr__` hook, four times the cost of a
#: plain class attribute, and a dump's every pod is given one
_RUNNING, _RELEASING, _BOUND, _PENDING = TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.BOUND, TaskStatus.PENDING
_SUCCEEDED, _FAILED, _UNKNOWN = TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.UNKNOWN


def _task_status(phase: str, deleting: bool, node: str) -> TaskStatus:
    if phase == "Running":
        return _RELEASING if deleting else _RUNNING
    if phase == "Pending":
        if deleting:
            return _RELEASING
        return _BOUND if node else _PENDING
    if phase == "Succeeded":
        return _SUCCEEDED
    if phase == "Failed":
        return _FAILED
    return _UNKNOWN


class _SpecParts(NamedTuple):
    """What a task takes from its pod's `spec`, nodeName aside."""

    request: Resource
    nonzero_cpu: float
    nonzero_memory: float
    raw_priority: int | None
    priority: int
    preempt_never: bool
    required: tuple[NodeSelectorTerm, ...] | None
    preferred: tuple[PreferredTerm, ...]
    gated: bool
    priority_class_name: str
    node_selector: dict[str, str]
    tolerations: tuple[Toleration, ...]
    scheduler: str


#: parsed specs by their bytes (nodeName left out). The pods of one job share a spec, so a dump's pods
#: parse a spec per job; bounded, should a stream bring ever new specs.
_SPEC_MEMO: dict[bytes, _SpecParts] = {}
SPEC_MEMO_MAX = 4096


def _spec_parts(spec: Fields) -> _SpecParts:
    """The spec's parts, parsed (InputError naming the field when one is malformed)."""
    req, nz_cpu, nz_mem = _spec_request(spec)
    prio_raw = spec.get("priority")
    if prio_raw is not None and (isinstance(prio_raw, bool) or not isinstance(prio_raw, int)):
        raise spec.fail("priority", f"expected an integer, got {shown(prio_raw)}")
    priority = 1 if prio_raw is None else spec.int32("priority", prio_raw)
    required, preferred = _affinity(spec)
    return _SpecParts(req, nz_cpu, nz_mem, prio_raw, priority, spec.str_("preemptionPolicy", "") == "Never",
                      required, preferred, bool(spec.list_("schedulingGates")), spec.str_("priorityClassName", ""),
                      spec.str_map("nodeSelector"), _tolerations(spec), spec.str_("schedulerName", ""))


def _spec_key(raw: Any) -> bytes | None:
    """The bytes a spec is memoised by (orjson keeps 1, 1.0 and true apart, as parsing does), or None
    when it cannot be told by them (then it is parsed)."""
    if type(raw) is not dict:
        return None
    if "nodeName" in raw:
        raw = {k: v for k, v in raw.items() if k != "nodeName"}
    try:
        return orjson.dumps(raw)
    except (TypeError, orjson.JSONEncodeError):  # a key that is not a string, an integer past 64 bits
        return None


def spec_parts(spec: Fields) -> _SpecParts:
    """`_spec_parts`, through the memo. Only a spec that parsed is kept, so a malformed one is reported
    for every pod that carries it, each under its own name."""
    key = _spec_key(spec.data)
    if key is None:
        return _spec_parts(spec)
    parts = _SPEC_MEMO.get(key)
    if parts is None:
        parts = _spec_parts(spec)
        if len(_SPEC_MEMO) >= SPEC_MEMO_MAX:
            _SPEC_MEMO.clear()
        _SPEC_MEMO[key] = parts
    return parts


def parse_pod(o: Fields, node_names: set[str] | None = None) -> PodSpec:
    """A Pod into its task. With `node_names`, a pod on a node not among them is an error (a dump must
    be whole; for a stream, assembly leaves such a pod out)."""
    data = o.data
    if type(data) is dict and not o.prefix:
        pod = _plain_pod(data, o.where, node_names)
        if pod is not None:
            return pod
    return parse_pod_reference(o, node_names)


def parse_pod_reference(o: Fields, node_names: set[str] | None = None) -> PodSpec:
    """`parse_pod` through typed field access, for any pod: the reference the plain read is tested
    against, and the path of every pod that read declines (with the errors, naming the field)."""
    meta, spec, st = o.sub("metadata"), o.sub("spec"), o.sub("status")
    name = check_name(meta, "name")
    ns = meta.str_("namespace", "default") or "default"
    key = f"{ns}/{name}"
    uid = meta.str_("uid", "") or key
    node = spec.str_("nodeName", "")
    if node and node_names is not None and node not in node_names:
        raise spec.fail("nodeName", f"pod {key} is on node {shown(node)}, which the snapshot does not contain")
    phase = st.str_("phase", "Pending") or "Pending"
    deleting = bool(meta.get("deletionTimestamp"))
    annotations = meta.str_map("annotations")
    labels = meta.str_map("labels")
    # in this order, so that of several malformed fields the same one is reported as ever
    parts = spec_parts(spec)
    return _pod(key, name, ns, uid, node, _task_status(phase, deleting, node), annotations, labels, parts,
                meta.str_("creationTimestamp", ""), st.str_("startTime", ""))


#: what `plain_head` reads of a pod before its spec: key, name, namespace, uid (the key when it has
#: none), nodeName, status, annotations, labels, the spec mapping, creationTimestamp, startTime
PlainHead = tuple[str, str, str, str, str, TaskStatus, dict[str, str], dict[str, str], dict[str, Any], str, str]


def plain_head(data: dict[str, Any], node_names: set[str] | None) -> PlainHead | None:
    """The fields `_plain_pod` reads of a pod outside its spec, when they are plain (mappings as dicts,
    the strings as str, nothing missing that must be there) and the pod would be accepted on them;
    None for any other pod. Reads nothing it could fail on: a dump's reader checks the pod's key and
    uid for duplicates with what this gives before the spec is parsed (`plain_finish`), as the
    reference checks them before `parse_pod`."""
    meta = data.get("metadata")
    spec = data.get("spec")
    st = data.get("status")
    if type(meta) is not dict or type(spec) is not dict or (st is not None and type(st) is not dict):
        return None
    name = meta.get("name")
    ns = meta.get("namespace", "default")
    uid = meta.get("uid", "")
    node = spec.get("nodeName", "")
    creation = meta.get("creationTimestamp", "")
    phase, start = ("Pending", "") if st is None else (st.get("phase", "Pending"), st.get("startTime", ""))
    if (type(name) is not str or not name or type(ns) is not str or type(uid) is not str or type(node) is not str
            or type(creation) is not str or type(phase) is not str or type(start) is not str):
        return None  # a None the reference turns into its default among them too
    ns = ns or "default"
    key = f"{ns}/{name}"
    if node and node_names is not None and node not in node_names:
        return None
    annotations = plain_strs(meta.get("annotations"))
    labels = plain_strs(meta.get("labels"))
    if annotations is None or labels is None:
        return None
    status = _task_status(phase or "Pending", bool(meta.get("deletionTimestamp")), node)
    return key, name, ns, uid or key, node, status, annotations, labels, spec, creation, start


def plain_finish(head: PlainHead, where: str) -> PodSpec:
    """The pod's record from its `plain_head`: its spec parsed (InputError naming the field when it is
    malformed)."""
    key, name, ns, uid, node, status, annotations, labels, spec, creation, start = head
    # the memo read first: a field view of the spec is made only for a spec not parsed yet (one per job)
    memo_key = _spec_key(spec)
    parts = None if memo_key is None else _SPEC_MEMO.get(memo_key)
    if parts is None:
        parts = spec_parts(Fields(spec, where, "spec."))
    return _pod(key, name, ns, uid, node, status, annotations, labels, parts, creation, start)


def _plain_pod(data: dict[str, Any], where: str, node_names: set[str] | None) -> PodSpec | None:
    """What `parse_pod_reference` gives a pod whose fields read here are plain and that it would accept
    (`plain_head`); None for any other, so that the reference reads it (and reports what is wrong). A
    dump's pods are plain: this read skips a field view and a path walk per field."""
    head = plain_head(data, node_names)
    return None if head is None else plain_finish(head, where)


#: `_pod` makes a pod's task with positional arguments; False: by keyword (the reference the tests
#: compare with)
POSITIONAL = True
#: TaskInfo's fields in the order `_pod` passes them positionally (the rest keep their defaults)
_POSITIONAL = ("uid", "name", "namespace", "job", "resreq", "status", "node_name", "priority", "raw_priority",
               "priority_class_name", "preemptable", "preempt_never", "role", "creation", "start_time", "started_at",
               "gated", "labels", "annotations", "node_selector", "required_terms", "preferred_terms", "tolerations",
               "nonzero_cpu", "nonzero_memory")
if tuple(f.name for f in fields(TaskInfo))[:len(_POSITIONAL)] != _POSITIONAL:
    raise ImportError("TaskInfo's fields are no longer in the order kube/pods.py `_pod` passes them")


def _pod(key: str, name: str, ns: str, uid: str, node: str, status: TaskStatus, annotations: dict[str, str],
         labels: dict[str, str], parts: _SpecParts, creation: str, start_time: str) -> PodSpec:
    """The pod's record from what both reads take from it."""
    priority = parts.priority
    tp = annotations.get(TASK_PRIORITY_KEY)
    if tp is not None:
        try:
            v = int(tp, 10)
            if -(2**31) <= v < 2**31:
                priority = v
        except ValueError:
            pass
    pre_raw = annotations.get(PREEMPTABLE_KEY, labels.get(PREEMPTABLE_KEY))
    preemptable = True if pre_raw is None else bool(parse_bool_loose(pre_raw))
    raw_priority = 0 if parts.raw_priority is None else int(parts.raw_priority)
    role = annotations.get(TASK_SPEC_KEY, labels.get(TASK_SPEC_KEY, ""))
    # the memo's objects are shared by every pod of the spec: what a task may change is its own
    request, node_selector = parts.request.clone(), dict(parts.node_selector)
    if POSITIONAL:
        # in `_POSITIONAL`'s order (started_at None): one call per pod of a dump, and matching 25
        # keyword arguments to their parameters costs as much as the rest of the call
        task = TaskInfo(uid, name, ns, "", request, status, node, priority, raw_priority, parts.priority_class_name,
                        preemptable, parts.preempt_never, role, creation, start_time, None, parts.gated, labels,
                        annotations, node_selector, parts.required, parts.preferred, parts.tolerations,
                        parts.nonzero_cpu, parts.nonzero_memory)
    else:
        task = TaskInfo(uid=uid, name=name, namespace=ns, job="", resreq=request, status=status, node_name=node,
                        priority=priority, raw_priority=raw_priority, priority_class_name=parts.priority_class_name,
                        preemptable=preemptable, preempt_never=parts.preempt_never, role=role, creation=creation,
                        start_time=start_time, gated=parts.gated, labels=labels, annotations=annotations,
                        node_selector=node_selector, required_terms=parts.required,
                        preferred_terms=parts.preferred, tolerations=parts.tolerations,
                        nonzero_cpu=parts.nonzero_cpu, nonzero_memory=parts.nonzero_memory)
    return PodSpec(key, task, parts.scheduler, annotations.get(GROUP_KEY) or "")  # (key, task, scheduler, group)
