"""Run as the `apportion` program, `cycle`, `forecast` and `diff` end their process without the
interpreter's teardown (`app.QUICK_EXIT`): the same stdout, stderr and exit status as through the
teardown, for answers, bad input, help, logging and a reader of stdout that goes away."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from k8s import node, pod, podgroup, queue

_T0 = "2026-01-01T00:00:00Z"


def _dump(tmp_path: Path) -> str:
    objs = [node("n1", cpu=4), node("n2", cpu=4), queue("q")]
    for i in range(30):
        objs += [podgroup(f"g{i}", queue="q", phase="Pending", created=_T0), pod(f"g{i}-0", f"g{i}", cpu=1)]
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    return str(path)


def _run(argv: list[str], quick: bool, pipe_to: str = "") -> tuple[int, str, str]:
    """The program's status, stdout and stderr (through `| pipe_to`, the status is still the program's)."""
    code = ("import sys\nimport apportion.cli.app as app\n"
            f"app.QUICK_EXIT = {quick}\nsys.argv = ['apportion', *{argv!r}]\nsys.exit(app.main())\n")
    if not pipe_to:
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        return res.returncode, res.stdout, res.stderr
    res = subprocess.run(["bash", "-c", f'"$0" -c "$1" | {pipe_to}; exit ${{PIPESTATUS[0]}}', sys.executable, code],
                         capture_output=True, text=True)
    return res.returncode, res.stdout, res.stderr


@pytest.mark.parametrize("argv", [
    ["forecast", "{dump}", "--no-fits", "-o", "json"],
    ["forecast", "{dump}", "ns/g3", "-o", "yaml"],
    ["forecast", "{dump}", "--now", "yesterday"],
    ["forecast", "{dir}/none.json"],
    ["forecast", "--help"],
    ["-v", "-v", "cycle", "{dump}", "-o", "json"],
    ["cycle", "{dump}"],
    ["cycle", "{dump}", "--no-such-option"],
    ["diff", "{dump}"],
    ["version"],
])
def test_the_quick_end_is_the_teardown(tmp_path: Path, argv: list[str]) -> None:
    args = [a.format(dump=_dump(tmp_path), dir=tmp_path) for a in argv]
    quick = _run(args, True)
    assert quick == _run(args, False)
    assert quick[0] in (0, 2) and (quick[1] or quick[2])


def test_a_reader_that_goes_away(tmp_path: Path) -> None:
    args = ["cycle", _dump(tmp_path), "-o", "json"]
    quick = _run(args, True, "head -c 10")
    assert quick == _run(args, False, "head -c 10")
    assert len(quick[1]) == 10


@pytest.mark.parametrize(("quick", "argv", "torn_down"), [
    (True, ["forecast", "{dump}", "--no-fits"], False), (False, ["forecast", "{dump}", "--no-fits"], True),
    (True, ["version"], True), (True, ["forecast", "{dump}", "--no-fits", "-h"], False),
])
def test_only_the_quick_commands_skip_the_teardown(tmp_path: Path, quick: bool, argv: list[str], torn_down: bool) -> None:
    args = [a.format(dump=_dump(tmp_path)) for a in argv]
    code = ("import sys\nimport apportion.cli.app as app\n"
            "class Last:\n    def __del__(self):\n        sys.stderr.write('torn down')\n"
            f"app.last = Last()\napp.QUICK_EXIT = {quick}\nsys.argv = ['apportion', *{args!r}]\nsys.exit(app.main())\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout
    assert res.stderr.endswith("torn down") == torn_down
