"""`_pod` (kube/pods.py) makes a pod's task with positional arguments (`POSITIONAL`); by keyword, the
reference, every pod gives the same record field by field (or the same error), for the pods
test_plain_pod draws, read plainly and through the fields."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_plain_pod import _outcome, pods

from apportion.kube import pods as kube_pods
from apportion.kube.fields import Fields
from apportion.kube.pods import parse_pod, parse_pod_reference


@settings(max_examples=200, deadline=None)
@given(pod=pods(), nodes=st.none() | st.just({"n1", "n2"}), annotated=st.booleans())
def test_positional_tasks_are_the_keyword_ones(pod: dict[str, Any], nodes: set[str] | None, annotated: bool) -> None:
    meta = pod.get("metadata")
    if annotated and type(meta) is dict:
        # the fields `_pod` reads from annotations and labels, set (the strategy draws them rarely)
        meta["annotations"] = {"volcano.sh/task-priority": "7", "volcano.sh/preemptable": "false",
                               "volcano.sh/task-spec": "worker", "scheduling.k8s.io/group-name": "g"}
    outcomes = []
    for positional in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(kube_pods, "POSITIONAL", positional)
            outcomes.append((_outcome(lambda: parse_pod(Fields(pod, "d.json"), nodes)),
                             _outcome(lambda: parse_pod_reference(Fields(pod, "d.json"), nodes))))
    assert outcomes[0] == outcomes[1]
