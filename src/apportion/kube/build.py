"""Building a Snapshot from decoded kubectl objects (`build_snapshot`, the reader API that takes parsed
objects) or from files (`load_snapshot`).

Every malformed object is reported with the file, the document index (and `items[i]` for a List) and the
field path; nothing here raises anything but InputError for bad input. The scheduler configuration a
ConfigMap carries stays raw text on the snapshot (`Snapshot.conf_text`): the engine parses it.
"""

from __future__ import annotations

from typing import Any

from apportion.cluster.snapshot import Snapshot
from apportion.errors import InputError
from apportion.kube.documents import read_documents
from apportion.kube.fields import Fields
from apportion.kube.objects import conf_text, nodes, podgroups, priority_classes, queues
from apportion.kube.pods import pods

SCHEDULER_NAMES = ("volcano",)
KNOWN_KINDS = ("Node", "Queue", "PodGroup", "Pod", "PriorityClass", "ConfigMap")


def load_snapshot(paths: list[str], *, scheduler_names: tuple[str, ...] = SCHEDULER_NAMES) -> Snapshot:
    """Load one or more kubectl YAML files (or `-`) into a Snapshot."""
    return build_snapshot(read_documents(paths), scheduler_names=scheduler_names)


def build_snapshot(objects: list[tuple[str, Any]], *, scheduler_names: tuple[str, ...] = SCHEDULER_NAMES) -> Snapshot:
    """A Snapshot from decoded objects, each with its location: `(where, mapping)` as `read_documents`
    gives them (or as a caller that decoded kubectl's JSON itself builds them)."""
    snap = Snapshot()
    by_kind: dict[str, list[Fields]] = {k: [] for k in KNOWN_KINDS}
    for where, data in objects:
        kind = data.get("kind")
        if not isinstance(kind, str):
            raise InputError("kind: required field is missing or not a string", where=where)
        if kind not in by_kind:
            snap.warnings.append(f"{where}: kind {kind} is not read by apportion; skipped")
            continue
        by_kind[kind].append(Fields(data, where))

    priority_classes(snap, by_kind["PriorityClass"])
    global_default = snap.priority_classes.get("\x00global", None)
    conf_text(snap, by_kind["ConfigMap"])
    node_names = nodes(snap, by_kind["Node"])
    queues(snap, by_kind["Queue"])
    podgroups(snap, by_kind["PodGroup"], global_default)
    pods(snap, by_kind["Pod"], node_names, scheduler_names)
    snap.priority_classes.pop("\x00global", None)
    return snap

