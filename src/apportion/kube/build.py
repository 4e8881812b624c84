"""Building a Snapshot from decoded kubectl objects (`build_snapshot`, the reader API that takes parsed
objects) or from files (`load_snapshot`): every object parsed into its record (`parse_objects`), then
the records assembled (`assemble`), which the cache (`apportion.state`) also uses.

Every malformed object is reported with the file, the document index (and `items[i]` for a List) and the
field path; nothing here raises anything but InputError for bad input. The scheduler configuration a
ConfigMap carries stays raw text on the snapshot (`Snapshot.conf_text`): the engine parses it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from apportion.cluster.model import JobInfo, NodeInfo, PodGroupPhase, QueueInfo, TaskInfo, TaskStatus
from apportion.cluster.snapshot import DEFAULT_QUEUE, ConfText, Snapshot
from apportion.collection import collection_paused
from apportion.errors import InputError
from apportion.kube import objects as kube_objects
from apportion.kube.conf import CONF_KEY
from apportion.kube.documents import read_documents
from apportion.kube.fields import Fields, check_name
from apportion.kube.objects import (
    parse_conf_map,
    parse_node,
    parse_podgroup,
    parse_priority_class,
    parse_queue,
    plain_node,
    plain_podgroup,
)
from apportion.kube.pods import parse_pod, plain_finish, plain_head
from apportion.kube.records import NAMESPACED, Records

SCHEDULER_NAMES = ("volcano",)
KNOWN_KINDS = ("Node", "Queue", "PodGroup", "Pod", "PriorityClass", "ConfigMap")

_PARSERS = {
    "PriorityClass": parse_priority_class, "ConfigMap": parse_conf_map, "Node": parse_node,
    "Queue": parse_queue, "PodGroup": parse_podgroup, "Pod": parse_pod,
}
_DONE = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)
NodeNames = frozenset[str]

#: True: `parse_objects` reads a plain pod's metadata once (`plain_head`), for its key, uid and task
#: alike, and makes a field view only for the pods that need one; a plain Node or PodGroup is read once
#: too (`plain_node`, `plain_podgroup`), its key with it. False: each object's key is read through its
#: view and then the object parsed, which reads the key's fields again (the reference the tests
#: compare with)
ONE_READ = True


def load_snapshot(paths: list[str], *, scheduler_names: tuple[str, ...] = SCHEDULER_NAMES) -> Snapshot:
    """Load one or more kubectl YAML or JSON files (or `-`) into a Snapshot."""
    with collection_paused():
        return build_snapshot(read_documents(paths), scheduler_names=scheduler_names)


def build_snapshot(objects: list[tuple[str, Any]], *, scheduler_names: tuple[str, ...] = SCHEDULER_NAMES) -> Snapshot:
    """A Snapshot from decoded objects, each with its location: `(where, mapping)` as `read_documents`
    gives them (or as a caller that decoded kubectl's JSON itself builds them)."""
    # what parsing allocates lives on and forms no cycles: a 10,000-pod dump's collections (a full
    # one among them, over the decoded objects too) were a third of the build and freed nothing
    with collection_paused():
        return assemble(parse_objects(objects), scheduler_names=scheduler_names, copy=False)


def object_key(kind: str, o: Fields) -> str:
    """The object's Kubernetes key: `name` for cluster-scoped kinds, `namespace/name` for the others."""
    name = check_name(o)
    if NAMESPACED[kind]:
        return f"{o.str_('metadata.namespace', 'default') or 'default'}/{name}"
    return name


def pod_key(o: Fields) -> tuple[str, str | None]:
    """A Pod's key (`object_key`) and, from plain metadata (a dict with the name, namespace and uid as
    strings), its uid (the key when it has none) read at once. Otherwise the key through the fields and
    None: the caller reads the uid through them after its duplicate-key check, so that of two faults
    the same one is reported as ever."""
    data = o.data
    meta = data.get("metadata") if type(data) is dict else None
    if type(meta) is dict:
        name = meta.get("name")
        ns = meta.get("namespace", "default")
        uid = meta.get("uid", "")
        if type(name) is str and name and type(ns) is str and type(uid) is str:
            key = f"{ns or 'default'}/{name}"
            return key, uid or key
    return object_key("Pod", o), None


def pod_uid(o: Fields, key: str) -> str:
    """A Pod's uid through the fields (the key when it has none): what `pod_key` reads from plain
    metadata, the reference it is tested against."""
    return o.str_("metadata.uid", "") or key


def parse_object(kind: str, o: Fields) -> Any:
    """The record of one object of a kind apportion reads (KNOWN_KINDS)."""
    return _PARSERS[kind](o)


def parse_objects(objects: list[tuple[str, Any]]) -> Records:
    """Parse a dump strictly: duplicates, several global defaults, conflicting confs and pods on nodes
    the dump does not contain are errors. Kinds are parsed in dependency order, so the first error
    reported does not depend on the order of the documents."""
    rec = Records()
    by_kind: dict[str, list[Fields]] = {k: [] for k in KNOWN_KINDS}
    pod_docs: list[tuple[str, Any]] = []  # (only under ONE_READ: the pods, without their views)
    for where, data in objects:
        kind = data.get("kind")
        if not isinstance(kind, str):
            raise InputError("kind: required field is missing or not a string", where=where)
        if kind not in by_kind:
            rec.warnings.append(f"{where}: kind {kind} is not read by apportion; skipped")
            continue
        if kind == "Pod" and ONE_READ:
            pod_docs.append((where, data))
            continue
        by_kind[kind].append(Fields(data, where))

    defaults: list[str] = []
    for o in by_kind["PriorityClass"]:
        name = check_name(o)
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
    for o in by_kind["Node"]:
        # a plain Node is read at once (its name with it); any other as the reference reads it
        node = plain_node(o.data) if ONE_READ and kube_objects.PLAIN_READ and type(o.data) is dict else None
        name = check_name(o) if node is None else node.name
        if name in rec.nodes:
            raise o.fail("metadata.name", f"duplicate Node {name!r}")
        rec.nodes[name] = (o.where, parse_node(o) if node is None else node)
    for o in by_kind["Queue"]:
        name = check_name(o)
        if name in rec.queues:
            raise o.fail("metadata.name", f"duplicate Queue {name!r}")
        rec.queues[name] = (o.where, parse_queue(o))
    for o in by_kind["PodGroup"]:
        pg = plain_podgroup(o.data) if ONE_READ and kube_objects.PLAIN_READ and type(o.data) is dict else None
        uid = object_key("PodGroup", o) if pg is None else pg.uid
        if uid in rec.podgroups:
            raise o.fail("metadata.name", f"duplicate PodGroup {uid!r}")
        rec.podgroups[uid] = (o.where, parse_podgroup(o) if pg is None else pg)
    uids: set[str] = set()
    node_names = set(rec.nodes)
    pods = rec.pods
    for where, data in pod_docs:
        head = plain_head(data, node_names) if type(data) is dict else None
        if head is None:  # read as the reference reads it (and its faults reported as it reports them)
            _add_pod(rec, uids, node_names, Fields(data, where))
            continue
        # what `pod_key` and `parse_pod` read of such a pod, read once: the key, the uid or the key
        key, uid = head[0], head[3]
        if key in pods:
            raise Fields(data, where).fail("metadata.name", f"duplicate Pod {key!r}")
        if uid in uids:
            raise Fields(data, where).fail("metadata.uid", f"duplicate pod uid {uid!r}")
        uids.add(uid)
        pods[key] = (where, plain_finish(head, where))
    for o in by_kind["Pod"]:
        _add_pod(rec, uids, node_names, o)
    return rec


def _add_pod(rec: Records, uids: set[str], node_names: set[str], o: Fields) -> None:
    """One pod into the records, after the checks for a duplicate key and uid."""
    key, plain_uid = pod_key(o)
    if key in rec.pods:
        raise o.fail("metadata.name", f"duplicate Pod {key!r}")
    uid = plain_uid if plain_uid is not None else pod_uid(o, key)
    if uid in uids:
        raise o.fail("metadata.uid", f"duplicate pod uid {uid!r}")
    uids.add(uid)
    rec.pods[key] = (o.where, parse_pod(o, node_names))


# ===================================================================== assembly
def _fresh_task(t: TaskInfo) -> TaskInfo:
    # the fields a session writes (status, node, the per-session vectors) get their own copy; the
    # read-only ones (requests, labels, terms) are shared with the record
    return replace(t)


def assemble(rec: Records, *, scheduler_names: tuple[str, ...] = SCHEDULER_NAMES, copy: bool = True,
             strict: bool = True, reuse: Callable[[str, NodeNames], JobInfo | None] | None = None) -> Snapshot:
    """A Snapshot from records. `copy=False` hands the records' tasks to the snapshot (the records are
    then spent: only for a one-shot build). `strict=False` (a stream) turns what a whole dump may not
    contain into warnings: several global defaults, different confs, pods on nodes that are gone,
    duplicate pod uids. `reuse(uid, node names)` may return a job, with all its tasks, kept from an
    earlier snapshot (its pods are then not joined again)."""
    snap, global_default = _begin(rec, strict)
    kept: set[str] = set()
    node_set = frozenset(n.name for n in snap.nodes)
    for uid, (_, pg) in rec.podgroups.items():
        if reuse is not None:
            ji = reuse(uid, node_set)
            if ji is not None:
                snap.jobs[uid] = ji
                kept.add(uid)
                continue
        snap.jobs[uid] = _new_job(uid, pg, snap, global_default)
    _join_pods(snap, rec, scheduler_names, copy=copy, strict=strict, kept=kept)
    return snap


def assemble_indexed(rec: Records, group_pods: Mapping[str, Mapping[str, int]], loose: Iterable[str], *,
                     scheduler_names: tuple[str, ...] = SCHEDULER_NAMES,
                     reuse: Callable[[str, NodeNames], JobInfo | None],
                     nodes: list[NodeInfo] | None = None, unseen: bool = False) -> Snapshot:
    """What `assemble(rec, strict=False, reuse=reuse)` gives, visiting only the pods of the jobs that are
    not reused. The caller keeps the index: `group_pods[job uid]` holds, with their arrival numbers, the
    keys of the pods of this scheduler that name that PodGroup, and `loose` every other pod key (no
    PodGroup, another scheduler, a PodGroup the records lack). It promises that no two pods share a uid
    and that no pod that occupies a node names a node the records lack (the warnings of those cases are
    `assemble`'s); the self-check compares the two (state/check.py). `nodes`: the NodeInfo objects of
    the last snapshot, handed out again (their task maps emptied) when the caller knows that the
    records' nodes have not changed since; `unseen`: that list itself, as it is, when the caller also
    knows that no session saw it (nothing filled a task map in)."""
    snap, global_default = _begin(rec, False, nodes, unseen=unseen)
    node_set = frozenset(n.name for n in snap.nodes)
    pods = rec.pods
    for uid, (_, pg) in rec.podgroups.items():
        ji = reuse(uid, node_set)
        if ji is not None:
            snap.jobs[uid] = ji
            continue
        job = snap.jobs[uid] = _new_job(uid, pg, snap, global_default)
        members = group_pods.get(uid)
        if members:
            for key in sorted(members, key=members.__getitem__) if len(members) > 1 else members:
                task = _fresh_task(pods[key][1].task)
                task.job = uid
                job.add_task(task)
    # what else `_join_pods` reaches, in the same (arrival) order: its warnings and orphans follow it
    _join_loose(snap, pods, loose, scheduler_names)
    _drop_missing_queues(snap)
    return snap


def assemble_delta(rec: Records, group_pods: Mapping[str, Mapping[str, int]], loose: Iterable[str], *,
                   scheduler_names: tuple[str, ...] = SCHEDULER_NAMES,
                   reuse: Callable[[str, NodeNames], JobInfo | None], nodes: list[NodeInfo] | None,
                   base: dict[str, JobInfo], visit: Iterable[str], tail: list[str],
                   queues: dict[str, QueueInfo] | None = None, unseen: bool = False
                   ) -> tuple[Snapshot, list[str]]:
    """What `assemble_indexed` gives, visiting only some PodGroups: `base` holds the jobs of the
    records' PodGroups as the last assembly gave them, in the records' order of then; the caller
    promises that every PodGroup of the records outside `visit` and `tail` is in `base` with a job that
    `reuse` would hand out again, that `visit` names every PodGroup of `base` the records lack, that
    `tail` lists the records' PodGroups that `base` lacks or that were added again since (they come
    last in the records, in this order), and that no job would be dropped for a missing queue (the caller
    checks the jobs built here). `queues`: the records' queues by name, in the records' order, when the
    caller holds them so; `unseen` as for `assemble_indexed`. Returns the snapshot and the uids of the
    jobs built anew."""
    snap, global_default = _begin(rec, False, nodes, queues, unseen)
    podgroups, pods = rec.podgroups, rec.pods
    jobs = dict(base)
    built: list[str] = []
    for uid in visit:
        if uid not in podgroups:
            jobs.pop(uid, None)
    for uid in tail:
        jobs.pop(uid, None)
    todo = [uid for uid in visit if uid in jobs]
    # (none to visit at most sessions of a simulation whose jobs the cache does not hold: the forecast)
    node_set = frozenset(n.name for n in snap.nodes) if todo or tail else frozenset()
    for uid in (*todo, *tail):
        ji = reuse(uid, node_set)
        if ji is None:
            ji = _new_job(uid, podgroups[uid][1], snap, global_default)
            members = group_pods.get(uid)
            if members:
                for key in sorted(members, key=members.__getitem__) if len(members) > 1 else members:
                    task = _fresh_task(pods[key][1].task)
                    task.job = uid
                    ji.add_task(task)
            built.append(uid)
        jobs[uid] = ji
    snap.jobs = jobs
    _join_loose(snap, pods, loose, scheduler_names)
    return snap, built


def _join_loose(snap: Snapshot, pods: Mapping[str, Any], loose: Iterable[str],
                scheduler_names: tuple[str, ...]) -> None:
    """What `_join_pods` does with the pods `loose` (keys of `pods`), in their order, the queues not
    checked; with none (a simulation whose jobs the cache does not hold: the forecast) nothing, not
    even the nodes' names it would gather."""
    rest = Records()
    rest.pods = {key: pods[key] for key in loose}
    if rest.pods:
        _join_pods(snap, rest, scheduler_names, copy=True, strict=False, kept=set(), queues_checked=False)


def _begin(rec: Records, strict: bool, nodes: list[NodeInfo] | None = None,
           queues: dict[str, QueueInfo] | None = None, unseen: bool = False) -> tuple[Snapshot, int | None]:
    """A snapshot holding the records' priority classes, conf, nodes (`nodes` when given: the records'
    nodes as built before; `unseen`: that list as it is, which no session saw) and queues; the global
    default priority."""
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
        where, text = texts[0]
        snap.conf_text = ConfText(text=text, where=f"{where}: data.{CONF_KEY}", warnings_at=len(snap.warnings))
    if nodes is not None and unseen:
        # no session filled a task map in: looking at each node (a thousand of them, scattered in
        # memory) to find that out was most of a forecast's snapshot
        snap.nodes = nodes
    elif nodes is not None:
        for node in nodes:
            if node.tasks:  # an empty map is left as it is: a write per node is what costs
                node.tasks = {}
        snap.nodes = list(nodes)
    else:
        specs = sorted((n for _, n in rec.nodes.values()), key=lambda n: n.name)
        for i, n in enumerate(specs):
            snap.nodes.append(NodeInfo(name=n.name, index=i, allocatable=n.allocatable, labels=n.labels,
                                       taints=n.taints, unschedulable=n.unschedulable))
    if queues is not None:
        snap.queues = dict(queues)
    else:
        for name, (_, q) in rec.queues.items():
            snap.queues[name] = q
    snap.ensure_queue(DEFAULT_QUEUE)
    return snap, global_default


def _new_job(uid: str, pg: Any, snap: Snapshot, global_default: int | None) -> JobInfo:
    if pg.priority_class_name in snap.priority_classes:
        prio = snap.priority_classes[pg.priority_class_name]
    else:
        prio = global_default if global_default is not None else 0
    return JobInfo(
        uid=uid, name=pg.name, namespace=pg.namespace, queue=pg.queue, min_available=pg.min_available,
        min_task_member=dict(pg.min_task_member),
        min_resources=pg.min_resources.clone() if pg.min_resources is not None else None,
        priority=prio, priority_class_name=pg.priority_class_name, phase=pg.phase, creation=pg.creation,
        annotations=dict(pg.annotations),
    )


def _join_pods(snap: Snapshot, rec: Records, scheduler_names: tuple[str, ...], *, copy: bool,
               strict: bool, kept: set[str], queues_checked: bool = True) -> None:
    """Pods into tasks of their jobs; pods of other schedulers or of missing jobs still hold node capacity."""
    node_names = {n.name for n in snap.nodes} if not strict else None
    uids: set[str] | None = set() if not strict else None
    for key, (where, ps) in rec.pods.items():
        # a kept job holds its tasks already (a pod of its group that it does not hold, one on a node
        # that is gone, goes the usual way and is reported again)
        if (kept and ps.group and (g := f"{ps.task.namespace}/{ps.group}") in kept
                and (ps.scheduler or scheduler_names[0]) in scheduler_names and ps.task.uid in snap.jobs[g].tasks):
            if uids is not None:
                uids.add(ps.task.uid)
            continue
        task = _fresh_task(ps.task) if copy else ps.task
        node = task.node_name
        if node_names is not None and node and node not in node_names and task.status not in _DONE:
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
            if node and status not in _DONE:
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
    if queues_checked:
        _drop_missing_queues(snap)


def _drop_missing_queues(snap: Snapshot) -> None:
    """PodGroups whose queue does not exist leave the session (their placed pods still use capacity)."""
    queues = snap.queues
    for uid in sorted(uid for uid, job in snap.jobs.items() if job.queue not in queues):
        job = snap.jobs.pop(uid)
        snap.warnings.append(f"PodGroup {uid} names queue {job.queue!r}, which does not exist; left out of the session")
        for t in job.tasks.values():
            if t.node_name and t.status not in _DONE:
                snap.orphan_tasks.append(t)
