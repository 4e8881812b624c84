"""Feeding the simulator's SchedulerCache: the simulated cluster as watch events.

A job's arrival adds its PodGroup and Pods, a task's start or end modifies its Pod, a finished or
killed job is deleted, nodes come and go with node events, and the plan follower's child queues are
added, modified and deleted as the plans move. Everything is told at the next session (`_flush`), in
an order that never shows the cache a pod on a node it does not hold.
"""

from __future__ import annotations

from typing import Any

from apportion.cluster.model import NodeInfo, QueueInfo, TaskStatus
from apportion.kube.pods import GROUP_KEY, PREEMPTABLE_KEY
from apportion.kube.write import node_object, node_spec, queue_object, resource_list
from apportion.simulation.jobs import SimJob, SimTask
from apportion.simulation.scenario import RESERVATION_ID_KEY, Scenario
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent


class ClusterFeed:
    """The part of the Simulator that tells its cache what changed (mixed into Simulator)."""

    sc: Scenario
    now: float
    cache: SchedulerCache
    nodes: dict[str, NodeInfo]
    queues: dict[str, QueueInfo]
    children: dict[str, list[QueueInfo]]
    jobs: dict[str, SimJob]
    active: dict[str, SimJob]
    _node_objs: dict[str, tuple[str, dict[str, Any]]]
    _dirty: set[str]
    #: the jobs of `_dirty` changed again since the last early quiet test was handed them (skipping.py)
    _early_dirty: set[str]
    #: node events so far, and their number when the cache was last told the nodes
    _node_changes: int
    _nodes_told: int
    _objects_jobs: set[str]
    _told: dict[str, tuple[Any, ...]]
    _told_pg: dict[str, tuple[Any, ...]]
    _told_queues: dict[str, QueueInfo]
    _requests: dict[str, dict[str, str]]
    #: whether the cache holds the nodes (see `_load_cluster`)
    _cache_nodes: bool
    #: False: the cache is told the nodes at once also when no session sees them (the reference)
    defer_nodes = True

    def _load_cluster(self, nodes: bool = True) -> None:
        """The scenario's cluster into the cache: PriorityClasses, Nodes and Queues, as the objects they
        were read from (made from the model objects, with them as records, when a scenario was built
        in code). `nodes=False` (a start state whose objects give every session its nodes: the
        forecast) leaves the Nodes out until a job the cache builds is told (`_flush`), when
        `defer_nodes` is on."""
        for name, value in self.sc.priority_classes.items():
            self._apply(ADDED, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                "metadata": {"name": name}, "value": value}, f"{self.sc.source}: priorityClasses")
        raw = {(obj.get("kind"), obj["metadata"]["name"]): (where, obj) for where, obj in self.sc.objects
               if obj.get("kind") in ("Node", "Queue")}
        self._cache_nodes = nodes or not self.defer_nodes
        if self._cache_nodes:
            for n in self.sc.nodes:
                self._node_objs[n.name] = raw.get(("Node", n.name)) or ("simulator", node_object(n))
                self._add_node(n)
        for name, q in self.queues.items():
            hit = raw.get(("Queue", name))
            if hit is not None:
                self._apply(ADDED, hit[1], hit[0])
            else:
                self._apply(ADDED, queue_object(q), "simulator", q)

    def _tell_nodes(self) -> None:
        """The nodes left out by `_load_cluster` into the cache: the scenario's that are live, in its
        order, with the objects they were read from (a node event's own object for a node it added
        kept); `_flush` then adds those node events added and deletes none."""
        raw = {obj["metadata"]["name"]: (where, obj) for where, obj in self.sc.objects if obj.get("kind") == "Node"}
        for n in self.sc.nodes:
            self._node_objs.setdefault(n.name, raw.get(n.name) or ("simulator", node_object(n)))
            if n.name in self.nodes:
                self._add_node(self.nodes[n.name])

    def _add_node(self, n: NodeInfo) -> None:
        where, obj = self._node_objs[n.name]
        self._apply(ADDED, obj, where, node_spec(n) if where == "simulator" else None)

    def _apply(self, typ: str, obj: dict[str, Any], where: str, record: Any = None) -> None:
        self.cache.apply(WatchEvent(typ, obj, where, record))

    def _flush(self) -> None:
        """Tell the cache what changed since the last session: nodes that came, the plan follower's child
        queues, every changed job (pods first, so none points at a node about to go), nodes that went.
        The nodes are compared only after a node event (`_node_changes`), the only thing that moves them."""
        if not self._cache_nodes and any(uid not in self._objects_jobs for uid in self._dirty):
            # a job the cache builds may run on a node, which the cache must then hold
            self._cache_nodes = True
            self._tell_nodes()
        nodes_moved = self._cache_nodes and self._nodes_told != self._node_changes
        if nodes_moved:
            for name in sorted(self.nodes):
                if name not in self.cache.raw["Node"]:
                    self._node_objs.setdefault(name, ("simulator", node_object(self.nodes[name])))
                    self._add_node(self.nodes[name])
        kids = {q.name: q for qs in self.children.values() for q in qs}
        for name, q in kids.items():
            if self._told_queues.get(name) is not q:
                self._apply(MODIFIED if name in self._told_queues else ADDED, queue_object(q), "plan follower", q)
                self._told_queues[name] = q
        for uid in sorted(self._dirty):
            if uid not in self._objects_jobs:  # built by the start state's objects, not read from the cache
                self._flush_job(self.jobs[uid])
        self._dirty.clear()
        self._early_dirty.clear()
        for name in [n for n in self._told_queues if n not in kids]:
            self._apply(DELETED, queue_object(self._told_queues.pop(name)), "plan follower")
        if nodes_moved:
            for name in [n for n in self.cache.raw["Node"] if n not in self.nodes]:
                self._apply(DELETED, self._node_objs[name][1], "node event")
            self._nodes_told = self._node_changes

    def _flush_job(self, sj: SimJob) -> None:
        live = sj.uid in self.active
        pg_key = sj.uid
        if not live:
            if pg_key in self._told_pg:
                ns, name = sj.uid.split("/", 1)
                for t in sj.tasks:
                    key = f"{ns}/{t.name}"
                    if self._told.pop(key, None) is not None:
                        self._apply(DELETED, {"kind": "Pod", "metadata": {"name": t.name, "namespace": ns}},
                                    f"simulator: {sj.uid} ended")
                del self._told_pg[pg_key]
                self._apply(DELETED, {"kind": "PodGroup", "metadata": {"name": name, "namespace": ns}},
                            f"simulator: {sj.uid} ended")
            return
        pg = (sj.phase, sj.queue, sj.reservation_id)
        if self._told_pg.get(pg_key) != pg:
            self._apply(MODIFIED if pg_key in self._told_pg else ADDED, self._podgroup_object(sj), f"simulator: {sj.uid}")
            self._told_pg[pg_key] = pg
        ns = sj.uid.split("/", 1)[0]
        for t in sj.tasks:
            key = f"{ns}/{t.name}"
            state = (t.status, t.node)
            if self._told.get(key) != state:
                self._apply(MODIFIED if key in self._told else ADDED, self._pod_object(sj, t), f"simulator: {key}")
                self._told[key] = state

    def _podgroup_object(self, sj: SimJob) -> dict[str, Any]:
        ns, name = sj.uid.split("/", 1)
        meta: dict[str, Any] = {"name": name, "namespace": ns, "creationTimestamp": sj.creation}
        if sj.reservation_id:
            meta["annotations"] = {RESERVATION_ID_KEY: sj.reservation_id}
        spec: dict[str, Any] = {"queue": sj.queue, "minMember": sj.spec.min_member,
                                "minResources": resource_list(sj.min_resources)}
        if sj.spec.priority_class:
            spec["priorityClassName"] = sj.spec.priority_class
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": meta, "spec": spec,
                "status": {"phase": sj.phase.value}}

    def _pod_object(self, sj: SimJob, t: SimTask) -> dict[str, Any]:
        req = self._requests.get(sj.uid)
        if req is None:
            # a task is one pod: GetPodResourceRequest adds the pod itself
            req = self._requests[sj.uid] = resource_list(sj.resreq, pods=False)
        ns, name = sj.uid.split("/", 1)
        meta: dict[str, Any] = {"name": t.name, "namespace": ns, "uid": f"{ns}/{t.name}",
                                "creationTimestamp": sj.creation,
                                "annotations": {GROUP_KEY: name,
                                                PREEMPTABLE_KEY: "true" if sj.spec.preemptable else "false"}}
        spec: dict[str, Any] = {"schedulerName": "volcano", "priority": sj.priority,
                                "containers": [{"name": "task", "resources": {"requests": req}}]}
        if sj.spec.priority_class:
            spec["priorityClassName"] = sj.spec.priority_class
        if t.status is TaskStatus.PENDING:
            phase = "Pending"
        elif t.status in (TaskStatus.RUNNING, TaskStatus.RELEASING):
            phase = "Running"
            spec["nodeName"] = t.node
            if t.status is TaskStatus.RELEASING:
                meta["deletionTimestamp"] = f"{self.now:020.3f}"
        else:
            phase = "Succeeded"
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}

