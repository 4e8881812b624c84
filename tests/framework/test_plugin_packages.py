"""Plugins and actions from outside apportion: `register_plugin` / `register_action`, and a plugin package
installed with pip and found through the `apportion.plugins` entry-point group (docs/plugins.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import yaml

from apportion.engine import run_cycle
from apportion.errors import ConfError
from apportion.framework import extension as ep
from apportion.framework import interface
from apportion.framework.conf import build_conf, parse_conf
from apportion.framework.interface import FunctionAction, Plugin, register_action, register_plugin

from k8s import node, pod, podgroup, snapshot

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
DOC = ROOT / "docs" / "plugins.md"


def _objs() -> list[dict]:
    """One node with room for one pod, and two equal one-pod jobs created a minute apart."""
    return [
        node("n1", cpu=1),
        podgroup("old", created="2026-01-01T00:00:00Z"),
        podgroup("new", created="2026-01-01T00:01:00Z"),
        pod("old-0", "old", cpu=1),
        pod("new-0", "new", cpu=1),
    ]


def _doc_block(lang: str) -> str:
    """The first fenced block of the language in docs/plugins.md."""
    m = re.search(rf"```{lang}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert m, f"docs/plugins.md has no {lang} block"
    return m.group(1)


@pytest.fixture
def registries(monkeypatch):
    """The plugin and action tables, restored after the test."""
    monkeypatch.setattr(interface._plugins, "entries", dict(interface._plugins.entries))
    monkeypatch.setattr(interface._actions, "entries", dict(interface._actions.entries))


class NewestFirst(Plugin):
    name = "newest-first"

    def on_session_open(self, ssn):
        ssn.add_fn(ep.JOB_ORDER, self.name, self.job_order)

    def job_order(self, l, r):
        return (l.creation < r.creation) - (l.creation > r.creation)


def test_a_registered_plugin_is_used_by_name(registries):
    conf = build_conf("enqueue, allocate", [["newest-first", "priority", "gang"], ["predicates", "proportion"]])
    assert run_cycle(snapshot(*_objs()), conf).binds == {"ns/old-0": "n1"}
    register_plugin("newest-first", NewestFirst)
    result = run_cycle(snapshot(*_objs()), conf)
    assert result.binds == {"ns/new-0": "n1"}
    assert not any("newest-first" in w for w in result.warnings)


def test_an_unregistered_plugin_is_skipped_with_a_warning():
    conf = build_conf("enqueue, allocate", [["no-such-plugin", "priority", "gang"], ["predicates", "proportion"]])
    result = run_cycle(snapshot(*_objs()), conf)
    assert result.binds == {"ns/old-0": "n1"}
    assert "plugin 'no-such-plugin' is not registered; skipped" in result.warnings


def test_a_lazy_registration_imports_on_first_use(registries):
    register_plugin("lazy-gang", "apportion.plugins.gang:GangPlugin")
    assert interface.plugin_builder("lazy-gang").__name__ == "GangPlugin"
    register_plugin("lazy-missing", "apportion_no_such_module:Plugin")
    assert interface.plugin_builder("lazy-missing") is None
    register_plugin("lazy-misnamed", "apportion.plugins.gang:NoSuchPlugin")
    with pytest.raises(LookupError, match="has no 'NoSuchPlugin'"):
        interface.plugin_builder("lazy-misnamed")
    conf = build_conf("enqueue, allocate", [["lazy-misnamed", "gang"]])
    warnings = run_cycle(snapshot(*_objs()), conf).warnings
    assert "plugin 'lazy-misnamed' cannot be loaded (plugin 'lazy-misnamed': module 'apportion.plugins.gang' has no 'NoSuchPlugin'); skipped" in warnings


def test_a_registered_action_runs_in_the_conf_order(registries):
    seen: list[str] = []
    register_action(FunctionAction("record", lambda ssn: seen.append(",".join(sorted(ssn.binds)))))
    conf = parse_conf('actions: "enqueue, record, allocate, record"\ntiers:\n- plugins:\n  - name: gang\n')
    run_cycle(snapshot(*_objs()), conf)
    assert seen == ["", "ns/old-0"]


def test_an_unknown_action_is_a_conf_error_naming_the_known_ones():
    with pytest.raises(ConfError, match=r"failed to find action 'nope' \(known: enqueue, allocate, backfill"):
        parse_conf('actions: "enqueue, nope"\ntiers: []\n')


def test_an_installed_plugin_that_fails_to_import_is_skipped_with_its_error(tmp_path, monkeypatch, registries):
    dist = tmp_path / "broken_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[apportion.plugins]\nbroken = broken_plugin:Broken\n")
    (tmp_path / "broken_plugin.py").write_text("raise RuntimeError('half-installed')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(interface._plugins, "entry_points", None)
    conf = build_conf("enqueue, allocate", [["broken", "gang"]])
    result = run_cycle(snapshot(*_objs()), conf)
    assert result.binds == {"ns/old-0": "n1"}
    (warning,) = [w for w in result.warnings if "broken" in w]
    assert "RuntimeError: half-installed" in warning and warning.endswith("; skipped")


def _apportion(args: list[str], env_extra: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "apportion"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | env_extra
    return subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def test_the_documented_plugin_package_installs_and_runs_from_a_conf(tmp_path):
    """docs/plugins.md's example, built and pip-installed into a target directory, found by `apportion
    cycle` through its entry point; without the package on the path the conf's plugin is skipped."""
    pkg = tmp_path / "apportion-newest-first"
    pkg.mkdir()
    (pkg / "pyproject.toml").write_text(_doc_block("toml"), encoding="utf-8")
    (pkg / "apportion_newest_first.py").write_text(_doc_block("python"), encoding="utf-8")
    site = tmp_path / "site"
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-index", "--no-deps",
         "--target", str(site), str(pkg)],
        capture_output=True, text=True, timeout=300,
    )
    assert pip.returncode == 0, pip.stderr
    assert (site / "apportion_newest_first.py").exists()
    assert list(site.glob("apportion_newest_first-0.1.0.dist-info/entry_points.txt"))

    (tmp_path / "conf.yaml").write_text(_doc_block("yaml"), encoding="utf-8")
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump_all(_objs()), encoding="utf-8")
    args = ["cycle", "snap.yaml", "--conf", "conf.yaml", "-o", "json"]

    with_pkg = _apportion(args, {"PYTHONPATH": str(site)}, tmp_path)
    assert with_pkg.returncode == 0, with_pkg.stderr
    assert json.loads(with_pkg.stdout)["binds"] == {"ns/new-0": "n1"}
    assert "newest-first" not in with_pkg.stderr

    without = _apportion(args, {}, tmp_path)
    assert without.returncode == 0, without.stderr
    assert json.loads(without.stdout)["binds"] == {"ns/old-0": "n1"}
    assert "warning: plugin 'newest-first' is not registered; skipped" in without.stderr


def test_every_extension_point_has_a_typed_registration():
    """`ExtensionPoints.add_fn` has an overload for each point extension.py gates, and no other."""
    points: set[str] = set()
    for overload in typing.get_overloads(interface.ExtensionPoints.add_fn):
        points.update(typing.get_args(typing.get_type_hints(overload)["point"]))
    assert points == set(ep.GATES)


def test_an_installed_action_is_found_by_the_conf_and_run(tmp_path, monkeypatch, registries):
    dist = tmp_path / "audit_action-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: audit-action\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[apportion.actions]\naudit = audit_action:AUDIT\n")
    (tmp_path / "audit_action.py").write_text(
        "from apportion.framework.interface import FunctionAction\n"
        "SEEN = []\n"
        "AUDIT = FunctionAction('audit', lambda ssn: SEEN.append(sorted(ssn.binds)))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(interface._actions, "entry_points", None)
    monkeypatch.delitem(sys.modules, "audit_action", raising=False)
    conf = parse_conf('actions: "enqueue, allocate, audit"\ntiers:\n- plugins:\n  - name: gang\n')
    run_cycle(snapshot(*_objs()), conf)
    import audit_action

    assert audit_action.SEEN == [["ns/old-0"]]
    monkeypatch.delitem(sys.modules, "audit_action")


def test_mypy_checks_a_plugin_s_registrations_against_the_extension_point(tmp_path):
    """The documented plugin is clean under `mypy --strict` against the installed apportion (py.typed);
    the same plugin registering its job order as a queue order is an error naming add_fn."""
    good = _doc_block("python")
    (tmp_path / "good_plugin.py").write_text(good, encoding="utf-8")
    bad = good.replace("ep.JOB_ORDER", "ep.QUEUE_ORDER")
    assert bad != good
    (tmp_path / "bad_plugin.py").write_text(bad, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--no-error-summary",
         "good_plugin.py", "bad_plugin.py"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert errors and all(line.startswith("bad_plugin.py:") for line in errors), run.stdout
    assert any('No overload variant of "add_fn"' in line for line in errors), run.stdout
