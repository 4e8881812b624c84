"""The effective-quota explainer: the queue tree exactly as the capacity plugin sees it at session open.

For every queue: deserved, guarantee, capability (and which dimensions were inherited from the parent),
realCapability and, per dimension, which term of

    realCapability = min(capability, ExceededPart(basis, Σ guarantees) + guarantee)

won (basis = the cluster total in flat mode, the parent's realCapability in a tree), allocated, inqueue
and share; plus every configuration warning and, when the plugin refuses all queue decisions, why.

The numbers come from the plugin itself (a session is opened, no action runs), so they cannot drift from
what `apportion cycle` decides.
"""

from __future__ import annotations

import math
from dataclasses import field
from typing import Any

from apportion.cluster.snapshot import ROOT_QUEUE, Snapshot
from apportion.engine import open_session, resolve_conf
from apportion.framework.arguments import Arguments
from apportion.framework.conf import SchedulerConf
from apportion.lean_dataclass import dataclass
from apportion.plugins.capacity import CapacityPlugin, QueueAttr
from apportion.resources import PODS, Resource, format_amount, to_natural_value

NaturalMap = dict[str, float | str]


@dataclass
class QueueQuota:
    """One queue as capacity sees it (internal units; `to_json` converts)."""

    name: str
    parent: str
    depth: int
    children: list[str]
    state: str
    has_jobs: bool
    #: False for a flat-mode queue without jobs: Volcano keeps no attributes for it; the figures are the
    #: ones it will get once a job arrives.
    tracked: bool
    deserved: Resource
    guarantee: Resource
    capability: Resource | None
    inherited: list[str]
    real_capability: Resource | None
    allocated: Resource
    request: Resource
    inqueue: Resource
    elastic: Resource
    share: float
    basis_from: str
    why: dict[str, dict[str, Any]]
    #: tree glyphs to print before the name (`│  ├─ `).
    prefix: str = ""

    def to_json(self) -> dict[str, Any]:
        """The queue's row of `apportion quota -o json`."""
        return {
            "parent": self.parent,
            "children": list(self.children),
            "state": self.state,
            "hasJobs": self.has_jobs,
            "tracked": self.tracked,
            "deserved": _natural(self.deserved),
            "guarantee": _natural(self.guarantee),
            "capability": _natural(self.capability),
            "inheritedCapability": list(self.inherited),
            "realCapability": _natural(self.real_capability),
            "allocated": _natural(self.allocated),
            "request": _natural(self.request),
            "inqueue": _natural(self.inqueue),
            "elastic": _natural(self.elastic),
            "share": self.share,
            "realCapabilityWhy": {
                "basis": self.basis_from,
                "dimensions": {n: _why_json(n, w) for n, w in self.why.items()},
            },
        }


@dataclass
class QuotaView:
    """The whole explainer result."""

    mode: str  # "flat" | "hierarchical"
    root_mode: str  # "cluster" | "unlimited" (tree mode only)
    capacity_in_conf: bool
    guarantee_enabled: bool
    elastic_enabled: bool
    total: Resource
    total_guarantee: Resource
    queues: list[QueueQuota]
    warnings: list[str] = field(default_factory=list)
    blocked: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The whole report as `apportion quota -o json` prints it."""
        return {
            "mode": self.mode,
            "rootCapability": self.root_mode if self.mode == "hierarchical" else None,
            "capacityInConf": self.capacity_in_conf,
            "guaranteeEnable": self.guarantee_enabled,
            "elasticEnable": self.elastic_enabled,
            "total": _natural(self.total),
            "totalGuarantee": _natural(self.total_guarantee),
            "queues": {q.name: q.to_json() for q in self.queues},
            "warnings": list(self.warnings),
            "blocked": self.blocked,
            "notes": list(self.notes),
        }


def explain_quota(snapshot: Snapshot, conf: SchedulerConf | None = None, *,
                  hierarchy: bool | None = None) -> QuotaView:
    """Open a session over the snapshot (no action runs) and read the capacity plugin's view.

    `hierarchy` overrides the conf's enableHierarchy for capacity (None: as configured). If the conf has
    no capacity plugin, a capacity plugin with default arguments looks at the session anyway.
    """
    conf = resolve_conf(snapshot, conf)
    opt = conf.first_option(CapacityPlugin.name)
    notes: list[str] = []
    if opt is not None and hierarchy is not None:
        opt.switches["enableHierarchy"] = hierarchy
    if opt is None:
        notes.append("the scheduler configuration in use has no capacity plugin; this is the view capacity "
                     "would have with default arguments" + (" (hierarchical)" if hierarchy else " (flat)"))
        if hierarchy:
            snapshot.ensure_queue(ROOT_QUEUE)
    ssn = open_session(snapshot, conf)
    plugin = next((p for _, p in ssn.plugins if isinstance(p, CapacityPlugin)), None)
    if plugin is None:
        plugin = CapacityPlugin(Arguments({}, owner=CapacityPlugin.name, warnings=ssn.warnings))
        plugin.force_hierarchy = bool(hierarchy)
        plugin.on_session_open(ssn)  # registers under "capacity", which no tier consults: harmless

    jobs_in: dict[str, int] = {}
    for job in ssn.jobs.values():
        jobs_in[job.queue] = jobs_in.get(job.queue, 0) + 1

    attrs: dict[str, QueueAttr] = dict(plugin.attrs)
    untracked: set[str] = set()
    if not plugin.hierarchical:
        # Flat mode keeps attributes only for queues with jobs; show the others as they will be.
        for name in sorted(ssn.queues):
            if name not in attrs:
                a = plugin.new_flat_queue_attr(ssn.queues[name])
                plugin.finish_flat_queue_attr(a)
                attrs[name] = a
                untracked.add(name)
        if untracked:
            notes.append("flat mode keeps attributes only for queues with jobs; queues marked '(no jobs)' show "
                         "the figures they will get once a job arrives")

    order = _tree_order(attrs) if plugin.hierarchical and plugin.tree_ok else [(n, "") for n in sorted(attrs)]
    queues = []
    for name, prefix in order:
        a = attrs[name]
        q = ssn.queues.get(name)
        terms = a.terms
        queues.append(QueueQuota(
            name=name,
            parent=a.parent,
            depth=len(a.ancestors) if plugin.hierarchical else 0,
            children=list(a.children),
            state=q.state if q is not None else "Open",
            has_jobs=jobs_in.get(name, 0) > 0,
            tracked=name not in untracked,
            deserved=a.deserved,
            guarantee=a.guarantee,
            capability=a.capability,
            inherited=sorted(a.inherited),
            real_capability=a.real_capability,
            allocated=a.allocated,
            request=a.request,
            inqueue=a.inqueue,
            elastic=a.elastic,
            share=a.share,
            basis_from=terms.basis_from if terms is not None else _root_basis(plugin),
            why=terms.why() if terms is not None else {},
            prefix=prefix,
        ))
    if plugin.hierarchical:
        total_guarantee = attrs[ROOT_QUEUE].guarantee if ROOT_QUEUE in attrs else Resource()
    else:
        total_guarantee = plugin.total_guarantee
    if not plugin.guarantee_enabled:
        notes.append("capacity.GuaranteeEnable is false: every guarantee counts as empty")
    if not plugin.elastic_enabled:
        notes.append("capacity.ElasticEnable is false: no job is elastic")
    return QuotaView(
        mode="hierarchical" if plugin.hierarchical else "flat",
        root_mode=plugin.root_mode,
        capacity_in_conf=opt is not None,
        guarantee_enabled=plugin.guarantee_enabled,
        elastic_enabled=plugin.elastic_enabled,
        total=plugin.total,
        total_guarantee=total_guarantee,
        queues=queues,
        warnings=list(dict.fromkeys(ssn.warnings)),
        blocked=plugin.blocked,
        notes=notes,
    )


def _root_basis(plugin: CapacityPlugin) -> str:
    if not plugin.hierarchical:
        return ""
    return "the cluster total" if plugin.root_mode == "cluster" else "its own capability (unlimited if unset)"


def _tree_order(attrs: dict[str, QueueAttr]) -> list[tuple[str, str]]:
    """Depth first from root, children by name, each with its tree glyphs."""
    out: list[tuple[str, str]] = []

    def visit(name: str, lead: str, glyph: str) -> None:
        out.append((name, lead + glyph))
        kids = sorted(attrs[name].children)
        below = lead + ("" if not glyph else ("   " if glyph.startswith("└") else "│  "))
        for i, c in enumerate(kids):
            visit(c, below, "└─ " if i == len(kids) - 1 else "├─ ")

    if ROOT_QUEUE in attrs:
        visit(ROOT_QUEUE, "", "")
    seen = {n for n, _ in out}
    out.extend((n, "") for n in sorted(attrs) if n not in seen)
    return out


# ===================================================================== units
def _value(name: str, internal: float | None) -> float | str | None:
    if internal is None:
        return None
    if math.isinf(internal):
        return "unlimited"
    v = to_natural_value(name, internal)
    return int(v) if v == int(v) and abs(v) < 2**63 else v


def _natural(r: Resource | None) -> NaturalMap:
    return {} if r is None else r.to_natural()


def _why_json(name: str, w: dict[str, Any]) -> dict[str, Any]:
    return {
        "value": _value(name, w["value"]),
        "capability": _value(name, w["capability"]),
        "basis": _value(name, w["basis"]),
        "sumGuarantee": _value(name, w["sumGuarantee"]),
        "guarantee": _value(name, w["guarantee"]),
        "headroom": _value(name, w["headroom"]),
        "won": w["won"],
        "inherited": w["inherited"],
    }


def fmt_resource(r: Resource | None, *, empty: str = "-") -> str:
    """`cpu 70, memory 280Gi` (pods left out: the queue limits never check pods)."""
    if r is None:
        return empty
    parts = []
    for n in r.names():
        if n == PODS:
            continue
        v = r.get(n)
        if v == 0 and n not in r.scalars:
            continue
        parts.append(f"{n} {format_amount(n, v)}")
    return ", ".join(parts) or empty


def why_lines(q: QueueQuota) -> list[tuple[str, str, str, str, str]]:
    """(resource, realCapability, capability term, guarantee term, which won) per dimension, pods aside."""
    rows = []
    for n, w in q.why.items():
        if n == PODS:
            continue
        cap = w["capability"]
        cap_text = "no limit" if cap is None else format_amount(n, cap) + (" (inherited)" if w["inherited"] else "")
        head = (f"({_short_basis(q.basis_from)} {format_amount(n, w['basis'])} − Σ guarantees "
                f"{format_amount(n, w['sumGuarantee'])})⁺ + guarantee {format_amount(n, w['guarantee'])} = "
                f"{format_amount(n, w['headroom'])}")
        won = {"capability": "capability", "headroom": "guarantee term", "both": "tie"}[w["won"]]
        rows.append((n, format_amount(n, w["value"]), cap_text, head, won))
    return rows


def _short_basis(basis_from: str) -> str:
    return "total" if basis_from == "cluster total" else basis_from.replace("'s realCapability", "")
