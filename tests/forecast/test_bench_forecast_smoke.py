"""Tiny versions of the forecast benchmarks, so they cannot rot while `make bench` is out of `make test`."""

from __future__ import annotations


def test_forecast_smoke_forecasts_a_waiting_job() -> None:
    from benchmarks import bench_forecast

    (r,) = bench_forecast.run(smoke=True).values()
    assert r["pending_jobs"] > 0 and r["running_pods"] > 0 and r["starts_in_s"] is not None


def test_forecast_error_study_on_a_small_scenario(tmp_path) -> None:
    from benchmarks import bench_forecast
    from test_forecast_accuracy import HIERARCHY

    path = tmp_path / "s.yaml"
    path.write_text(HIERARCHY + "run: {horizon: 1500}\n")
    out = bench_forecast.philly_errors(instants=3, path=path, horizon=1500)
    # exact runtimes and no arrivals after the instants here: every forecast is exact
    for label in ("without_arrivals", "with_arrivals"):
        r = out[label]
        assert r["jobs"] > 0 and r["exact"] == r["jobs"] and r["p90_error_s"] == 0.0
        assert r["forecast_but_later"] == r["missed"] == 0


def test_fits_smoke_counts_the_checks() -> None:
    from benchmarks import bench_forecast

    known = bench_forecast.measure_fits(bench_forecast.SMOKE["forecast-smoke"])
    unknown = bench_forecast.measure_fits(bench_forecast.SMOKE["forecast-smoke"], known=False)
    assert known["fits"] == unknown["fits"]
    assert known["check_sessions"] < unknown["check_sessions"] and known["check_sessions"] > 0
