"""`apportion sweep`: every combination of scenario variants simulated on Ray (or one after another
with `--local`), and one comparison report.

A variant is a set of assignments, `--vary KEY=VALUES` each: `run.seed=0..9` (an inclusive integer
range), `run.horizon=3600,7200`, or `scheduler=a.conf,b.conf` (a scheduler conf file). A variant's
result is its simulation summary (simulation.metrics.summarize), which holds no wall-clock value, so
a sweep on Ray and the same sweep run locally give identical numbers.

The driver reads and parses the scenario (its traces and snapshot included) and the conf files once
(`prepare`), so a remote cluster's nodes need none of these files, only apportion installed. On Ray
the parsed input goes into the object store once, and one long-lived actor per CPU (at most one per
variant) receives it, keeps apportion's modules imported, and runs variant after variant; the driver
hands each actor its next variant as soon as it returns one. A variant is short (seconds), so a task
per variant paid a worker's start, apportion's import and the scenario's parse each time.
`--local` runs the same `run_prepared` on the same prepared input, one variant after another.
"""

from __future__ import annotations

import itertools
import json
import math
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from apportion.errors import InputError
from apportion.lean_dataclass import dataclass

KEYS = ("run.seed", "run.horizon", "scheduler")
Variant = tuple[tuple[str, str], ...]


def parse_vary(text: str) -> tuple[str, list[str]]:
    """`KEY=VALUES` of one --vary: the key and its values, in the order given."""
    key, sep, raw = text.partition("=")
    if not sep or key not in KEYS:
        raise InputError(f"expected KEY=VALUES with KEY one of {', '.join(KEYS)}, got {text!r}", where="--vary")
    if ".." in raw and key == "run.seed":
        lo, _, hi = raw.partition("..")
        try:
            a, b = int(lo), int(hi)
        except ValueError:
            raise InputError(f"{key}: expected an integer range A..B, got {raw!r}", where="--vary") from None
        if b < a:
            raise InputError(f"{key}: empty range {raw!r}", where="--vary")
        return key, [str(i) for i in range(a, b + 1)]
    values = [v.strip() for v in raw.split(",") if v.strip()]
    if not values:
        raise InputError(f"{key}: no values", where="--vary")
    for v in values:
        if key == "run.horizon":
            try:
                float(v)
            except ValueError:
                raise InputError(f"{key}: not a number: {v!r}", where="--vary") from None
        if key == "scheduler" and not Path(v).is_file():
            raise InputError(f"{key}: no such file: {v}", where="--vary")
    return key, values


def variants(varies: Sequence[str]) -> list[Variant]:
    """Every combination of the --vary values (the first --vary varies slowest)."""
    axes = [parse_vary(v) for v in varies]
    keys = [k for k, _ in axes]
    if len(set(keys)) != len(keys):
        raise InputError("each KEY may be varied once", where="--vary")
    return [tuple(zip(keys, combo)) for combo in itertools.product(*(vals for _, vals in axes))]


def name(variant: Variant) -> str:
    """A variant's label: `run.seed=3 scheduler=a` (file names without folder or suffix)."""
    return " ".join(f"{k}={Path(v).stem if k == 'scheduler' else v}" for k, v in variant) or "base"


@dataclass(frozen=True)
class Prepared:
    """What every variant starts from: the parsed scenario (pickled: each variant gets its own copy,
    as variants change it) and the parsed scheduler confs by the path --vary named them with."""

    scenario: bytes
    confs: dict[str, Any]


def prepare(scenario_path: str, all_variants: Sequence[Variant]) -> Prepared:
    """Read and parse the scenario (default: the built-in one) and every conf file the variants name."""
    from apportion.engine import load_conf_file
    from apportion.simulation.scenario import default_scenario_path, load_scenario

    scenario = load_scenario(scenario_path or default_scenario_path())
    confs = {value: load_conf_file(value) for v in all_variants for key, value in v if key == "scheduler"}
    return Prepared(pickle.dumps(scenario, protocol=pickle.HIGHEST_PROTOCOL), confs)


def run_prepared(prepared: Prepared, variant: Variant) -> dict[str, Any]:
    """Simulate one variant of the prepared scenario; its summary (JSON-safe: NaN as None)."""
    from apportion.simulation.engine import simulate
    from apportion.simulation.metrics import summarize

    scenario = pickle.loads(prepared.scenario)  # noqa: S301 - bytes this sweep pickled itself
    conf = None
    for key, value in variant:
        if key == "run.seed":
            scenario.run.seed = int(value)
        elif key == "run.horizon":
            scenario.run.horizon = float(value)
        else:
            conf = prepared.confs[value]
    summary = summarize(simulate(scenario, conf=conf, seed=scenario.run.seed, label=name(variant)))
    return cast(dict[str, Any], json.loads(json.dumps(summary, default=str).replace("NaN", "null")))


def run_variant(scenario_path: str, variant: Variant) -> dict[str, Any]:
    """Simulate one variant of the scenario file (default: the built-in one); its summary."""
    return run_prepared(prepare(scenario_path, [variant]), variant)


class VariantRunner:
    """A Ray actor that runs variants of one prepared input, one after another (see the module docstring)."""

    def __init__(self, prepared: Prepared) -> None:
        # the simulator's modules are imported here, while the other actors start, not in the first variant
        import apportion.simulation.engine
        import apportion.simulation.metrics  # noqa: F401

        self.prepared = prepared

    def run(self, variant: Variant) -> dict[str, Any]:
        """One variant's summary."""
        return run_prepared(self.prepared, variant)


def run_sweep(scenario_path: str, all_variants: list[Variant], *, local: bool, address: str | None = None,
              progress: Callable[[int, int, Variant], None] | None = None) -> list[dict[str, Any]]:
    """Every variant's summary, in variant order: on Ray (one actor per CPU), or one after another here."""
    total = len(all_variants)
    prepared = prepare(scenario_path, all_variants)
    if local:
        out = []
        for i, v in enumerate(all_variants):
            out.append(run_prepared(prepared, v))
            if progress:
                progress(i + 1, total, v)
        return out
    import ray

    from apportion.backends.ray_connect import connect

    started_here = connect(address)
    actors: list[Any] = []
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        ref = ray.put(prepared)
        runner = ray.remote(num_cpus=1, max_restarts=0)(VariantRunner)
        actors = [runner.remote(ref) for _ in range(max(1, min(cpus, total)))]
        results: dict[int, dict[str, Any]] = {}
        busy: dict[Any, tuple[int, Any]] = {}  # a variant's result ref -> (its index, the actor)
        idle, todo = list(actors), list(range(total))
        while todo or busy:
            while idle and todo:
                actor, i = idle.pop(), todo.pop(0)
                busy[actor.run.remote(all_variants[i])] = (i, actor)
            (ready,), _ = ray.wait(list(busy), num_returns=1)
            i, actor = busy.pop(ready)
            results[i] = ray.get(ready)
            idle.append(actor)
            if progress:
                progress(len(results), total, all_variants[i])
        return [results[i] for i in range(total)]
    finally:
        for actor in actors:  # their CPUs go back to the cluster (it may be a shared one)
            ray.kill(actor)
        if started_here:
            ray.shutdown()


def metrics(summary: dict[str, Any]) -> dict[str, float]:
    """The numbers a report compares: the summary's scalars, flattened (`jobs.meanWait`), queues left out."""
    out: dict[str, float] = {}

    def walk(prefix: str, obj: Any) -> None:
        if isinstance(obj, dict):
            for k, v in sorted(obj.items()):
                if prefix == "" and k in ("queues", "scenario", "label", "seed"):
                    continue
                walk(f"{prefix}.{k}" if prefix else k, v)
        elif isinstance(obj, bool):
            return
        elif isinstance(obj, int | float):
            out[prefix] = float(obj)
        elif obj is None:
            out[prefix] = math.nan

    walk("", summary)
    return out


def write_report(out_dir: Path, all_variants: list[Variant], summaries: list[dict[str, Any]]) -> Path:
    """summaries.json, table.csv, a plot per metric (PNG) and report.md; the report's path."""
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    names = [name(v) for v in all_variants]
    rows = [metrics(s) for s in summaries]
    cols = sorted({c for r in rows for c in r})
    (out_dir / "summaries.json").write_text(json.dumps(
        [{"variant": dict(v), "summary": s} for v, s in zip(all_variants, summaries)], indent=1, sort_keys=True) + "\n")
    with (out_dir / "table.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["variant", *cols])
        for n, r in zip(names, rows):
            w.writerow([n, *(r.get(c, math.nan) for c in cols)])
    (out_dir / "plots").mkdir(exist_ok=True)
    lines = ["# Sweep", "", f"{len(names)} variants.", "", "| variant | " + " | ".join(cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    lines += [f"| {n} | " + " | ".join(f"{r.get(c, math.nan):g}" for c in cols) + " |" for n, r in zip(names, rows)]
    lines.append("")
    for c in cols:
        fig, ax = plt.subplots(figsize=(max(4.0, 0.5 * len(names) + 2), 3))
        ax.bar(range(len(names)), [r.get(c, math.nan) for r in rows])
        ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
        ax.set_title(c)
        fig.tight_layout()
        png = "plots/" + c.replace("/", "_") + ".png"
        fig.savefig(out_dir / png, dpi=80)
        plt.close(fig)
        lines.append(f"![{c}]({png})")
    report = out_dir / "report.md"
    report.write_text("\n".join(lines) + "\n")
    return report
