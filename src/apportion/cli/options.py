"""The flag vocabulary every command shares: `-o/--output` with `table` (fits 80 columns), `wide` (every
column, as kubectl's), `json` (the contract format) and `yaml` (the same data as json)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

_HELP = {
    "table": "table: readable, within 80 columns",
    "wide": "wide: every column",
    "json": "json: the machine-readable contract",
    "yaml": "yaml: the same data as json",
}


def output_option(*formats: str, aliases: dict[str, str] | None = None) -> Callable[[F], F]:
    """`-o/--output FORMAT` (default `table`) with the given formats. `aliases` maps an older spelling
    to its format (accepted, not listed)."""
    aliases = aliases or {}

    def convert(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
        value = aliases.get(value, value)
        if value not in formats:
            raise click.BadParameter(f"{value!r} is not one of {', '.join(formats)}")
        return value

    return click.option("-o", "--output", default="table", show_default=True, metavar="|".join(formats),
                        callback=convert, help="; ".join(_HELP[f] for f in formats) + ".")


def write_yaml(data: Any) -> None:
    """The json output's data as YAML, keys in the same order."""
    import yaml  # (here: a command that writes no YAML starts without PyYAML)

    sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100))
