"""Issue 14 items 17-20: 80-column tables that never cut a name, one `-o` vocabulary on every command,
`simulate -`, `apportion version`, `simulate --compare` with missing queues, the capacity warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from apportion.cli import main
from apportion.cli.render import compact
from scenario_text import TINY_SCENARIO

from k8s import node, pod, podgroup, queue, session

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "src" / "apportion" / "data" / "demo-snapshot.yaml"
CASE = ROOT.parent / "shared" / "examples-plan" / "seed-aligned-left" / "case.json"
LONG = "inference-for-the-search-ranking-team-eu-west"  # longer than any column
def _run(args: list[str], input: str | None = None) -> str:
    r = CliRunner().invoke(main, args, input=input, env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    return r.stdout


def _long_snapshot(tmp_path: Path) -> str:
    objs = [node("n1", cpu=8, memory="32Gi", scalars={"nvidia.com/gpu": "4"}),
            queue(LONG, deserved={"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2"}),
            podgroup("pg", LONG, phase="Inqueue"), pod("pg-0", "pg", cpu=2, memory="4Gi")]
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump_all(objs))
    return str(f)


def _fits(text: str) -> None:
    for line in text.splitlines():
        assert len(line.rstrip()) <= 80, line
    assert "…" not in text


# ---------------------------------------------------------------- item 17
def test_compact_resources() -> None:
    assert compact({"cpu": 8, "memory": 32 * 2**30, "nvidia.com/gpu": 4, "pods": 3}) == "8c/32Gi/4g"
    assert compact({"cpu": 0.5, "memory": 512 * 2**20, "example.com/foo": 2}) == "0.5c/512Mi/example.com/foo=2"
    assert compact({}) == "-" and compact({"pods": 1}) == "-"
    assert compact({"cpu": float("inf")}) == "∞c"


def test_cycle_table_fits_80_columns_and_never_cuts_a_name(tmp_path: Path) -> None:
    out = _run(["cycle", _long_snapshot(tmp_path)])
    _fits(out)
    rows = out.split("Queues")[1].split("resources:")[0].splitlines()[3:]
    assert "".join(r.split()[0] for r in rows if r.strip()) == LONG  # folded inside its cell, whole
    assert "8c/32Gi/4g" in out and "g = nvidia.com/gpu" in out
    for header in ("deserved", "allocated", "realCapability"):
        assert header in out
    demo = _run(["cycle", str(DEMO)])
    _fits(demo)
    for name in ("inference", "interactive", "training"):
        assert f" {name} " in demo or f"\n{name} " in demo


def test_cycle_wide_shows_every_queue_column(tmp_path: Path) -> None:
    out = _run(["cycle", str(DEMO), "-o", "wide"])
    for header in ("state", "request", "inqueue", "elastic", "capability", "guarantee"):
        assert header in out
    assert "guarantee" not in _run(["cycle", str(DEMO)]).split("Queues")[1].split("resources:")[0]


def test_quota_table_fits_80_columns() -> None:
    out = _run(["quota", str(DEMO)])
    _fits(out)
    assert "realCap" in out and "interactive" in out and "won by the" in out
    assert "inqueue" in _run(["quota", str(DEMO), "-o", "wide"])


@pytest.mark.skipif(not CASE.exists(), reason="shared examples not present")
def test_plan_replay_text_fits_80_columns_with_a_timeline_legend() -> None:
    out = _run(["plan", "replay", str(CASE)])
    _fits(out)
    assert "timelines:" in out and "|" in out
    assert "reservation_1700000000000_0004" in out  # wrapped, not cut


# ---------------------------------------------------------------- item 18
@pytest.mark.parametrize("cmd", [["cycle", str(DEMO)], ["quota", str(DEMO)], ["version"]])
def test_yaml_is_the_json_data(cmd: list[str]) -> None:
    assert yaml.safe_load(_run([*cmd, "-o", "yaml"])) == json.loads(_run([*cmd, "-o", "json"]))


@pytest.mark.skipif(not CASE.exists(), reason="shared examples not present")
def test_plan_replay_takes_the_shared_flags() -> None:
    as_json = _run(["plan", "replay", str(CASE), "-o", "json"])
    assert as_json == _run(["plan", "replay", str(CASE), "--output", "json"])
    assert yaml.safe_load(_run(["plan", "replay", str(CASE), "-o", "yaml"])) == json.loads(as_json)
    assert _run(["plan", "replay", str(CASE), "-o", "table"]) == _run(["plan", "replay", str(CASE), "--output", "text"])


def test_simulate_reads_stdin_as_cycle_does(tmp_path: Path) -> None:
    f = tmp_path / "sc.yaml"
    f.write_text(TINY_SCENARIO)
    from_file = json.loads(_run(["simulate", str(f), "-o", "json"]))
    from_stdin = json.loads(_run(["simulate", "-", "-o", "json"], input=TINY_SCENARIO))
    from_file.pop("scenario")
    from_stdin.pop("scenario")
    assert from_file == from_stdin
    assert yaml.safe_load(_run(["simulate", "-", "-o", "yaml"], input=TINY_SCENARIO))["jobs"]["total"] == 1


def test_version_command() -> None:
    from apportion import __version__

    assert _run(["version"]).startswith(f"apportion {__version__}")
    assert json.loads(_run(["version", "-o", "json"]))["apportion"] == __version__


# ---------------------------------------------------------------- item 19
def test_compare_with_a_scenario_lacking_the_queues_names_the_jobs(tmp_path: Path) -> None:
    a = tmp_path / "a.yaml"
    a.write_text(TINY_SCENARIO + "  generators:\n  - {name: g, queues: q, count: 2, interarrival: 1, duration: 5, "
                 "resources: {cpu: 1}}\n")
    b = tmp_path / "b.yaml"
    b.write_text(TINY_SCENARIO.replace("name: q}", "name: other}").replace("queue: q,", "queue: other,"))
    r = CliRunner().invoke(main, ["simulate", str(a), "--compare", str(b)])
    assert r.exit_code == 2, r.output
    assert "job j (queue q)" in r.stderr and "generator g (queue q)" in r.stderr and "--keep-going" in r.stderr
    r = CliRunner().invoke(main, ["simulate", str(a), "--compare", str(b), "--keep-going", "-o", "json"])
    assert r.exit_code == 0, r.output
    assert "warning: --compare" in r.stderr
    assert json.loads(r.stdout)["B"]["jobs"]["unfinished"] == 3


# ---------------------------------------------------------------- item 20
def _hier(parent_cpu: str, child_cpu: str):
    from apportion.framework.conf import build_conf

    objs = [node("n1", cpu=300), queue("root"), queue("p", parent="root", deserved={"cpu": parent_cpu}),
            queue("c1", parent="p", deserved={"cpu": child_cpu}), queue("c2", parent="p", deserved={"cpu": child_cpu})]
    return session(objs, build_conf("allocate", [[{"name": "capacity", "enableHierarchy": True}]]))


def test_capacity_warning_shows_the_digits_that_differ() -> None:
    w = "\n".join(_hier("205.8", "102.905").warnings)  # children: 205.81
    assert "deserved sum to more than its deserved on cpu 205.81 > 205.8" in w


def test_no_capacity_warning_below_volcanos_epsilon() -> None:
    # 0.05 millicores over: Volcano's LessEqual (epsilon 0.1 in its units) calls that equal
    w = "\n".join(_hier("205800m", "102900.025m").warnings)
    assert "sum to more than its deserved" not in w
