"""The full placement of a session's node side, the reference an incremental open is compared with
(the self-check under APPORTION_CHECK_STATE=1, and the tests): framework/open_state.py keeps the node
side between sessions; this rebuilds it from every job and node."""

from __future__ import annotations

import numpy as np

from apportion.cluster.node_table import NodeTable
from apportion.framework.open_parts import (
    KIND_OF,
    OpenBase,
    Session,
    nodes_scalar_names,
    scalar_names,
    table_for,
)
from apportion.resources import Resource
from apportion.state import check


def full_reference(ssn: Session) -> tuple[NodeTable, list[list[str]], Resource]:
    """What a full placement gives for this session's jobs and nodes (the reference of the self-check
    and the tests): the table, each node's task keys in order, the total; tasks are not written to."""
    jobs = ssn.jobs
    extra: set[str] = set()
    for j in jobs.values():
        extra.update(scalar_names(j))
    extra.update(n for t in ssn.snapshot.orphan_tasks for n in t.resreq.scalars)
    table = table_for(ssn, nodes_scalar_names(ssn.nodes), extra)
    keys: list[list[str]] = [[] for _ in ssn.nodes]
    seen: list[dict[str, None]] = [{} for _ in ssn.nodes]
    for t in [t for j in jobs.values() for t in j.tasks.values()] + list(ssn.snapshot.orphan_tasks):
        kind = KIND_OF[t.status]
        if kind is None or not t.node_name:
            continue
        node = ssn.node_by_name.get(t.node_name)
        if node is None:
            continue
        seen[node.index][t.key] = None
        table.add(node.index, table.vector(t.resreq), kind)
    for i, s in enumerate(seen):
        keys[i] = list(s)
    total = Resource()
    for n in ssn.nodes:
        total.add(n.allocatable)
    return table, keys, total


#: the table's arrays the self-check compares
TABLE_ARRAYS = ("allocatable", "idle", "used", "releasing", "pipelined", "future", "pod_count", "max_pods")


def differences(ssn: Session) -> list[str]:
    """Where the session's node side (as opened) differs from a full placement's: empty when equal."""
    ref, keys, total = full_reference(ssn)
    out: list[str] = []
    if list(ref.columns) != list(ssn.table.columns):
        return [f"columns {ssn.table.columns} != {ref.columns}"]
    for name in TABLE_ARRAYS:
        if not np.array_equal(getattr(ref, name), getattr(ssn.table, name)):
            out.append(f"table.{name}")
    for node, want in zip(ssn.nodes, keys):
        if list(node.tasks) != want:
            out.append(f"node {node.name}: tasks {list(node.tasks)} != {want}")
            break
    if (total.cpu, total.memory, list(total.scalars.items())) != (
            ssn.total_resource.cpu, ssn.total_resource.memory, list(ssn.total_resource.scalars.items())):
        out.append("total_resource")
    return out


def check_against_full(ssn: Session, base: OpenBase) -> None:
    """The self-check: raise StateCheckError unless the incremental open equals a full placement."""
    diff = differences(ssn)
    for job in ssn.jobs.values():
        for t in job.tasks.values():
            if t.initial_status is not t.status:
                diff.append(f"task {t.key}: initial_status {t.initial_status} at open, status {t.status}")
                break
    if diff:
        raise check.StateCheckError(f"{check.ENV}: an incremental session open differs from a full "
                                    f"placement: {'; '.join(diff[:5])}")


__all__: list[str] = ["TABLE_ARRAYS", "check_against_full", "differences", "full_reference"]
