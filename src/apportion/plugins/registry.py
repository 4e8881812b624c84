"""The built-in plugins under Volcano's names, registered with the framework when this package loads.

Each is registered as a "module:Class" string, so a plugin module is imported only when a conf names it.
"""

from __future__ import annotations

from apportion.framework.interface import register_plugin

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


def register_builtins() -> None:
    """Register every built-in plugin (again: a name a caller replaced gets the built-in back)."""
    for name, target in BUILTIN.items():
        register_plugin(name, target)
