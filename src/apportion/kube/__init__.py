"""Readers of outside formats: kubectl YAML/JSON dumps of Kubernetes objects into the model (`cluster`).

Layering: this package reads files and builds `cluster` objects; it never imports the framework. The
scheduler configuration a ConfigMap carries comes back as raw text (`Snapshot.conf_text`) for the engine
to parse with `framework.conf`.

* `documents`: files or stdin into decoded objects with their locations;
* `fields`: typed field access that names the field in every error;
* `conf`: the scheduler conf as text, from a ConfigMap or a `--conf` file;
* `records`: what one object is parsed into, before it joins a snapshot;
* `objects`: PriorityClasses, the ConfigMap, Nodes, Queues, PodGroups, each into its record;
* `pods`: Pods into tasks;
* `build`: `parse_objects` (a whole dump), `assemble` (records into a Snapshot: pods join their jobs),
  `build_snapshot` (from decoded objects) and `load_snapshot` (from files);
* `watch`: watch streams (JSON values one after another, from a file or a pipe).
"""

from __future__ import annotations

from apportion.kube.build import KNOWN_KINDS, SCHEDULER_NAMES, build_snapshot, load_snapshot
from apportion.kube.conf import CONF_KEY, read_conf_file
from apportion.kube.documents import load_yaml, load_yaml_all, parse_documents, read_documents, read_text
from apportion.kube.pods import pod_request

__all__ = [
    "CONF_KEY",
    "KNOWN_KINDS",
    "SCHEDULER_NAMES",
    "build_snapshot",
    "load_snapshot",
    "load_yaml",
    "load_yaml_all",
    "parse_documents",
    "pod_request",
    "read_conf_file",
    "read_documents",
    "read_text",
]
