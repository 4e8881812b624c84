"""Volcano's `volcano-scheduler.conf`: actions, tiers, plugin switches and arguments.

Defaults follow Volcano's loader (`ApplyPluginConfDefaults`): every switch not written is on, except
`enableHierarchy` and `enabledClusterOrder`. Configurations built in code go through the same
defaults, so the YAML route and the library route agree.
"""

from __future__ import annotations

import logging
from dataclasses import field
from typing import Any

from apportion.errors import ConfError, InputError, shown
from apportion.framework.interface import action_names, get_action
from apportion.kube.documents import load_yaml
from apportion.lean_dataclass import dataclass

log = logging.getLogger(__name__)

KNOWN_ACTIONS = ("enqueue", "allocate", "backfill", "reclaim", "preempt")

#: Every switch key Volcano reads, in its irregular spelling.
SWITCHES = (
    "enableJobOrder",
    "enableHierarchy",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "enabledClusterOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enabledVictim",
    "enableJobEnqueued",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
    "enabledHyperNodeOrder",
    "enabledSubJobReady",
    "enabledSubJobPipelined",
    "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)
OFF_UNLESS_WRITTEN = ("enableHierarchy", "enabledClusterOrder")

DEFAULT_CONF_YAML = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


@dataclass
class PluginOption:
    """One plugin entry of a tier."""

    name: str
    switches: dict[str, bool] = field(default_factory=dict)
    arguments: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key in SWITCHES:
            self.switches.setdefault(key, key not in OFF_UNLESS_WRITTEN)

    def enabled(self, key: str) -> bool:
        """Whether the switch is on for this plugin entry (loader defaults applied)."""
        return self.switches.get(key, False)


@dataclass
class Tier:
    """One tier of the conf: its plugin entries, in order."""

    plugins: list[PluginOption]


@dataclass
class SchedulerConf:
    """A parsed, validated scheduler configuration."""

    actions: list[str]
    tiers: list[Tier]
    configurations: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def action_arguments(self, action: str) -> dict[str, Any]:
        """The `configurations` arguments of an action (empty when none)."""
        return self.configurations.get(action, {})

    def first_option(self, plugin: str) -> PluginOption | None:
        """The first entry of the plugin across the tiers, None if the conf has none."""
        for tier in self.tiers:
            for opt in tier.plugins:
                if opt.name == plugin:
                    return opt
        return None

    def hierarchy_enabled(self, plugin: str) -> bool:
        """Session.HierarchyEnabled: the first entry with that name decides; unset is off."""
        opt = self.first_option(plugin)
        return bool(opt and opt.enabled("enableHierarchy"))

    def plugin_names(self) -> list[str]:
        """Every plugin entry's name, tier by tier."""
        return [o.name for t in self.tiers for o in t.plugins]


def _as_bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "t", "f"):
        return value.strip().lower() in ("true", "1", "t")
    raise ConfError(f"{where}: expected a boolean, got {shown(value)}")


def _check_action(name: str, source: str) -> None:
    """An action beyond the built-in ones must be registered or installed (interface.get_action)."""
    try:
        found = get_action(name)
    except LookupError as e:
        raise ConfError(f"{source}: actions: {e}") from None
    if found is None:
        extra = [n for n in action_names() if n not in KNOWN_ACTIONS]
        known = ", ".join([*KNOWN_ACTIONS, *extra])
        raise ConfError(f"{source}: actions: failed to find action {shown(name)} (known: {known})")


def parse_conf(text: str, *, source: str = "volcano-scheduler.conf") -> SchedulerConf:
    """Parse and validate a configuration, rejecting what Volcano rejects."""
    try:
        data = load_yaml(text, source)
    except InputError as e:  # one line, with the line and column inside the conf text
        raise ConfError(e.bare, where=e.where) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfError(f"{source}: expected a mapping at the top level, got {type(data).__name__}")
    return conf_from_dict(data, source=source)


def conf_from_dict(data: dict[str, Any], *, source: str = "conf") -> SchedulerConf:
    """Validate an already decoded conf: unknown keys warn, wrong shapes and unknown actions are errors
    naming the field."""
    warnings: list[str] = []
    known_top = {"actions", "tiers", "configurations", "metrics"}
    for k in data:
        if k not in known_top:
            warnings.append(f"{source}: unknown key {shown(k)} ignored")
    raw_actions = data.get("actions", "")
    if raw_actions is None:
        raw_actions = ""
    if not isinstance(raw_actions, str):
        raise ConfError(f"{source}: actions: expected a comma-separated string, got {shown(raw_actions)}")
    actions = [a.strip() for a in raw_actions.split(",") if a.strip()]
    for a in actions:
        if a not in KNOWN_ACTIONS:
            _check_action(a, source)
    tiers_raw = data.get("tiers") or []
    if not isinstance(tiers_raw, list):
        raise ConfError(f"{source}: tiers: expected a list")
    tiers: list[Tier] = []
    for ti, traw in enumerate(tiers_raw):
        where_t = f"{source}: tiers[{ti}]"
        if not isinstance(traw, dict):
            raise ConfError(f"{where_t}: expected a mapping with 'plugins'")
        plugins_raw = traw.get("plugins") or []
        if not isinstance(plugins_raw, list):
            raise ConfError(f"{where_t}.plugins: expected a list")
        opts: list[PluginOption] = []
        for pi, praw in enumerate(plugins_raw):
            where = f"{where_t}.plugins[{pi}]"
            if not isinstance(praw, dict) or not isinstance(praw.get("name"), str) or not praw["name"]:
                raise ConfError(f"{where}: expected a mapping with a 'name'")
            switches: dict[str, bool] = {}
            args = praw.get("arguments") or {}
            if not isinstance(args, dict):
                raise ConfError(f"{where}.arguments: expected a mapping")
            alias = praw.get("enabledHierarchy")
            for k, v in praw.items():
                if k in ("name", "arguments", "enabledHierarchy"):
                    continue
                if k in SWITCHES:
                    switches[k] = _as_bool(v, f"{where}.{k}")
                else:
                    warnings.append(f"{where}: unknown key {shown(k)} ignored (as Volcano does)")
            if alias is not None:
                alias_b = _as_bool(alias, f"{where}.enabledHierarchy")
                if "enableHierarchy" in switches:
                    if switches["enableHierarchy"] != alias_b:
                        warnings.append(
                            f"{where}: enableHierarchy and enabledHierarchy disagree; enableHierarchy wins"
                        )
                else:
                    switches["enableHierarchy"] = alias_b
            opts.append(PluginOption(name=praw["name"], switches=switches, arguments=dict(args)))
        names = [o.name for o in opts]
        for o in opts:
            if o.name == "drf" and o.enabled("enableHierarchy") and "proportion" in names:
                raise ConfError(f"{where_t}: proportion and drf with hierarchy enabled conflicts")
        tiers.append(Tier(plugins=opts))
    seen: set[str] = set()
    for t in tiers:
        for o in t.plugins:
            if o.name in seen:
                warnings.append(
                    f"{source}: plugin {shown(o.name)} is listed more than once; Volcano consults every position "
                    "with the functions of its last instance"
                )
            seen.add(o.name)
    configurations: dict[str, dict[str, Any]] = {}
    confs_raw = data.get("configurations") or []
    if not isinstance(confs_raw, list):
        raise ConfError(f"{source}: configurations: expected a list")
    for ci, craw in enumerate(confs_raw):
        if not isinstance(craw, dict) or not isinstance(craw.get("name"), str):
            raise ConfError(f"{source}: configurations[{ci}]: expected a mapping with a 'name'")
        cargs = craw.get("arguments") or {}
        if not isinstance(cargs, dict):
            raise ConfError(f"{source}: configurations[{ci}].arguments: expected a mapping")
        configurations[craw["name"]] = dict(cargs)
    return SchedulerConf(actions=actions, tiers=tiers, configurations=configurations, warnings=warnings)


def default_conf() -> SchedulerConf:
    """Volcano's DefaultSchedulerConf."""
    return parse_conf(DEFAULT_CONF_YAML, source="default configuration")


def build_conf(actions: str, tiers: list[list[str | dict[str, Any]]]) -> SchedulerConf:
    """Build a configuration in code (loader defaults applied), e.g. for tests and the library."""
    data = {
        "actions": actions,
        "tiers": [{"plugins": [p if isinstance(p, dict) else {"name": p} for p in tier]} for tier in tiers],
    }
    return conf_from_dict(data, source="conf")
