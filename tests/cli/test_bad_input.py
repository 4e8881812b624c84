"""Bad input never crashes: exit 2 with a message naming file, document and field (fuzzed too)."""

from __future__ import annotations

import copy
import json
import random

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apportion.cli import main

from k8s import node, pod, podgroup, priority_class, queue


def _run(tmp_path, text: str, *extra: str):
    f = tmp_path / "snap.yaml"
    f.write_text(text)
    res = CliRunner().invoke(main, ["cycle", str(f), "-o", "json", *extra])
    return res, str(f)


def _valid_objs():
    return [priority_class("high", 10), node("n1", cpu=4), node("n2", cpu=4), queue("q", capability={"cpu": "6"}),
            podgroup("pg", "q", min_member=2, min_resources={"cpu": "2"}, phase="Pending"),
            pod("pg-0", "pg", cpu=1), pod("pg-1", "pg", cpu=1), pod("run-0", None, cpu=1, node_name="n1")]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("kind: Node\nmetadata: {name: n1\n", "malformed YAML"),
        ("- just\n- a list\n", "document 0: expected a Kubernetes object"),
        ("kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: lots}}\n", "status.allocatable.cpu"),
        ("kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '-2'}}\n", "negative"),
        ("kind: Node\nmetadata: {name: n1}\n---\nkind: Node\nmetadata: {name: n1}\n", "duplicate Node 'n1'"),
        ("kind: Pod\nmetadata: {name: p}\nspec: {nodeName: ghost, containers: []}\nstatus: {phase: Running}\n",
         "spec.nodeName"),
        ("kind: Queue\nmetadata: {name: q}\nspec: {weight: heavy}\n", "spec.weight"),
        ("kind: PodGroup\nmetadata: {name: g}\nspec: {minMember: -1}\n", "spec.minMember"),
        ("kind: PodGroup\nmetadata: {name: g}\nstatus: {phase: Sleeping}\n", "status.phase"),
        ("kind: List\nitems:\n- kind: Node\n  metadata: {name: n}\n  status: {allocatable: {memory: NaN}}\n",
         "items[0]: status.allocatable.memory"),
        ("kind: ConfigMap\nmetadata: {name: c}\ndata: {volcano-scheduler.conf: 'actions: \"fly\"'}\n", "fly"),
        ("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{resources: {requests: {cpu: Inf}}}]}\n",
         "spec.containers[0].resources.requests.cpu"),
        ("kind: 7\n", "kind"),
    ],
)
def test_bad_input_exit_2_names_the_field(tmp_path, text, needle):
    res, path = _run(tmp_path, text)
    assert res.exit_code == 2, res.output
    assert needle in res.output and path in res.output
    assert "Traceback" not in res.output


def test_missing_file_and_bad_conf_file(tmp_path):
    res = CliRunner().invoke(main, ["cycle", str(tmp_path / "nope.yaml")])
    assert res.exit_code == 2 and "cannot read" in res.output
    conf = tmp_path / "c.conf"
    conf.write_text("actions: [")
    res, _ = _run(tmp_path, yaml.safe_dump_all(_valid_objs()), "--conf", str(conf))
    assert res.exit_code == 2 and "c.conf" in res.output


def test_valid_snapshot_runs(tmp_path):
    res, _ = _run(tmp_path, yaml.safe_dump_all(_valid_objs()))
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(out) == {"binds", "pipelined", "evictions", "podgroups", "queues", "events"}


_JUNK = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                  st.text(max_size=8), st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3),
                                                                                            st.integers(), max_size=2))


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**9), junk=st.lists(_JUNK, min_size=1, max_size=3), drop=st.booleans())
def test_random_corruptions_never_crash(tmp_path, seed, junk, drop):
    rnd = random.Random(seed)
    objs = copy.deepcopy(_valid_objs())
    for j in junk:
        obj = rnd.choice(objs)
        paths = [p for p in _paths(obj) if p]
        path = rnd.choice(paths)
        parent = obj
        for k in path[:-1]:
            parent = parent[k]
        if drop and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = j
    text = yaml.safe_dump_all(objs)
    res, _ = _run(tmp_path, text)
    assert res.exit_code in (0, 2), res.output
    assert "Traceback" not in res.output and "internal error" not in res.output
    if res.exit_code == 2:
        assert "snap.yaml" in res.output
