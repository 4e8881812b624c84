"""The service's Binder, Evictor and StatusUpdater on a Ray cluster (`apportion serve --backend ray`).

Each scheduling tick (service/loop.py) first calls `observe`: the Ray cluster's nodes become Node
objects (joins and losses are cache events like any edit), pods on a node that left go back to
Pending, and finished Ray tasks and ended actors make their pods Succeeded or Failed (an actor that
ends itself with `ray.actor.exit_actor()` succeeds; killed by someone else or crashed, it fails). Then
the session's decisions go through `decisions()`, a `RayDecisions`:

* a bind starts each pod's task on exactly the Ray node the session chose: one task with
  `NodeAffinitySchedulingStrategy(node_id, soft=False)`; the tasks of one job bound together (a gang)
  first get a placement group with one bundle per task, each bundle pinned to its chosen node by Ray's
  `ray.io/node-id` label, and start only when the whole group is placed; if it cannot be placed within
  `gang_timeout_s` the group is removed and every bind of the job fails (all or none);
* an eviction (reclaim, preempt) cancels the task (`ray.cancel(force=True)`) or kills the actor
  (`ray.kill`), and the pod goes back to Pending, as in Volcano, to run again when a session binds it.

What Ray runs is in the pods' annotations (ray_jobs.py). A pod stored as Running that this process
did not start (the service restarted) goes back to Pending: its Ray task is not ours to watch.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import Any

from apportion.backends.ray_connect import connect
from apportion.backends.ray_jobs import GROUP_KEY, decode_payload
from apportion.backends.ray_nodes import NODE_ID_KEY, alive_nodes
from apportion.backends.ray_resources import ray_options
from apportion.backends.ray_tasks import remote
from apportion.errors import ApportionError
from apportion.lean_dataclass import dataclass
from apportion.service.loop import STARTED_KEY, ObjectBackend
from apportion.service.objects import ObjectKey

log = logging.getLogger(__name__)

Commit = Callable[[dict[ObjectKey, dict[str, Any]], list[ObjectKey]], None]


@dataclass
class Started:
    """A pod's work on Ray: the task's ObjectRef or the actor's handle, its node, its job's group."""

    node: str
    ref: Any = None
    actor: Any = None
    job: str = ""
    #: its bundle in the job's placement group (gangs), else None
    bundle: int | None = None
    #: when the bind started it (wall time, time.time(): the task's own clock on another process
    #: compares with it), for the bind-to-running benchmark
    started: float = 0.0


@dataclass
class RayBackend:
    """Owns the connection to Ray and what runs there for this service (see the module docstring)."""

    address: str | None = None
    gang_timeout_s: float = 5.0
    #: pod key -> its work on Ray
    running: dict[str, Started] = field(default_factory=dict)
    #: job key -> its placement group and each bundle's (node, number of tasks it holds) (gangs),
    #: removed when the last task in it is gone
    groups: dict[str, tuple[Any, dict[int, tuple[str, int]]]] = field(default_factory=dict)
    #: Node name -> Ray node id (hex), from the last observe
    node_ids: dict[str, str] = field(default_factory=dict)
    #: the tasks this service cancelled whose end it has not read yet (a result dropped unread is
    #: logged by Ray as an unhandled error)
    stopped: list[Any] = field(default_factory=list)

    def connect(self) -> None:
        """Join the Ray cluster (a new local one when no address is given, see ray_connect.py)."""
        connect(self.address)

    def close(self) -> None:
        """Stop what this service started (tasks, actors, placement groups); leave the cluster."""
        import ray

        for pod in sorted(self.running):
            self._stop(pod)
        if self.stopped:  # their ends read, so Ray does not report them as errors nobody handled
            ray.wait(self.stopped, num_returns=len(self.stopped), timeout=5.0)
            self._drain()
        ray.shutdown()

    def _drain(self) -> None:
        """Read the results of the cancelled tasks that have ended (each a cancellation error)."""
        import ray

        if not self.stopped:
            return
        ready, self.stopped = ray.wait(self.stopped, num_returns=len(self.stopped), timeout=0)
        for ref in ready:
            # cancelled as asked, or it failed on its way out: either way it is over
            with contextlib.suppress(ray.exceptions.RayError):
                ray.get(ref, timeout=0)

    # -- what happened on the cluster ------------------------------------------------------------
    def observe(self, objects: dict[ObjectKey, dict[str, Any]], now_ms: int, commit: Commit) -> None:
        """Node joins and losses, and finished tasks, committed as object edits (thus cache events)."""
        import ray

        self._drain()
        want = alive_nodes(ray.nodes())
        self.node_ids = {n: o["metadata"]["annotations"][NODE_ID_KEY] for n, o in want.items()}
        have = {k[2] for k in objects if k[0] == "Node"}
        pods: dict[ObjectKey, dict[str, Any]] = {}
        for key, obj in objects.items():
            if key[0] != "Pod":
                continue
            pod = f"{key[1]}/{key[2]}"
            phase = (obj.get("status") or {}).get("phase")
            node = (obj.get("spec") or {}).get("nodeName")
            if pod in self.running and (phase != "Running" or node not in want):
                # deleted, completed by a client, or its node left: its Ray work stops
                self._stop(pod)
                if phase == "Running":
                    pods[key] = _pending(obj)
            elif phase == "Running" and pod not in self.running and node:
                pods[key] = _pending(obj)  # started by an earlier run of the service
        for pod, done in self._finished():
            ns, _, name = pod.partition("/")
            key = ("Pod", ns, name)
            if key in objects and key not in pods:
                out = copy.deepcopy(objects[key])
                out.setdefault("status", {})["phase"] = done
                pods[key] = out
        node_puts = {("Node", "", n): o for n, o in want.items()
                     if objects.get(("Node", "", n)) != o}
        commit({**node_puts, **pods}, [])
        gone: list[ObjectKey] = [("Node", "", n) for n in sorted(have - set(want))]
        if gone:
            commit({}, gone)

    def _finished(self) -> list[tuple[str, str]]:
        """(pod, Succeeded|Failed) for each task or actor that ended since the last look."""
        import ray

        out: list[tuple[str, str]] = []
        for pod, s in sorted(self.running.items()):
            if s.actor is not None and (phase := actor_end(s.actor)) is not None:
                self._forget(pod)
                out.append((pod, phase))
        refs = {s.ref: pod for pod, s in self.running.items() if s.ref is not None}
        if not refs:
            return sorted(out)
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0)
        for ref in ready:
            pod = refs[ref]
            try:
                ray.get(ref, timeout=0)
                phase = "Succeeded"
            except ray.exceptions.RayError as e:
                log.info("task of %s failed: %s", pod, str(e).splitlines()[0] if str(e) else type(e).__name__)
                phase = "Failed"
            self._forget(pod)
            out.append((pod, phase))
        return sorted(out)

    def _forget(self, pod: str) -> None:
        started = self.running.pop(pod, None)
        if started is None or started.job not in self.groups:
            return
        if not any(s.job == started.job for s in self.running.values()):
            from ray.util import remove_placement_group

            remove_placement_group(self.groups.pop(started.job)[0])

    def evict(self, pod: str) -> list[str]:
        """Stop the pod's work for an eviction; the other pods that had to stop with it. A member of a
        gang's placement group frees its share only inside the group, which Ray cannot shrink, so
        evicting it frees nothing a reclaimer could use: the whole group goes (see docs/semantics.md)."""
        started = self.running.get(pod)
        if started is None or started.bundle is None:
            self._stop(pod)
            return []
        members = sorted(p for p, s in self.running.items() if s.job == started.job and s.bundle is not None)
        for member in members:
            self._stop(member)  # the last one removes the group
        return [m for m in members if m != pod]

    def _stop(self, pod: str) -> None:
        """Cancel the pod's task or kill its actor."""
        import ray

        started = self.running.get(pod)
        if started is None:
            return
        try:
            # a task already finished has nothing to cancel; cancelling one anyway only widens the
            # window of Ray's race between a cancel and the task's reply (a driver abort in
            # task_manager.cc, "Tried to complete task that was not pending")
            if started.ref is not None:
                if not ray.wait([started.ref], timeout=0, fetch_local=False)[0]:
                    ray.cancel(started.ref, force=True)
                self.stopped.append(started.ref)
            if started.actor is not None:
                ray.kill(started.actor)
        except ray.exceptions.RayError as e:  # already gone: nothing left to stop
            log.info("stopping %s: %s", pod, e)
        self._forget(pod)

    # -- the session's decisions -----------------------------------------------------------------
    def decisions(self, objects: dict[ObjectKey, dict[str, Any]], now_ms: int) -> RayDecisions:
        """The Binder, Evictor and StatusUpdater of one session."""
        return RayDecisions(objects, now_ms, ray_backend=self)

    def start(self, binds: Sequence[tuple[str, str]], objects: dict[ObjectKey, dict[str, Any]]) -> dict[str, str]:
        """Start the bound pods' work on their nodes, a job's binds all or none; pod -> error."""
        import time

        import ray
        from ray.util.scheduling_strategies import (
            NodeAffinitySchedulingStrategy,
            PlacementGroupSchedulingStrategy,
        )

        errors: dict[str, str] = {}
        by_job: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
        for pod, node in binds:
            ns, _, name = pod.partition("/")
            obj = objects.get(("Pod", ns, name))
            node_id = self.node_ids.get(node)
            if obj is None or node_id is None:
                errors[pod] = f"pod {pod} or Ray node {node} no longer exists"
                continue
            group = ((obj.get("metadata") or {}).get("annotations") or {}).get(GROUP_KEY, name)
            by_job.setdefault(f"{ns}/{group}", []).append((pod, node, obj))
        for job, members in sorted(by_job.items()):
            t0 = time.time()
            try:
                work = [(pod, node, decode_payload((obj.get("metadata") or {}).get("annotations") or {}),
                         ray_options(_requests(obj))) for pod, node, obj in members]
            except (ApportionError, ValueError, TypeError) as e:
                errors.update({pod: f"cannot start: {e}" for pod, _, _ in members})
                continue
            ns, _, group = job.partition("/")
            spec = (objects.get(("PodGroup", ns, group)) or {}).get("spec") or {}
            placed = self._place(job, work, int(spec.get("minMember") or 1))
            if isinstance(placed, str):
                errors.update({pod: placed for pod, _, _, _ in work})
                continue
            for (pod, node, (kind, what), opts), bundle in zip(work, placed):
                if bundle is not None:
                    strategy: Any = PlacementGroupSchedulingStrategy(self.groups[job][0],
                                                                     placement_group_bundle_index=bundle)
                else:
                    strategy = NodeAffinitySchedulingStrategy(self.node_ids[node], soft=False)
                started = Started(node, job=job if bundle is not None else "", bundle=bundle, started=t0)
                if kind == "command":
                    started.ref = remote("command").options(scheduling_strategy=strategy, **opts).remote(what)
                elif isinstance(what[0], type):
                    started.actor = ray.remote(what[0]).options(scheduling_strategy=strategy, max_restarts=0,
                                                                **opts).remote(*what[1])
                else:
                    started.ref = remote("function").options(scheduling_strategy=strategy, **opts).remote(*what)
                self.running[pod] = started
        return errors

    def _place(self, job: str, work: list[tuple[str, str, Any, dict[str, Any]]],
               min_member: int) -> list[int | None] | str:
        """Each task's bundle in its job's placement group (None: pinned by node affinity alone), or
        why the gang could not be placed. A gang's first bind makes the group, one bundle per chosen
        node (Ray's `ray.io/node-id` label pins it); a member bound again (after an eviction) goes
        into its node's bundle, or runs pinned by node affinity when the group has none there."""
        from ray.util import placement_group, remove_placement_group

        if job in self.groups:
            # a member bound again on a node of the group goes back into that node's bundle if the
            # bundle has room (a member of it was evicted), else it runs pinned beside it
            _, slots = self.groups[job]
            free = {i: n - sum(1 for s in self.running.values() if s.job == job and s.bundle == i)
                    for i, (_, n) in slots.items()}
            out: list[int | None] = []
            for _, node, _, _ in work:
                i = next((i for i, (n, _) in sorted(slots.items()) if n == node and free[i] > 0), None)
                if i is not None:
                    free[i] -= 1
                out.append(i)
            return out
        if min_member < 2 or len(work) < min_member:
            return [None] * len(work)
        # the gang is its first minMember tasks: only they need to start together. The rest run pinned
        # by node affinity, outside the group, so that evicting them (reclaim takes tasks above
        # minMember first) frees their resources on the node, not inside a bundle only this job can use.
        core = work[:min_member]
        # one bundle per chosen node, holding what the gang's tasks there ask for
        nodes = sorted({node for _, node, _, _ in core})
        bundles: dict[str, dict[str, float]] = {n: {} for n in nodes}
        for _, node, _, opts in core:
            for k, v in _bundle(opts).items():
                bundles[node][k] = bundles[node].get(k, 0.0) + v
        pg = placement_group([bundles[n] for n in nodes], strategy="PACK",
                             bundle_label_selector=[{"ray.io/node-id": self.node_ids[n]} for n in nodes])
        if not pg.wait(self.gang_timeout_s):
            remove_placement_group(pg)
            return f"gang of {len(work)} could not be placed on its nodes in {self.gang_timeout_s:g} s"
        self.groups[job] = (pg, {i: (n, sum(1 for _, m, _, _ in core if m == n)) for i, n in enumerate(nodes)})
        return [nodes.index(node) for _, node, _, _ in core] + [None] * (len(work) - len(core))

def actor_end(actor: Any) -> str | None:
    """Succeeded when the actor ended itself (`ray.actor.exit_actor()`), Failed when it died any other
    way (killed by someone else, its process crashed, its constructor raised), None while it lives.

    An actor returns nothing a driver can wait on, so its end is read from the GCS's actor table.
    Ray's public state API (`ray.util.state`) answers through the dashboard, which a cluster may run
    without; `ray._private.state.actors` reads the GCS directly. The table says why an actor died only
    in words: a worker that ended itself is recorded with the exit type INTENDED_USER_EXIT.
    """
    from ray._private import state

    info = state.actors(actor._actor_id.hex())
    if not info or info.get("State") != "DEAD":
        return None
    cause = info.get("DeathCause")
    died = cause.actor_died_error_context if cause is not None and cause.HasField("actor_died_error_context") else None
    return "Succeeded" if died is not None and "INTENDED_USER_EXIT" in died.error_message else "Failed"


def _requests(pod: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in (pod.get("spec") or {}).get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            out[k] = v  # one container per submitted task
    return out


def _bundle(opts: dict[str, Any]) -> dict[str, float]:
    """A placement-group bundle holding what one task asks for (a bundle may not be empty)."""
    b: dict[str, float] = {"CPU": float(opts.get("num_cpus", 0.0))}
    if opts.get("num_gpus"):
        b["GPU"] = float(opts["num_gpus"])
    if opts.get("memory"):
        b["memory"] = float(opts["memory"])
    b.update(opts.get("resources") or {})
    if not any(b.values()):
        b["CPU"] = 0.001
    return b


def _pending(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out.get("spec", {}).pop("nodeName", None)
    status = out.setdefault("status", {})
    status["phase"] = "Pending"
    status.pop("startTime", None)
    out.get("metadata", {}).get("annotations", {}).pop(STARTED_KEY, None)
    return out


@dataclass
class RayDecisions(ObjectBackend):
    """One session's Binder and Evictor on Ray (StatusUpdater as the object backend: stored objects)."""

    ray_backend: RayBackend | None = None

    def bind(self, binds: Sequence[tuple[str, str]]) -> dict[str, str]:
        """Start each job's tasks on their nodes (all or none); the started pods are Running."""
        assert self.ray_backend is not None
        errors = self.ray_backend.start(binds, self.objects)
        errors.update(super().bind([b for b in binds if b[0] not in errors]))
        return errors

    def evict(self, pod: str, reason: str) -> str | None:
        """Cancel the pod's task (or kill its actor); the pod goes back to Pending, and so do the other
        members of its gang's placement group when it ran inside one (RayBackend.evict)."""
        assert self.ray_backend is not None
        others = self.ray_backend.evict(pod)
        error = super().evict(pod, reason)
        for other in others:
            super().evict(other, f"{reason} (its gang's placement group was removed with {pod})")
        return error

