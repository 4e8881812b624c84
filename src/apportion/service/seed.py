"""The cluster a played scenario seeds a new database with (`apportion serve --scenario` without
`--cluster`): the scenario's nodes, queues (reservable ones with their plan) and scheduler conf.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from apportion.kube.documents import load_yaml
from apportion.service.reservations import PLAN_KEY, RESERVABLE_KEY
from apportion.simulation.scenario import default_scenario_path, load_scenario

BUILT_IN = "default"


def scenario_file(path: str) -> str:
    """The scenario file to play: `default` (when no such file exists) is the built-in scenario."""
    return str(default_scenario_path()) if path == BUILT_IN and not Path(path).exists() else path


def scenario_cluster(path: str) -> list[tuple[str, Any]]:
    """The objects a new database is seeded with when a scenario is played without `--cluster`.

    The scenario's nodes, queues and priority classes as it read them; a queue with a `plans` entry is
    marked reservable and carries that entry as its `apportion.io/plan` annotation; the scenario's
    scheduler configuration becomes Volcano's ConfigMap."""
    path = scenario_file(path)
    sc = load_scenario(path)
    raw = load_yaml(Path(path).read_text(encoding="utf-8"), path)
    plans = raw.get("plans") or {} if isinstance(raw, dict) else {}
    out: list[tuple[str, Any]] = []
    for where, obj in sc.objects:
        obj = copy.deepcopy(obj)
        if obj.get("kind") == "Queue" and obj["metadata"]["name"] in plans:
            ann = obj["metadata"].setdefault("annotations", {})
            ann[RESERVABLE_KEY] = "true"
            ann.setdefault(PLAN_KEY, json.dumps(plans[obj["metadata"]["name"]]))
        out.append((where, obj))
    if sc.conf_text:
        out.append((f"{path}: scheduler", {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
            "data": {"volcano-scheduler.conf": sc.conf_text}}))
    return out
