"""`apportion simulate` and `apportion demo`."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from apportion.cli.console import QuietConsole
from apportion.cli.guard import run_guarded
from apportion.cli.options import output_option, write_yaml


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


def _load(path: str | None) -> Any:
    """The scenario at `path` (`-`: stdin; None: the built-in one)."""
    from apportion.kube import read_text
    from apportion.simulation.scenario import default_scenario_path, load_scenario, parse_scenario

    if path == "-":
        return parse_scenario(read_text("-"), source="<stdin>", base=Path.cwd())
    return load_scenario(path or default_scenario_path())


def missing_queues(scenario: Any, other: Any) -> list[str]:
    """What of `scenario`'s workload names a queue `other` lacks, as phrases naming each job and
    generator (empty: every queue is there)."""
    lost: list[str] = []
    for j in scenario.jobs:
        if j.queue not in other.queues:
            lost.append(f"job {j.name} (queue {j.queue})")
    for g in scenario.generators:
        gone = sorted(q for q in g.queues if q not in other.queues)
        if gone:
            lost.append(f"generator {g.name} (queue{'s' if len(gone) > 1 else ''} {', '.join(gone)})")
    return lost


def run_simulation(path: str | None, out: str | None, compare: str | None, seed: int | None,
                   horizon: float | None, output: str, quiet_where: bool = False,
                   keep_going: bool = False) -> Path | None:
    """The body of `simulate` (and `demo`): load, run (twice for --compare), print, write."""
    from apportion.errors import InputError
    from apportion.simulation.metrics import summarize
    from apportion.simulation.report import compare_table, print_summary, write_outputs
    from apportion.simulation.scenario import Scenario, load_any_conf_or_scenario

    scenario = _load(path)
    if seed is not None:
        scenario.run.seed = seed
    if horizon is not None:
        scenario.run.horizon = horizon
    other_obj = None
    if compare:
        # loaded (and checked) before anything runs: a bad B fails in a second, not after A's run
        _kind, other_obj = load_any_conf_or_scenario(compare)
        if isinstance(other_obj, Scenario):
            lost = missing_queues(scenario, other_obj)
            if lost:
                shown_ = "; ".join(lost[:10]) + (f"; and {len(lost) - 10} more" if len(lost) > 10 else "")
                msg = (f"{compare} has no queue for {len(lost)} part(s) of the workload, which would stay "
                       f"unfinished there: {shown_}")
                if not keep_going:
                    raise InputError(msg + " (--keep-going runs it anyway)", where="--compare")
                click.echo(f"warning: --compare: {msg}", err=True)
    wall0 = time.perf_counter()
    name_a = "stdin" if path == "-" else Path(path).stem if path else "default"
    res = _run(scenario, "A" if compare else "", seed=scenario.run.seed)
    if compare:
        res.label = name_a
    summary = summarize(res)
    other = None
    if compare:
        if not isinstance(other_obj, Scenario):
            res_b = _run(scenario, Path(compare).stem, conf=other_obj, seed=scenario.run.seed)
        else:
            # the other scenario's cluster, queues, scheduler, plans and reservations, on this workload
            other_sc = other_obj
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
    if output in ("json", "yaml"):
        payload = summary if other is None else {"A": summary, "B": other[1]}
        if output == "json":
            sys.stdout.write(json.dumps(payload, indent=1, sort_keys=True) + "\n")
        else:
            write_yaml(json.loads(json.dumps(payload, sort_keys=True)))
    else:
        console = QuietConsole()
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
        machine = output in ("json", "yaml")
        if not machine or not quiet_where:
            click.echo(f"report written to {report.resolve()}", err=machine)
    return report


@click.command()
@click.argument("scenario", required=False, metavar="[SCENARIO|-]")
@click.option("--out", type=click.Path(file_okay=False), help="Write report.html, summary.json and CSV series here.")
@click.option("--compare", metavar="OTHER_CONF_OR_SCENARIO",
              help="A/B: run the same workload and seed with another scheduler conf or scenario.")
@click.option("--seed", type=int, help="Override run.seed.")
@click.option("--horizon", type=float, help="Override run.horizon (seconds).")
@click.option("--keep-going", is_flag=True,
              help="With --compare: run even when the other scenario lacks queues the workload names.")
@output_option("table", "json", "yaml")
def simulate(scenario: str | None, out: str | None, compare: str | None, seed: int | None, horizon: float | None,
             keep_going: bool, output: str) -> None:
    """Simulate SCENARIO (a scenario YAML, `-` for stdin; the built-in default scenario when omitted)."""
    run_guarded(lambda: run_simulation(scenario, out, compare, seed, horizon, output, keep_going=keep_going))


@click.command()
@click.option("--out", type=click.Path(file_okay=False), default="apportion-report", show_default=True)
@output_option("table", "json", "yaml")
def demo(out: str, output: str) -> None:
    """Simulate the built-in scenario, print the summary and write the report to ./apportion-report/."""
    body: Callable[[], Any] = lambda: run_simulation(None, out, None, None, None, output)  # noqa: E731
    run_guarded(body)
