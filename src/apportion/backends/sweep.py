"""`apportion sweep`: every combination of scenario variants, each simulated as one Ray task (or one
after another with `--local`), and one comparison report.

A variant is a set of assignments, `--vary KEY=VALUES` each: `run.seed=0..9` (an inclusive integer
range), `run.horizon=3600,7200`, or `scheduler=a.conf,b.conf` (a scheduler conf file). A variant's
result is its simulation summary (simulation.metrics.summarize), which holds no wall-clock value, so
a sweep on Ray and the same sweep run locally give identical numbers. Paths are read by the task,
so on a remote Ray cluster the scenario and conf files must be reachable from its nodes (a local Ray
shares this machine's files).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from apportion.errors import InputError

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


def run_variant(scenario_path: str, variant: Variant) -> dict[str, Any]:
    """Simulate one variant; its summary (JSON-safe: NaN as None)."""
    from apportion.engine import load_conf_file
    from apportion.simulation.engine import simulate
    from apportion.simulation.metrics import summarize
    from apportion.simulation.scenario import default_scenario_path, load_scenario

    scenario = load_scenario(scenario_path or default_scenario_path())
    conf = None
    for key, value in variant:
        if key == "run.seed":
            scenario.run.seed = int(value)
        elif key == "run.horizon":
            scenario.run.horizon = float(value)
        else:
            conf = load_conf_file(value)
    summary = summarize(simulate(scenario, conf=conf, seed=scenario.run.seed, label=name(variant)))
    return json.loads(json.dumps(summary, default=str).replace("NaN", "null"))


def run_sweep(scenario_path: str, all_variants: list[Variant], *, local: bool, address: str | None = None,
              progress: Callable[[int, int, Variant], None] | None = None) -> list[dict[str, Any]]:
    """Every variant's summary, in variant order: one Ray task each (num_cpus=1), or one after another."""
    total = len(all_variants)
    if local:
        out = []
        for i, v in enumerate(all_variants):
            out.append(run_variant(scenario_path, v))
            if progress:
                progress(i + 1, total, v)
        return out
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(run_variant)
        refs = {task.remote(scenario_path, v): i for i, v in enumerate(all_variants)}
        results: dict[int, dict[str, Any]] = {}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            i = refs[ready[0]]
            results[i] = ray.get(ready[0])
            if progress:
                progress(len(results), total, all_variants[i])
        return [results[i] for i in range(total)]
    finally:
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
