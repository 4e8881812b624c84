"""Random job steps for capacity's ledger property tests (tree and flat): jobs arriving, starting and
leaving on three nodes, with cpu amounts exact and not, and scalar names listed in different orders."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from apportion.plugins.capacity.ledger import FIELDS, Ledger
from apportion.resources import Resource
from apportion.state.cache import SchedulerCache
from apportion.state.events import ADDED, DELETED, MODIFIED, WatchEvent

from k8s import node, pod, podgroup, queue

# names listed in different orders by different jobs: the order of a sum's names is the recount's
SCALAR_ORDERS = [[], ["nvidia.com/gpu"], ["example.com/fpga"], ["nvidia.com/gpu", "example.com/fpga"],
                 ["example.com/fpga", "nvidia.com/gpu"]]

#: a job that runs whole with exact amounts: the ledger keeps it
EXACT_RUNNING = {"queue": "a1", "tasks": 2, "cpu": "1", "scalars": ["nvidia.com/gpu"], "running": True,
                 "min_member": 2}

Jobs = dict[str, tuple[dict[str, Any], bool]]


def nodes() -> list[dict[str, Any]]:
    """Three nodes with both scalar resources."""
    return [node(f"n{i}", cpu=64, memory="256Gi", scalars={"nvidia.com/gpu": "8", "example.com/fpga": "4"})
            for i in range(3)]


def job_spec(queues: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """A job of one of `queues`: its tasks, cpu, scalar names, whether it runs, its minMember."""
    return st.fixed_dictionaries({
        "queue": st.sampled_from(queues),
        "tasks": st.integers(1, 3),
        # "1.0005" is 1000.5 millicores: not exact, so a session charging it recounts
        "cpu": st.sampled_from(["1", "500m", "2", "1.0005"]),
        "scalars": st.sampled_from(SCALAR_ORDERS),
        "running": st.booleans(),
        "min_member": st.integers(1, 3),
    })


def job_steps(queues: list[str]) -> list[st.SearchStrategy[tuple[str, Any]]]:
    """The steps `apply_job_step` takes: add a job, finish or start the n-th, open a session."""
    return [st.tuples(st.just("add"), job_spec(queues)), st.tuples(st.just("finish"), st.integers(0, 50)),
            st.tuples(st.just("start"), st.integers(0, 50)), st.tuples(st.just("session"), st.just(0))]


def job_objects(name: str, spec: dict[str, Any], running: bool) -> list[dict[str, Any]]:
    """The PodGroup and pods of a job (its pods bound round-robin when it runs)."""
    objs = [podgroup(name, queue=spec["queue"], min_member=min(spec["min_member"], spec["tasks"]),
                     phase="Running" if running else "Inqueue",
                     min_resources={"cpu": spec["cpu"]})]
    for i in range(spec["tasks"]):
        scalars = {n: "1" for n in spec["scalars"]}
        objs.append(pod(f"{name}-{i}", name, cpu=spec["cpu"], node_name=f"n{i % 3}" if running else "",
                        scalars=scalars))
    return objs


def apply_job_step(cache: SchedulerCache, jobs: Jobs, n: int, kind: str, arg: Any) -> None:
    """Feed step n to the cache as watch events (`session` and unknown kinds do nothing here)."""
    names = sorted(jobs)
    if kind == "add":
        name = f"j{n:03d}"
        jobs[name] = (arg, arg["running"])
        for o in job_objects(name, arg, arg["running"]):
            cache.apply(WatchEvent(ADDED, o))
    elif kind in ("finish", "start") and names:
        name = names[arg % len(names)]
        spec, running = jobs[name]
        if kind == "finish":
            for o in job_objects(name, spec, running):
                cache.apply(WatchEvent(DELETED, o))
            del jobs[name]
        elif not running:
            jobs[name] = (spec, True)
            for o in job_objects(name, spec, True):
                cache.apply(WatchEvent(MODIFIED, o))


#: the leaves of `tree_cluster`'s queue tree
TREE_LEAVES = ["a1", "a2", "b1"]


def tree_cluster() -> list[dict[str, Any]]:
    """`nodes()` and a two-level queue tree under root (a: a1, a2; b: b1), with deserved amounts."""
    return [*nodes(), queue("root"), queue("a", parent="root", deserved={"cpu": "100"}),
            queue("b", parent="root", deserved={"cpu": "50", "nvidia.com/gpu": "4"}),
            queue("a1", parent="a", deserved={"cpu": "60"}), queue("a2", parent="a", deserved={"cpu": "40"}),
            queue("b1", parent="b", deserved={"cpu": "50"})]


def shrink(cache: SchedulerCache, jobs: Jobs, arg: int) -> None:
    """The n-th job with more than one task loses its last one (a task that completed), the way a
    forecast's jobs move."""
    names = sorted(name for name, (spec, _) in jobs.items() if spec["tasks"] > 1)
    if not names:
        return
    name = names[arg % len(names)]
    spec, running = jobs[name]
    cache.apply(WatchEvent(DELETED, job_objects(name, spec, running)[-1]))
    jobs[name] = ({**spec, "tasks": spec["tasks"] - 1}, running)


def summary(r: Resource) -> tuple[float, float, list[tuple[str, float]]]:
    """A resource's amounts, its scalars in their order."""
    return r.cpu, r.memory, list(r.scalars.items())


def attributes(ledger: Ledger) -> dict[str, tuple[Any, ...]]:
    """Every queue's attributes the ledger keeps: the four fields (values and scalar order) and share."""
    return {name: (*(summary(getattr(a, f)) for f in FIELDS), a.share) for name, a in sorted(ledger.base.items())}
