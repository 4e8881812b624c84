"""`kubectl get -o json` dumps (a List, or objects one after another) read like the YAML ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from apportion.cli import main

EXAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "examples"
DEMO = Path(__file__).resolve().parents[2] / "src" / "apportion" / "data" / "demo-snapshot.yaml"


def _objects(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _cycle(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["cycle", "-o", "json", *args])
    return r.exit_code, r.stdout, r.stderr


@pytest.mark.parametrize("shape", ["list", "concatenated", "lines"])
def test_json_dump_decides_like_yaml(tmp_path: Path, shape: str) -> None:
    objs = _objects(DEMO)
    f = tmp_path / "dump.json"
    if shape == "list":
        f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}, indent=4))
    elif shape == "concatenated":
        f.write_text("\n".join(json.dumps(o, indent=4) for o in objs))
    else:
        f.write_text("".join(json.dumps(o) + "\n" for o in objs))
    assert _cycle(str(f))[:2] == _cycle(str(DEMO))[:2]


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "bad.json"
    f.write_text('{"kind": "Node", "metadata": {"name": "n1"}}\n{"kind": "Pod",\n  "metadata": }\n')
    code, out, err = _cycle(str(f))
    assert code == 2 and out == ""
    assert err.strip() == f"apportion: error: {f}: malformed JSON at line 3, column 15: Expecting value"
