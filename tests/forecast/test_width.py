"""Every line `apportion forecast` and `apportion diff` print as text fits 80 columns, on several dumps
(long namespaces, job, pod and queue names, GPUs, seeded runs, evictions), nothing cut from a name;
and the text helpers keep every character of what they lay out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from dumps import T0, running, two_queues, write
from hypothesis import given, settings
from hypothesis import strategies as st
from test_diff import CAPACITY_RECLAIM, borrowing
from test_fit import CAPACITY
from test_reserve import gpu_jobs, gpu_node

from apportion.cli import main
from apportion.forecast.text import WIDTH, quantity, rows, wrap

from k8s import node, pod, podgroup, queue

LONG_JOB = "a-podgroup-with-a-really-quite-remarkably-long-name-indeed-for-sure"
LONG_QUEUE = "a-queue-whose-name-goes-on-and-on-and-on"
LONG_NS = "a-namespace-with-a-long-name"


def renamed(objs: list[dict[str, Any]], jobs: dict[str, str], queues: dict[str, str],
            namespace: str | None = None) -> list[dict[str, Any]]:
    """The objects with podgroups (and their pods), queues and the namespace renamed."""
    for o in objs:
        meta, kind = o["metadata"], o["kind"]
        if kind == "PodGroup":
            meta["name"] = jobs.get(meta["name"], meta["name"])
            o["spec"]["queue"] = queues.get(o["spec"].get("queue"), o["spec"].get("queue"))
        elif kind == "Pod":
            group = meta["annotations"].get("scheduling.k8s.io/group-name")
            if group in jobs:
                meta["annotations"]["scheduling.k8s.io/group-name"] = jobs[group]
                meta["name"] = jobs[group] + meta["name"][len(group):]
        elif kind == "Queue":
            meta["name"] = queues.get(meta["name"], meta["name"])
            if o["spec"].get("parent") in queues:
                o["spec"]["parent"] = queues[o["spec"]["parent"]]
        if namespace is not None and kind != "Node" and kind != "Queue":
            meta["namespace"] = namespace
    return objs


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code in (0, 3), res.output
    return res.exit_code, res.stdout


def assert_fits(out: str) -> None:
    lines = out.splitlines()
    assert lines
    too_wide = [line for line in lines if len(line) > WIDTH]
    assert not too_wide, too_wide


def long_two_queues() -> list[dict[str, Any]]:
    return renamed(two_queues(), {"train": LONG_JOB, "a1": "a1-" + LONG_JOB, "web": "w"}, {"a": LONG_QUEUE},
                   LONG_NS)


FORECASTS: dict[str, tuple[Any, list[str]]] = {
    "two-queues": (two_queues, []),
    "long-names": (long_two_queues, []),
    "long-names-capacity": (long_two_queues, ["--conf", "CAPACITY"]),
    "long-names-one-job": (long_two_queues, [f"{LONG_NS}/{LONG_JOB}"]),
    "gpu-booking-long": (lambda: [gpu_node("n1"), gpu_node("n2"), queue(LONG_QUEUE),
                                  *renamed(gpu_jobs("a"), {"t": LONG_JOB}, {"a": LONG_QUEUE})], []),
    "seeded-runs": (lambda: [node("n1", cpu=4), queue(LONG_QUEUE),
                             podgroup("r" * 60, queue=LONG_QUEUE, phase="Running", created=T0),
                             running(pod("r-0", "r" * 60, cpu=4, node_name="n1")),
                             podgroup(LONG_JOB, queue=LONG_QUEUE, phase="Pending", created=T0),
                             pod("w-0", LONG_JOB, cpu=4)],
                    ["--now", T0, "--assume-runtime", "{exponential: 600}", "--runs", "5", "--horizon", "2h"]),
    "never": (lambda: renamed(two_queues(), {"web": LONG_JOB * 2}, {"b": LONG_QUEUE * 2}, LONG_NS),
              ["--horizon", "5m"]),
}


@pytest.mark.parametrize("name", sorted(FORECASTS))
def test_forecast_text_fits_80_columns(tmp_path: Path, name: str) -> None:
    make, args = FORECASTS[name]
    if "CAPACITY" in args:
        conf = tmp_path / "capacity.conf"
        conf.write_text(CAPACITY)
        args = [str(conf) if a == "CAPACITY" else a for a in args]
    _, out = run("forecast", write(tmp_path / "d.yaml", make()), *args)
    assert_fits(out)
    # says what is an estimate, and cuts no name (a long one is broken across lines, not clipped)
    assert "ESTIMATES" in out and "EST. START" in out and "~" not in out
    flat = "".join(out.split())
    for o in make():
        if o["kind"] == "PodGroup" and o["status"]["phase"] != "Running":
            assert o["metadata"]["name"] in flat


DIFFS: dict[str, tuple[Any, str, Any]] = {
    "reclaim": (borrowing, "conf", CAPACITY_RECLAIM),
    "reclaim-long": (lambda: renamed(borrowing(), {"hog": "hog-" + LONG_JOB, "want": "want-" + LONG_JOB},
                                     {"b": LONG_QUEUE}, LONG_NS), "conf", CAPACITY_RECLAIM),
    "queues-long": (lambda: renamed(borrowing(), {"want": LONG_JOB * 2}, {"b": LONG_QUEUE}, LONG_NS), "queues",
                    [queue(LONG_QUEUE, weight=3, deserved={"cpu": 2, "memory": "8Gi"}),
                     queue("q-" + LONG_QUEUE * 2, weight=1)]),
}


@pytest.mark.parametrize("name", sorted(DIFFS))
def test_diff_text_fits_80_columns(tmp_path: Path, name: str) -> None:
    make, kind, proposal = DIFFS[name]
    if kind == "conf":
        path = tmp_path / "new.conf"
        path.write_text(proposal)
    else:
        path = Path(write(tmp_path / "q.yaml", proposal))
    code, out = run("diff", write(tmp_path / "d.yaml", make()), f"--{kind}", str(path))
    assert code == 3
    assert_fits(out)
    assert "~" not in out


@pytest.mark.parametrize("command", ["forecast", "diff"])
def test_help_fits_80_columns(command: str) -> None:
    assert_fits(run(command, "--help")[1])


words = st.text(alphabet=st.sampled_from("ab-/.0 "), max_size=120)


@settings(max_examples=300, deadline=None)
@given(st.lists(words, min_size=1, max_size=5), st.lists(st.integers(1, 40), min_size=4, max_size=4))
def test_rows_fit_and_keep_every_character(cells: list[str], widths: list[int]) -> None:
    if sum(w + 1 for w in widths[: len(cells) - 1]) > WIDTH - 8:
        widths = [8] * 4
    lines = rows(cells, widths[: len(cells) - 1] or [1])
    assert all(len(line) <= WIDTH for line in lines)
    assert "".join("".join(lines).split()) == "".join("".join(cells).split())


def test_blank_cells_before_a_wrapped_cell_do_not_widen_it() -> None:
    # a cell wrapped onto its own lines, then an empty cell, then one too wide for what is left:
    # the empty cell's padding must not be kept in front of the last cell's first line
    cells = ["/-", "- /0.0b", "0-0/ " * 20, "", "- /b0.a/b-/. " * 8]
    lines = rows(cells, [8, 22, 26, 12])
    assert all(len(line) <= WIDTH for line in lines)
    assert "".join("".join(lines).split()) == "".join("".join(cells).split())


@settings(max_examples=300, deadline=None)
@given(words, st.sampled_from(["", "  ", "      "]))
def test_wrap_fits_and_keeps_every_character(text: str, indent: str) -> None:
    lines = wrap(text, indent=indent)
    assert all(len(line) <= WIDTH for line in lines)
    assert "".join("".join(lines).split()) == "".join(text.split())


def test_amounts_read_without_exponents() -> None:
    assert quantity("memory", 29440 * 2**30) == "28.75Ti"
    assert quantity("cpu", 7360) == "7360" and quantity("cpu", 12345.6) == "12346"
    assert quantity("memory", 1536 * 2**20) == "1.5Gi" and quantity("nvidia.com/gpu", 0.5) == "0.5"
    # a name and its amount stay on one line
    text = "x" * 75 + " gpu 16"
    assert wrap(text) == ["x" * 75, "gpu 16"]
