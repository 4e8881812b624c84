"""`apportion forecast`: the answer, its basis, its JSON shape, 80 columns, and bad input (exit 2)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from dumps import T0, running, two_queues, write

from apportion.cli import main
from apportion.engine import cycle_files

from k8s import node, pod, podgroup, queue


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


def test_start_times_follow_the_annotations(tmp_path) -> None:
    dump = write(tmp_path / "d.yaml", two_queues())
    code, out, _ = run("forecast", dump, "--no-fits", "-o", "json")
    assert code == 0
    fc = json.loads(out)
    # now: the newest timestamp in the dump (train's and web's creation)
    assert fc["now"] == "2026-01-01T00:01:00Z"
    jobs = {j["job"]: j for j in fc["jobs"]}
    # a1-0 ends at 00:05 (expected-end) and frees 3 cpu on n1: train's 4 × 1 cpu gang needs 4, n1 then has
    # 8 - 4 (big-0) = 4 free, so train starts in the session at 00:05
    assert jobs["ns/train"]["start"] == "2026-01-01T00:05:00Z" and jobs["ns/train"]["startIn"] == 240.0
    # web (2 cpu, queue b) waits for big-0: duration 600 s from its start at 00:00 -> 00:10; by then train
    # holds n1's free 4 cpu, and n2 has 8 - 4 - 3 = 1, so web needs big-0's node: 00:10
    assert jobs["ns/web"]["start"] == "2026-01-01T00:10:00Z"
    assert fc["basis"]["pods"] == {"duration": 2, "expected-end": 2}
    assert fc["estimate"] is True
    assert set(jobs["ns/train"]) >= {"job", "start", "startIn", "basis", "fits"}


def test_first_session_is_the_cycle(tmp_path) -> None:
    objs = two_queues() + [node("n3", cpu=4), podgroup("now", queue="b", phase="Pending", created=T0),
                           pod("now-0", "now", cpu=3)]
    dump = write(tmp_path / "d.yaml", objs)
    bound = {k.split("/")[1].rsplit("-", 1)[0] for k in cycle_files([dump]).binds}
    code, out, _ = run("forecast", dump, "--no-fits", "-o", "json")
    starts_now = {j["job"].split("/")[1] for j in json.loads(out)["jobs"] if j["startIn"] == 0}
    assert bound == starts_now == {"now"}


def test_assumed_runtime_and_distribution(tmp_path) -> None:
    objs = [node("n1", cpu=4), queue("q"),
            podgroup("r", queue="q", phase="Running", created=T0),
            running(pod("r-0", "r", cpu=4, node_name="n1")),
            podgroup("w", queue="q", phase="Pending", created=T0), pod("w-0", "w", cpu=4)]
    dump = write(tmp_path / "d.yaml", objs)
    code, out, _ = run("forecast", dump, "--no-fits", "-o", "json")
    fc = json.loads(out)
    assert fc["jobs"][0]["start"] is None and fc["basis"]["pods"] == {"unknown": 1}
    # r-0 started at now: assumed 1h in all -> it ends at now + 3600
    code, out, _ = run("forecast", dump, "--no-fits", "--now", T0, "--assume-runtime", "1h", "-o", "json")
    fc = json.loads(out)
    assert fc["jobs"][0]["startIn"] == 3600.0 and fc["basis"]["pods"] == {"assumed": 1}
    assert "interval80" not in fc["jobs"][0]
    # a distribution: 20 seeded runs, the median and the 80 % interval
    args = ["forecast", dump, "--no-fits", "--now", T0, "--assume-runtime", "{exponential: 600}", "-o", "json"]
    code, out, _ = run(*args)
    job = json.loads(out)["jobs"][0]
    assert job["runs"] == 20 and job["startedRuns"] == 20
    assert job["interval80"]["fromIn"] <= job["startIn"] <= job["interval80"]["toIn"]
    assert job["interval80"]["fromIn"] < job["interval80"]["toIn"]
    assert run(*args)[1] == out  # seeded: the same answer again


def test_table_fits_80_columns_and_says_estimate(tmp_path) -> None:
    objs = two_queues()
    objs[-4]["metadata"]["name"] = "a-podgroup-with-a-rather-long-name-indeed"
    for o in objs:
        if o["kind"] == "Pod" and o["metadata"]["name"].startswith("train"):
            o["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = objs[-4]["metadata"]["name"]
    code, out, _ = run("forecast", write(tmp_path / "d.yaml", objs))
    assert code == 0
    assert "ESTIMATES" in out and "would start sooner with one of" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_a_later_gpu_booking_fits_80_columns_and_says_estimate(tmp_path) -> None:
    from test_reserve import gpu_jobs, gpu_node

    objs = [gpu_node("n1"), gpu_node("n2"), queue("a"), *gpu_jobs("a")]
    code, out, _ = run("forecast", write(tmp_path / "d.yaml", objs), "ns/t")
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    text = " ".join(line.strip() for line in out.splitlines())
    assert "book 1 x (cpu 2, memory 1Gi, gpu 8) in a cluster plan from 00:30:00 UTC (in 30m, an estimate)" \
        " for 2h" in text


@pytest.mark.parametrize(("args", "needle"), [
    (["ns/big"], "job ns/big is not pending: 2 of its 2 pods hold nodes"),
    (["ns/nope"], "job 'ns/nope' does not exist in the cluster state"),
    (["--now", "yesterday"], "--now: not an RFC 3339 time: 'yesterday'"),
    (["--assume-runtime", "soon"], "--assume-runtime: not a duration: 'soon'"),
    (["--assume-runtime", "{exponentail: 3}"], "--assume-runtime: not a distribution"),
    (["--horizon", "-5"], "--horizon: a duration must be"),
])
def test_bad_input_exit_2(tmp_path, args: list[str], needle: str) -> None:
    code, out, err = run("forecast", write(tmp_path / "d.yaml", two_queues()), *args)
    assert code == 2 and needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bad_conf_gives_the_cycle_error(tmp_path) -> None:
    dump = write(tmp_path / "d.yaml", two_queues())
    bad = tmp_path / "bad.conf"
    bad.write_text("actions: 'enqueue, allocate'\ntiers:\n- plugins:\n  - {name: gang, enableJobOrder: maybe}\n")
    c1, _, e1 = run("cycle", dump, "--conf", str(bad))
    c2, _, e2 = run("forecast", dump, "--conf", str(bad))
    assert c1 == c2 == 2 and e1 == e2 and str(bad) in e2
    bad.write_text("actions: [\n")
    assert run("cycle", dump, "--conf", str(bad))[2] == run("forecast", dump, "--conf", str(bad))[2]


def test_no_timestamp_needs_now(tmp_path) -> None:
    objs = [node("n1"), queue("q"), podgroup("w", queue="q"), pod("w-0", "w")]
    code, _, err = run("forecast", write(tmp_path / "d.yaml", objs))
    assert code == 2 and "give --now" in err


def test_library_entry_for_the_service() -> None:
    from apportion.errors import InputError
    from apportion.forecast.api import forecast_job
    from apportion.kube import build_snapshot

    def snap():
        return build_snapshot([(f"doc {i}", o) for i, o in enumerate(two_queues())])

    fc = forecast_job(snap(), "ns", "train")
    assert [j.job for j in fc.jobs] == ["ns/train"] and fc.jobs[0].start_in == 240.0
    assert fc.jobs[0].fits and all(f.to_json()["change"] for f in fc.jobs[0].fits)
    with pytest.raises(InputError, match="not pending"):
        forecast_job(snap(), "ns", "big")


def test_the_live_state_cache_gives_the_same_forecast() -> None:
    """The seam: the cluster-state cache's snapshot forecasts exactly as the dump it was fed."""
    from apportion.forecast.api import forecast_snapshot
    from apportion.kube import build_snapshot
    from apportion.state.cache import SchedulerCache

    objs = [(f"doc {i}", o) for i, o in enumerate(two_queues())]
    cache = SchedulerCache.from_objects(objs)
    from_cache = forecast_snapshot(cache.snapshot()).to_json()
    assert from_cache == forecast_snapshot(build_snapshot(objs)).to_json()
    assert [j["startIn"] for j in from_cache["jobs"]] == [240.0, 540.0]


def test_a_pod_being_deleted_frees_its_node_by_the_next_session(tmp_path) -> None:
    objs = [node("n1", cpu=4), queue("q"),
            podgroup("old", queue="q", phase="Running", created=T0),
            running(pod("old-0", "old", cpu=4, node_name="n1", deleting=True)),
            podgroup("w", queue="q", phase="Pending", created=T0), pod("w-0", "w", cpu=4)]
    dump = write(tmp_path / "d.yaml", objs)
    code, out, _ = run("forecast", dump, "--no-fits", "--assume-runtime", "1h", "-o", "json")
    fc = json.loads(out)
    assert fc["basis"]["pods"] == {"releasing": 1} and "being deleted" in fc["basis"]["summary"]
    # pipelined onto the releasing pod's space in the session at now, bound one period later
    assert fc["jobs"][0]["startIn"] == 1.0
