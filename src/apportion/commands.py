"""Registry of CLI subcommands; each area adds its own (engine, reservation, simulation)."""

from __future__ import annotations

import importlib
import logging

import click

log = logging.getLogger(__name__)

#: modules that define `register(group: click.Group) -> None`
MODULES = (
    "apportion.cli_engine",
    "apportion.cli_quota",
    "apportion.reservation.cli",
    "apportion.simulation.cli",
    "apportion.service.cli",
)


def register(group: click.Group) -> None:
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue  # that area is not built yet
            raise
        mod.register(group)
