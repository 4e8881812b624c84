"""Issue 14 items 9-16: bad input of every size exits 2 with one line naming the file and field, in
bounded time; the two ways of giving a conf (a ConfigMap in the snapshot, `--conf`) read alike."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from apportion.cli import main
from apportion.errors import InputError
from apportion.framework.conf import parse_conf
from apportion.quantity import parse_quantity
from scenario_text import TINY_SCENARIO

NODE = "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"4\", memory: 8Gi}}\n"
def _write(tmp_path: Path, name: str, text: str | bytes) -> str:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return str(p)


def _exit_2(args: list[str], *needles: str) -> str:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, r.output
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("apportion: error: "), r.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    assert len(lines[0]) < 300, lines[0]
    return lines[0]


# ---------------------------------------------------------------- item 9: over-long numbers
def test_item9_long_integer_in_a_snapshot_names_the_line(tmp_path: Path) -> None:
    f = _write(tmp_path, "s.yaml", "kind: Queue\nmetadata: {name: q}\nspec: {weight: " + "9" * 5000 + "}\n")
    _exit_2(["cycle", f], "s.yaml", "line 3", "5000 digits")


def test_item9_long_integer_in_a_conf_a_scenario_and_a_replay_case(tmp_path: Path) -> None:
    snap = _write(tmp_path, "s.yaml", NODE)
    conf = _write(tmp_path, "c.conf", "actions: allocate\nconfigurations: [{name: x, arguments: {a: " + "9" * 5000 + "}}]\n")
    _exit_2(["cycle", snap, "--conf", conf], "c.conf", "digits")
    scen = _write(tmp_path, "sc.yaml", TINY_SCENARIO.replace("arrival: 0,", "arrival: " + "9" * 5000 + ","))
    _exit_2(["simulate", scen], "sc.yaml", "digits")
    case = _write(tmp_path, "case.json", '{"plan": {}, "steps": [{"op": "advanceTime", "to": ' + "9" * 5000 + "}]}")
    _exit_2(["plan", "replay", case, "-o", "json"], "case.json", "digits")


def test_item9_million_digit_quantity_is_out_of_range_not_an_overflow(tmp_path: Path) -> None:
    f = _write(tmp_path, "s.yaml", "kind: Node\nmetadata: {name: n}\nstatus: {allocatable: {memory: \""
               + "9" * 1_000_000 + "Gi\"}}\n")
    _exit_2(["cycle", f], "s.yaml", "status.allocatable.memory", "out of range")


def test_item9_integer_fields_are_int32(tmp_path: Path) -> None:
    f = _write(tmp_path, "s.yaml", NODE + "---\nkind: Queue\nmetadata: {name: q}\nspec: {weight: " + "9" * 60 + "}\n")
    _exit_2(["cycle", f], "spec.weight", "int32")
    f = _write(tmp_path, "u.yaml", "kind: Queue\nmetadata: {name: q}\nspec: {weight: \"²\"}\n")
    _exit_2(["cycle", f], "spec.weight", "expected an integer")


# ---------------------------------------------------------------- item 10: nesting and echoes
def test_item10_deep_nesting_names_the_path(tmp_path: Path) -> None:
    f = _write(tmp_path, "s.yaml", "kind: Queue\nmetadata: {name: q}\nspec: {weight: " + "[" * 900 + "]" * 900 + "}\n")
    _exit_2(["cycle", f], "s.yaml: document 0: spec.weight[0]", "nested more than 100 levels")
    conf = _write(tmp_path, "c.conf", "actions: " + "[" * 600 + "]" * 600 + "\n")
    _exit_2(["cycle", _write(tmp_path, "n.yaml", NODE), "--conf", conf], "c.conf", "nested")
    case = _write(tmp_path, "case.json", '{"plan": {}, "steps": [' + "[" * 5000 + "]" * 5000 + "]}")
    _exit_2(["plan", "replay", case], "case.json", "nested")


def test_item10_echoed_values_are_cut(tmp_path: Path) -> None:
    f = _write(tmp_path, "s.yaml", "kind: PodGroup\nmetadata: {name: g}\nstatus: {phase: \"" + "x" * 100_000 + "\"}\n")
    line = _exit_2(["cycle", f], "status.phase", "...")
    assert "x" * 50 not in line


# ---------------------------------------------------------------- item 11: --conf reads as the snapshot does
@pytest.mark.parametrize("data", ["true", "hello", "[1, 2]", "{volcano-scheduler.conf: 5}"])
def test_item11_configmap_errors_are_the_same_in_a_snapshot_and_in_conf(tmp_path: Path, data: str) -> None:
    cm = f"kind: ConfigMap\nmetadata: {{name: c}}\ndata: {data}\n"
    via_snapshot = _exit_2(["cycle", _write(tmp_path, "cm.yaml", cm)])
    via_conf = _exit_2(["cycle", _write(tmp_path, "n.yaml", NODE), "--conf", str(tmp_path / "cm.yaml")])
    # the same message, but for the document index only a dump has
    assert via_snapshot.replace("cm.yaml: document 0:", "cm.yaml:") == via_conf


def test_item11_conf_that_is_not_utf8(tmp_path: Path) -> None:
    conf = _write(tmp_path, "c.conf", b"actions: \xff\xfe allocate\n")
    _exit_2(["cycle", _write(tmp_path, "n.yaml", NODE), "--conf", conf], "c.conf", "not UTF-8")


# ---------------------------------------------------------------- item 12: counts
@pytest.mark.parametrize(("change", "field"), [
    (("count: 2", "count: 3.0e+300"), "cluster.generate[0].count"),
    (("arrival: 0,", "arrival: 0, tasks: 1.0e+200,"), "workload.jobs[0].tasks"),
])
def test_item12_counts_are_bounded_before_anything_is_built(tmp_path: Path, change: tuple[str, str],
                                                            field: str) -> None:
    f = _write(tmp_path, "sc.yaml", TINY_SCENARIO.replace(*change))
    t0 = time.perf_counter()
    _exit_2(["simulate", f], f"sc.yaml: {field}", "maximum")
    assert time.perf_counter() - t0 < 10


def test_item12_a_generators_drawn_tasks_and_total_are_bounded(tmp_path: Path) -> None:
    gen = "  generators:\n  - {name: g, queues: q, count: %s, interarrival: 1, duration: 5, tasks: %s, resources: {cpu: 1}}\n"
    _exit_2(["simulate", _write(tmp_path, "a.yaml", TINY_SCENARIO + gen % (3, "3.0e+300"))],
            "workload.generators[0].tasks", "at most 100,000")
    t0 = time.perf_counter()
    _exit_2(["simulate", _write(tmp_path, "b.yaml", TINY_SCENARIO + gen % (200_000, 100_000))],
            "workload.generators[0].count", "at most 10,000,000")
    assert time.perf_counter() - t0 < 10


# ---------------------------------------------------------------- item 13: a closed pipe
def test_item13_closed_stdout_ends_quietly(tmp_path: Path) -> None:
    snap = Path(__file__).resolve().parents[2] / "src" / "apportion" / "data" / "demo-snapshot.yaml"
    exe = Path(sys.executable).parent / "apportion"
    for cmd in (["cycle", str(snap)], ["cycle", str(snap), "-o", "json"], ["quota", str(snap)]):
        p = subprocess.Popen([str(exe), *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert p.stdout is not None and p.stderr is not None
        p.stdout.close()  # the reader is gone before the first line is written
        err = p.stderr.read()
        assert p.wait(timeout=60) == 141, err
        assert err == b""


# ---------------------------------------------------------------- item 14: the scheduler text of a scenario
def test_item14_malformed_scheduler_text_is_one_line_naming_file_field_and_line(tmp_path: Path) -> None:
    f = _write(tmp_path, "sc.yaml", TINY_SCENARIO + "scheduler: |\n  actions: \"allocate\"\n  tiers: [ {plugins: [\n")
    line = _exit_2(["simulate", f], "sc.yaml: scheduler: malformed YAML at line 3")
    assert "unicode string" not in line


# ---------------------------------------------------------------- item 15: large confs load in linear time
def test_item15_a_large_string_in_a_conf_loads_fast() -> None:
    text = "actions: allocate\nconfigurations: [{name: x, arguments: {a: '" + "a" * 4_000_000 + "'}}]\n"
    t0 = time.perf_counter()
    conf = parse_conf(text)
    assert time.perf_counter() - t0 < 3  # the pure-Python loader took about 4 s per parse here
    assert len(conf.configurations["x"]["a"]) == 4_000_000


# ---------------------------------------------------------------- item 16: one range rule
@pytest.mark.parametrize("value", ["1e400", "9" * 400, "1e" + "9" * 100, "9" * 70 + "Ki", 1e300, 10**70, "1e-61"])
def test_item16_every_spelling_of_an_out_of_range_quantity_is_refused_alike(value: object) -> None:
    with pytest.raises(InputError, match="quantity out of range"):
        parse_quantity(value)


@pytest.mark.parametrize(("value", "want"), [("1e60", 1e60), ("9" * 60, float("9" * 60)), ("1e-60", 1e-60),
                                             ("500m", 0.5), ("4Gi", 4 * 2**30), (0, 0.0)])
def test_item16_in_range_quantities_still_parse(value: object, want: float) -> None:
    assert parse_quantity(value) == want


def test_item16_the_cli_reports_both_spellings_the_same_way(tmp_path: Path) -> None:
    msgs = []
    for v in ("1e400", "9" * 400):
        f = _write(tmp_path, "s.yaml", f"kind: Node\nmetadata: {{name: n}}\nstatus: {{allocatable: {{cpu: \"{v}\"}}}}\n")
        msgs.append(_exit_2(["cycle", f], "status.allocatable.cpu", "quantity out of range"))
    assert json.dumps(msgs[0]).split("'")[2] == json.dumps(msgs[1]).split("'")[2]  # same text after the value
