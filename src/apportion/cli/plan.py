"""`apportion plan replay CASE.json [-o table|json|yaml]` (the reservation replay contract)."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import click

from apportion.cli.options import output_option, write_yaml
from apportion.reservation.replay import Replay, run_case

_BARS = " .:-=+*#%@"


def _timeline(replay: Replay, rid_text: str, width: int = 40) -> list[str]:
    """A small text timeline of one reservation's allocation (share of plan memory per column)."""
    from apportion.reservation.definition import BadRequest, ReservationId

    try:
        rid = ReservationId.parse(rid_text)
    except BadRequest:
        return []
    r = replay.plan.get(rid)
    if r is None:
        return []
    lines = []
    lo, hi = (0, r.period) if r.period > 0 else (r.start, r.end)
    cap_mem = max(replay.plan.capacity[0], 1)
    pieces = list(r.rle.nonzero_pieces())
    if hi > lo:
        cols = []
        for c in range(width):
            # the peak over the column's span, not a sample at its start: a short allocation inside a
            # long window still shows, and any allocation shows at least as the lowest mark
            c0, c1 = lo + (hi - lo) * c // width, lo + (hi - lo) * (c + 1) // width
            held = [v for a, b, v in pieces if a < max(c1, c0 + 1) and b > c0]
            if not held:
                cols.append(" ")
                continue
            frac = min(1.0, max(0.0, max(v[0] for v in held) / cap_mem))
            cols.append(_BARS[max(1, min(len(_BARS) - 1, round(frac * (len(_BARS) - 1))))])
        what = f"offsets [0, {r.period})" if r.period > 0 else f"[{lo}, {hi})"
        lines.append(f"      |{''.join(cols)}| {what}")
    for a, b, v in pieces:
        if r.period <= 0 and (b <= r.start or a >= r.end):
            continue
        lines.append(f"      [{a}, {b}) <memory:{v[0]}, vCores:{v[1]}>")
    return lines


#: the readable report's width: every line fits a terminal of 80 columns
WIDTH = 80
LEGEND = (f"timelines: each column is 1/40 of the reservation's span (or period); its character is the peak "
          f"share of the plan's memory held in it: ' ' none, then {' '.join(_BARS[1:])} from a little up to all")


def _summary(obs: dict[str, Any]) -> str:
    rest = {k: v for k, v in obs.items() if k not in ("op", "allocations")}
    return json.dumps(rest, separators=(", ", ": "))


def render_step(replay: Replay, i: int, st: Any, obs: dict[str, Any]) -> list[str]:
    """One step of the readable report: the step, its result (wrapped to 80 columns, never cut), and a
    timeline when a reservation is in."""
    out = textwrap.wrap(f"[{i}] {obs['op']}: {_summary(obs)}", WIDTH, subsequent_indent="    ",
                        break_on_hyphens=False)
    rid = None
    if obs.get("exists"):
        body = st.get("body") if isinstance(st, dict) else None
        if isinstance(body, dict):
            rid = body.get("reservation-id")
        elif isinstance(st, dict):
            rid = st.get("reservationId")
    elif obs["op"] in ("addAllocation", "updateAllocation") and obs.get("accepted"):
        rid = st.get("reservationId")
    if isinstance(rid, str):
        out.extend(_timeline(replay, rid))
    return out


def register(group: click.Group) -> None:
    """Add the `plan` command group to the top-level CLI."""

    @group.group("plan")
    def plan() -> None:
        """YARN's reservation system: plans, agents, sharing policies."""

    @plan.command("replay")
    @click.argument("case", type=click.Path(dir_okay=False))
    @output_option("table", "json", "yaml", aliases={"text": "table"})
    def replay_cmd(case: str, output: str) -> None:
        """Run the steps of CASE.json against a fresh reservation system and print what happened."""
        from apportion.cli.guard import run_guarded

        def body() -> None:
            if output in ("json", "yaml"):
                _replay, observations = run_case(case)
                if output == "json":  # exactly one JSON object: {"steps": [...]}
                    click.echo(json.dumps({"steps": observations}))
                else:
                    write_yaml({"steps": observations})
                return
            lines: list[str] = []
            replay, _obs = run_case(case, lambda r, i, st, obs: lines.extend(render_step(r, i, st, obs)))
            header = f"plan {replay.plan.queue}: agent {replay.agent_name}, policy {replay.plan.policy.name}"
            legend = textwrap.wrap(LEGEND, WIDTH, subsequent_indent="    ") if any("|" in x for x in lines) else []
            click.echo("\n".join([*textwrap.wrap(header, WIDTH), *legend, *lines]))

        run_guarded(body)
