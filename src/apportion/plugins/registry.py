"""Plugin registry: Volcano's plugin names to their classes (imported lazily so a missing one is skipped)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from apportion.framework.session import Plugin

#: plugin name -> "module:Class"
BUILTIN = {
    "priority": "apportion.plugins.priority:PriorityPlugin",
    "gang": "apportion.plugins.gang:GangPlugin",
    "conformance": "apportion.plugins.conformance:ConformancePlugin",
    "drf": "apportion.plugins.drf:DrfPlugin",
    "predicates": "apportion.plugins.predicates:PredicatesPlugin",
    "nodeorder": "apportion.plugins.nodeorder:NodeOrderPlugin",
    "binpack": "apportion.plugins.binpack:BinpackPlugin",
    "overcommit": "apportion.plugins.overcommit:OvercommitPlugin",
    "proportion": "apportion.plugins.proportion:ProportionPlugin",
    "capacity": "apportion.plugins.capacity:CapacityPlugin",
}

_cache: dict[str, type[Plugin] | None] = {}


def get(name: str) -> type[Plugin] | None:
    """The plugin class for a name, or None if apportion has no such plugin."""
    if name in _cache:
        return _cache[name]
    target = BUILTIN.get(name)
    cls = None
    if target:
        mod_name, cls_name = target.split(":")
        try:
            cls = getattr(importlib.import_module(mod_name), cls_name)
        except ModuleNotFoundError as e:
            if e.name != mod_name:
                raise
    _cache[name] = cls
    return cls
