"""`apportion simulate` and `apportion demo`."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from apportion.cli.guard import run_guarded


def register(group: click.Group) -> None:
    """Add `simulate` and `demo` to the top-level group."""
    group.add_command(simulate)
    group.add_command(demo)


class _Progress:
    """A progress bar over simulated time, shown only on a terminal and only once a run has taken
    more than two seconds (short runs print nothing extra)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.enabled = sys.stdout.isatty()
        self.t0 = time.perf_counter()
        self.bar: Any = None
        self.task: Any = None

    def __call__(self, now: float, goal: float) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            if time.perf_counter() - self.t0 < 2.0:
                return
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                                TimeElapsedColumn(), transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=goal)
        self.bar.update(self.task, completed=min(now, goal))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _run(scenario: Any, label: str, **kw: Any) -> Any:
    from apportion.simulation.engine import simulate as run_sim

    prog = _Progress(f"simulating {label}")
    try:
        return run_sim(scenario, label=label, progress=prog, **kw)
    finally:
        prog.close()


def run_simulation(path: str | None, out: str | None, compare: str | None, seed: int | None,
                   horizon: float | None, output: str, quiet_where: bool = False) -> Path | None:
    """The body of `simulate` (and `demo`): load, run (twice for --compare), print, write."""
    from rich.console import Console

    from apportion.simulation.metrics import summarize
    from apportion.simulation.report import compare_table, print_summary, write_outputs
    from apportion.simulation.scenario import (
        Scenario,
        default_scenario_path,
        load_any_conf_or_scenario,
        load_scenario,
    )

    scenario = load_scenario(path or default_scenario_path())
    if seed is not None:
        scenario.run.seed = seed
    if horizon is not None:
        scenario.run.horizon = horizon
    wall0 = time.perf_counter()
    name_a = Path(path).stem if path else "default"
    res = _run(scenario, "A" if compare else "", seed=scenario.run.seed)
    if compare:
        res.label = name_a
    summary = summarize(res)
    other = None
    if compare:
        _kind, obj = load_any_conf_or_scenario(compare)
        if not isinstance(obj, Scenario):
            res_b = _run(scenario, Path(compare).stem, conf=obj, seed=scenario.run.seed)
        else:
            # the other scenario's cluster, queues, scheduler, plans and reservations, on this workload
            other_sc = obj
            other_sc.jobs, other_sc.generators, other_sc.traces = scenario.jobs, scenario.generators, scenario.traces
            other_sc.run.seed = scenario.run.seed
            res_b = _run(other_sc, Path(compare).stem, seed=scenario.run.seed)
        res_b.label = Path(compare).stem
        if res_b.label == res.label:
            res_b.label += " (B)"
        other = (res_b, summarize(res_b))
    wall = time.perf_counter() - wall0
    for w in res.warnings:
        click.echo(f"warning: {w}", err=True)
    if output == "json":
        payload = summary if other is None else {"A": summary, "B": other[1]}
        sys.stdout.write(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    else:
        console = Console()
        if other is None:
            print_summary(summary, console)
        else:
            print_summary(summary, console, title=f"A: {res.label}")
            print_summary(other[1], console, title=f"B: {other[0].label}")
            console.print(compare_table(summary, other[1], res.label, other[0].label))
        events = res.events + (other[0].events if other else 0)
        click.echo(f"wall time {wall:.1f}s, {events / max(wall, 1e-9):,.0f} events/s")
    report = None
    if out:
        report = write_outputs(Path(out), res, summary, other)
        if output != "json" or not quiet_where:
            click.echo(f"report written to {report.resolve()}", err=output == "json")
    return report


@click.command()
@click.argument("scenario", required=False)
@click.option("--out", type=click.Path(file_okay=False), help="Write report.html, summary.json and CSV series here.")
@click.option("--compare", metavar="OTHER_CONF_OR_SCENARIO",
              help="A/B: run the same workload and seed with another scheduler conf or scenario.")
@click.option("--seed", type=int, help="Override run.seed.")
@click.option("--horizon", type=float, help="Override run.horizon (seconds).")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def simulate(scenario: str | None, out: str | None, compare: str | None, seed: int | None, horizon: float | None,
             output: str) -> None:
    """Simulate SCENARIO (a scenario YAML; the built-in default scenario when omitted)."""
    run_guarded(lambda: run_simulation(scenario, out, compare, seed, horizon, output))


@click.command()
@click.option("--out", type=click.Path(file_okay=False), default="apportion-report", show_default=True)
def demo(out: str) -> None:
    """Simulate the built-in scenario, print the summary and write the report to ./apportion-report/."""
    body: Callable[[], Any] = lambda: run_simulation(None, out, None, None, None, "table")  # noqa: E731
    run_guarded(body)
