"""The top-level group imports a command's module only when the command is used; its table of which
module attaches which command must name every command each module registers, and no other."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import click

from apportion.cli.app import COMMAND_MODULES, main


def test_the_table_names_what_each_module_registers() -> None:
    for module in set(COMMAND_MODULES.values()):
        group = click.Group()
        importlib.import_module(f"apportion.cli.{module}").register(group)
        assert {name for name, m in COMMAND_MODULES.items() if m == module} == set(group.commands), module


def test_every_command_is_listed_and_found() -> None:
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMAND_MODULES)
    for name in COMMAND_MODULES:
        assert main.get_command(ctx, name) is not None
    assert main.get_command(ctx, "no-such-command") is None


def test_a_cycle_does_not_import_the_other_commands_or_rich() -> None:
    code = ("import sys\nfrom apportion.cli.app import main\nimport click\n"
            "main.get_command(click.Context(main), 'cycle')\n"
            "print(sorted(m for m in sys.modules if m.startswith(('rich', 'apportion.cli.', 'apportion.reservation',"
            " 'apportion.service'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(sorted(["apportion.cli.app", "apportion.cli.collector", "apportion.cli.cycle",
                                      "apportion.cli.guard", "apportion.cli.json_text", "apportion.cli.options"]))


def test_a_forecast_without_fits_imports_no_planner_nor_schema_checker(tmp_path) -> None:
    """The reservation planner (its agents and policies), jsonschema and the fit search are a fifth of
    a forecast command's start: a forecast of a dump without fits uses none of them."""
    from k8s import node, pod, podgroup, queue

    objs = [node("n1", cpu=4), queue("q"), podgroup("w", queue="q", phase="Pending", created="2026-01-01T00:00:00Z"),
            pod("w-0", "w", cpu=2)]
    dump = tmp_path / "d.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    code = ("import sys\nfrom apportion.cli.app import main\n"
            f"try:\n    main(['forecast', {str(dump)!r}, '--no-fits', '-o', 'json'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('jsonschema', 'apportion.reservation.agents', "
            "'apportion.reservation.system', 'apportion.forecast.suggest', 'apportion.forecast.fit'))),"
            " file=sys.stderr)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(res.stdout)["jobs"][0]["job"] == "ns/w"
    assert res.stderr.strip() == "[]"
