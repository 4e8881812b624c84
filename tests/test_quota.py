"""`apportion quota`: the capacity plugin's view at session open, as a library call and on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from apportion.cli import main
from apportion.framework.conf import parse_conf
from apportion.kube import load_snapshot
from apportion.quota import explain_quota

from k8s import node, pod, podgroup, queue, snapshot

#: shared/ sits beside the clone (as in CI), never inside it
EXAMPLES = Path(__file__).resolve().parents[2] / "shared" / "examples"
HIER = EXAMPLES / "capacity-hierarchy-allocate" / "snapshot.yaml"
FLAT = EXAMPLES / "capacity-realcapability" / "snapshot.yaml"
GI = 2**30

needs_examples = pytest.mark.skipif(not HIER.exists() or not FLAT.exists(), reason="shared examples not present")


@needs_examples
def test_hierarchy_example_numbers_match_the_readme() -> None:
    view = explain_quota(load_snapshot([str(HIER)]))
    assert view.mode == "hierarchical" and view.root_mode == "cluster" and view.capacity_in_conf
    q = {x.name: x for x in view.queues}
    assert [x.name for x in view.queues][:3] == ["root", "default", "team-a"]  # tree order
    assert q["team-a"].real_capability.cpu == 70_000  # type: ignore[union-attr]
    assert q["team-a"].real_capability.memory == 280 * GI  # type: ignore[union-attr]
    assert q["training"].real_capability.cpu == 50_000  # type: ignore[union-attr]
    assert q["training"].real_capability.memory == 200 * GI  # type: ignore[union-attr]
    # why: capability won for team-a's cpu; the guarantee term was (100 - 40) + 20 = 80
    why = q["team-a"].why["cpu"]
    assert why["won"] == "capability" and why["headroom"] == 80_000 and why["sumGuarantee"] == 40_000
    assert q["training"].why["cpu"]["headroom"] == 60_000  # (70 - 20) + 10
    assert q["root"].allocated.cpu == 75_000 and q["team-a"].share == pytest.approx(0.75)
    assert q["default"].inherited == ["cpu", "memory", "pods"]
    assert view.blocked is None


@needs_examples
def test_flat_example_numbers_match_the_readme() -> None:
    view = explain_quota(load_snapshot([str(FLAT)]))
    assert view.mode == "flat"
    q = {x.name: x for x in view.queues}
    assert {n: q[n].real_capability.cpu for n in "abc"} == {"a": 60_000, "b": 80_000, "c": 50_000}  # type: ignore[union-attr]
    assert {n: q[n].deserved.cpu for n in "abc"} == {"a": 40_000, "b": 30_000, "c": 30_000}
    assert q["a"].why["cpu"]["won"] == "capability" and q["b"].why["cpu"]["won"] == "headroom"
    assert not q["default"].tracked and q["default"].real_capability.cpu == 70_000  # type: ignore[union-attr]
    assert view.total_guarantee.cpu == 30_000


def test_no_capacity_in_conf_explains_anyway() -> None:
    objs = [node("n1", cpu=10), queue("a", deserved={"cpu": "4"}, guarantee={"cpu": "2"}, capability={"cpu": "6"}),
            podgroup("j", "a"), pod("j-0", "j", cpu=1)]
    cfg = parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: proportion\n')
    view = explain_quota(snapshot(*objs), cfg)
    assert not view.capacity_in_conf and view.mode == "flat"
    assert any("no capacity plugin" in n for n in view.notes)
    assert {x.name: x for x in view.queues}["a"].real_capability.cpu == 6_000  # type: ignore[union-attr]
    tree = explain_quota(snapshot(*objs), cfg, hierarchy=True)
    assert tree.mode == "hierarchical" and [x.name for x in tree.queues][0] == "root"


def test_warnings_and_blocked_are_reported() -> None:
    objs = [node("n1", cpu=10), queue("root"), queue("p", capability={"cpu": "4"}),
            queue("c", parent="p", capability={"cpu": "8"}), podgroup("j", "p"), pod("j-0", "j", cpu=1)]
    cfg = parse_conf('actions: "allocate"\ntiers:\n- plugins:\n  - name: capacity\n    enableHierarchy: true\n')
    view = explain_quota(snapshot(*objs), cfg)
    assert any("queue c: capability exceeds parent p's on cpu 8 > 4" in w for w in view.warnings)
    assert view.blocked is not None and "ns/j (queue p)" in view.blocked
    data = view.to_json()
    assert data["blocked"] == view.blocked and data["queues"]["c"]["realCapability"]["cpu"] == 4


@needs_examples
def test_cli_table_and_json(tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(main, ["quota", str(HIER)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "team-a" in out.output and "capability" in out.output and "guarantee term" in out.output
    assert "(root 100 − Σ guarantees 40)⁺ + guarantee 20 = 80" in out.output
    js = runner.invoke(main, ["quota", str(HIER), "-o", "json"])
    assert js.exit_code == 0
    data = json.loads(js.stdout)
    assert data["queues"]["training"]["realCapability"] == {"cpu": 50, "memory": 200 * GI, "pods": 1100}
    assert data["queues"]["team-a"]["realCapabilityWhy"]["dimensions"]["cpu"]["won"] == "capability"
    # --conf overrides the ConfigMap: flat view, root argument irrelevant
    c = tmp_path / "conf.yaml"
    c.write_text(yaml.safe_dump({"actions": "allocate", "tiers": [{"plugins": [{"name": "capacity"}]}]}))
    flat = runner.invoke(main, ["quota", str(HIER), "--conf", str(c), "-o", "json"])
    assert json.loads(flat.stdout)["mode"] == "flat"


def test_cli_bad_input_exits_2_with_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(main, ["quota", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2
    assert missing.stderr.startswith("apportion: error:") and "Traceback" not in missing.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Queue\nmetadata: [\n")
    res = runner.invoke(main, ["quota", str(bad)])
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1
