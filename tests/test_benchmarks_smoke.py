"""Tiny versions of every benchmark shape, so `make bench` cannot rot while it is out of `make test`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

def test_cycle_smoke_places_every_pod() -> None:
    from benchmarks import bench_cycle

    (r,) = bench_cycle.run(smoke=True).values()
    shape = bench_cycle.SMOKE["cycle-smoke"]
    assert r["placed"] == shape["gangs"] * shape["pods_per_gang"]


def test_runner_prints_a_table_per_shape() -> None:
    proc = subprocess.run([sys.executable, "benchmarks/run.py", "--smoke"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:2] == ["benchmark", "median"]
    assert not any("error" in line for line in lines), proc.stdout
    # one row per smoke shape of every module
    rows = [line.split()[0] for line in lines[1:] if line.strip()]
    assert len(rows) >= 3
    assert "cycle-smoke" in rows
    assert any(r.startswith("reservation/") for r in rows)
    assert "simulation-smoke" in rows
    # the smoke run must not overwrite the real results file
    results = ROOT / "benchmarks" / "results.json"
    if results.exists():
        assert json.loads(results.read_text()).get("smoke") is False


@pytest.mark.parametrize("bench", ["bench_simulation", "bench_forecast", "bench_cycle", "bench_state",
                                   "bench_submit"])
def test_a_benchmark_answers_help_and_refuses_an_unknown_flag_without_running(bench: str) -> None:
    """`--help` prints the flags (it once ran the whole benchmark), an unknown flag exits 2 naming it."""
    root = ROOT
    shown = subprocess.run([sys.executable, "-m", f"benchmarks.{bench}", "--help"], cwd=root,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout.startswith("usage:") and "--smoke" in shown.stdout
    refused = subprocess.run([sys.executable, "-m", f"benchmarks.{bench}", "--no-such-flag"], cwd=root,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "--no-such-flag" in refused.stderr
