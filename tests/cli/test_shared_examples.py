"""The shared worked examples, through the real command, as `shared/tools/run_scenarios.py` runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
RUNNER = SHARED / "tools" / "run_scenarios.py"
EXAMPLES = sorted(p.name for p in (SHARED / "examples").glob("*") if (p / "expect.json").exists()) if SHARED.exists() else []


@pytest.mark.skipif(not RUNNER.exists(), reason="../shared/tools/run_scenarios.py is absent")
@pytest.mark.parametrize("name", EXAMPLES)
def test_shared_example_passes(name):
    exe = Path(sys.executable).parent / "apportion"
    env = dict(os.environ, APPORTION_CMD=f"{exe} cycle")
    proc = subprocess.run([sys.executable, str(RUNNER), "-k", name], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 0 failed" in proc.stdout
