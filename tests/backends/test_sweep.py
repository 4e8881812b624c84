"""`apportion sweep`: the variants, and the same numbers on Ray as with --local."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from svc_ray import RayCluster

from apportion.backends.sweep import run_sweep, variants, write_report
from apportion.cli import main
from apportion.errors import InputError


def test_every_combination_in_order() -> None:
    got = variants(["run.seed=0..2", "run.horizon=60,120"])
    assert len(got) == 6 and got[0] == (("run.seed", "0"), ("run.horizon", "60"))
    assert got[1] == (("run.seed", "0"), ("run.horizon", "120"))
    for bad in ("seed=1", "run.seed=3..1", "run.seed=a..b", "scheduler=/no/such.conf", "run.horizon=x"):
        with pytest.raises(InputError):
            variants([bad])


def test_bad_vary_exits_2_with_one_line() -> None:
    r = CliRunner().invoke(main, ["sweep", "--local", "--vary", "nope=1"])
    assert r.exit_code == 2 and "--vary" in r.output and len(r.output.strip().splitlines()) == 1


@pytest.mark.slow
def test_four_variants_give_the_same_numbers_on_ray_and_locally(ray_cluster: RayCluster, tmp_path: Path) -> None:
    todo = variants(["run.seed=0..1", "run.horizon=300,600"])
    assert len(todo) == 4
    seen: list[int] = []
    on_ray = run_sweep("", todo, local=False, progress=lambda d, t, v: seen.append(d))
    local = run_sweep("", todo, local=True)
    assert on_ray == local
    assert seen == [1, 2, 3, 4]
    # the variants differ: the sweep really varied something
    assert len({str(s) for s in local}) > 1
    report = write_report(tmp_path / "r", todo, local)
    text = report.read_text()
    assert "run.seed=1 run.horizon=600" in text and (tmp_path / "r" / "table.csv").exists()
    assert any((tmp_path / "r" / "plots").glob("*.png"))
