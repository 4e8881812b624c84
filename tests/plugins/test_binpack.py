"""binpack: per-resource weights, overflow, Used semantics and the weight-0 rule (§6.7)."""

from __future__ import annotations

from typing import Any

import numpy as np

from apportion.cluster.model import TaskInfo
from apportion.framework import extension as ep
from apportion.framework.session import Session
from apportion.plugins.binpack import BinpackPlugin

import k8s


def _session(objs: list[dict], **args: Any) -> Session:
    binpack: dict[str, Any] = {"name": "binpack"}
    if args:
        binpack["arguments"] = args
    return k8s.session(objs, k8s.conf("enqueue, allocate", ["priority", "gang"], ["predicates", binpack]))


def _task(ssn: Session, name: str) -> TaskInfo:
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name)


def _scores(ssn: Session, pod: str = "p") -> list[float]:
    plugin = next(p for _, p in ssn.plugins if p.name == "binpack")
    assert isinstance(plugin, BinpackPlugin)
    return [round(s, 9) for s in plugin.node_order(_task(ssn, pod), np.arange(len(ssn.nodes)))]


def _objs(pod_cpu: int = 1, pod_mem: str = "2Gi", used_mem: str = "4Gi", **pod_extra: Any) -> list[dict]:
    """n1: 4 cpu / 8Gi with a running pod of 1 cpu / used_mem; a pending pod p."""
    return [
        k8s.node("n1", cpu=4, memory="8Gi", scalars=pod_extra.pop("node_scalars", {})),
        k8s.queue("default"),
        k8s.podgroup("old", phase="Running"),
        k8s.pod("run", "old", cpu=1, memory=used_mem, node_name="n1"),
        k8s.podgroup("pg"),
        k8s.pod("p", "pg", cpu=pod_cpu, memory=pod_mem, **pod_extra),
    ]


def test_default_weights() -> None:
    # cpu (1000 + 1000) / 4000 = 0.5; memory (4Gi + 2Gi) / 8Gi = 0.75; (0.5 + 0.75) / 2 x 100 = 62.5
    assert _scores(_session(_objs())) == [62.5]


def test_resource_weights_and_plugin_weight() -> None:
    ssn = _session(_objs(), **{"binpack.weight": 2, "binpack.cpu": 3, "binpack.memory": 1})
    # (0.5 x 3 + 0.75 x 1) / (3 + 1) x 100 x 2 = 112.5
    assert _scores(ssn) == [112.5]


def test_negative_resource_weight_becomes_one() -> None:
    ssn = _session(_objs(), **{"binpack.cpu": -4, "binpack.memory": 3})
    # (0.5 x 1 + 0.75 x 3) / 4 x 100 = 68.75
    assert _scores(ssn) == [68.75]


def test_zero_resource_weight_adds_nothing() -> None:
    ssn = _session(_objs(), **{"binpack.memory": 0})
    assert _scores(ssn) == [50.0]  # only cpu: 0.5 / 1 x 100


def test_overflow_on_any_dimension_zeroes_the_score() -> None:
    assert _scores(_session(_objs(pod_cpu=4))) == [0.0]  # cpu 1000 + 4000 > 4000
    assert _scores(_session(_objs(pod_mem="5Gi"))) == [0.0]  # memory 4Gi + 5Gi > 8Gi


def test_weight_zero_registers_nothing() -> None:
    ssn = _session(_objs(), **{"binpack.weight": 0})
    assert "binpack" not in ssn.fns[ep.NODE_ORDER]
    assert "binpack" in _session(_objs()).fns[ep.NODE_ORDER]


def test_extra_resources_listed_with_weights() -> None:
    objs = _objs(scalars={"nvidia.com/gpu": "1"}, node_scalars={"nvidia.com/gpu": "4"})
    plain = _session(objs)
    assert _scores(plain) == [62.5]  # an unlisted resource is ignored
    ssn = _session(objs, **{"binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": 2})
    # (0.5 + 0.75 + (0 + 1) / 4 x 2) / (1 + 1 + 2) x 100 = 43.75
    assert _scores(ssn) == [43.75]


def test_listed_resource_without_allocatable_keeps_its_weight() -> None:
    objs = [k8s.node("n1", cpu=4, memory="8Gi"), k8s.node("n2", cpu=4, memory="8Gi", scalars={"example.com/fpga": "2"}),
            k8s.queue("default"), k8s.podgroup("pg"),
            k8s.pod("p", "pg", cpu=2, memory="4Gi", scalars={"example.com/fpga": "1"})]
    ssn = _session(objs, **{"binpack.resources": " example.com/fpga ,", "binpack.resources.example.com/fpga": 2})
    # n1 has no fpga: 0 for it but its weight counts: (0.5 + 0.5 + 0) / 4 x 100 = 25
    # n2: (0.5 + 0.5 + 1/2 x 2) / 4 x 100 = 50
    assert _scores(ssn) == [25.0, 50.0]


def test_pods_dimension_only_if_listed() -> None:
    ssn = _session(_objs(), **{"binpack.resources": "pods"})
    # pods: (1 + 1 running) / 110 x 1 joins cpu 0.5 and memory 0.75 -> (0.5 + 0.75 + 2/110) / 3 x 100
    assert _scores(ssn) == [round((0.5 + 0.75 + 2 / 110) / 3 * 100, 9)]


def test_used_includes_releasing_and_excludes_pipelined() -> None:
    objs = _objs()
    objs[3] = k8s.pod("run", "old", cpu=1, memory="4Gi", node_name="n1", deleting=True)
    ssn = _session([*objs, k8s.podgroup("pg2"), k8s.pod("q", "pg2", cpu=2, memory="2Gi")])
    assert _scores(ssn) == [62.5]  # the releasing pod still counts in Used
    ssn.do_pipeline(_task(ssn, "q"), 0)
    assert _scores(ssn) == [62.5]  # a pipelined pod does not
    ssn.undo_allocate(_task(ssn, "q"))
    ssn.do_allocate(_task(ssn, "q"), 0)
    # now Used = 3 cpu / 6Gi: (1 + 3) / 4 = 1.0 and (2 + 6) / 8 = 1.0 -> 100
    assert _scores(ssn) == [100.0]


def test_binpack_packs_in_a_cycle() -> None:
    objs = [k8s.node("n1"), k8s.node("n2"), k8s.queue("default"),
            k8s.podgroup("old", phase="Running"), k8s.pod("run", "old", cpu=2, memory="2Gi", node_name="n2"),
            k8s.podgroup("pg", min_member=2), k8s.pod("p-0", "pg"), k8s.pod("p-1", "pg")]
    conf = k8s.conf("enqueue, allocate", ["priority", "gang"], ["predicates", "binpack"])
    assert k8s.cycle(objs, conf).binds == {"ns/p-0": "n2", "ns/p-1": "n2"}
    # With nodeorder's least-requested alone, the emptier node wins instead.
    conf = k8s.conf("enqueue, allocate", ["priority", "gang"], ["predicates", "nodeorder"])
    assert k8s.cycle(objs, conf).binds["ns/p-0"] == "n1"
