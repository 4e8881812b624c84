"""What `apportion submit` and `apportion.ray.submit` send: the job's objects, and bad input refused
with one line (exit status 2)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from apportion.backends.ray_jobs import COMMAND_KEY, decode_payload, function_payload, job_objects
from apportion.backends.ray_resources import kube_resources, parse_resources, ray_options
from apportion.cli import main


def test_resources_go_both_ways_between_ray_and_kubernetes() -> None:
    req = parse_resources("cpu=2,GPU=1,memory=4Gi,ssd=1")
    assert req == {"cpu": "2", "nvidia.com/gpu": "1", "memory": "4Gi", "ray.io/ssd": "1"}
    assert ray_options(req) == {"num_cpus": 2.0, "num_gpus": 1.0, "memory": 4 * 1024**3, "resources": {"ssd": 1.0}}
    node = kube_resources({"CPU": 4.0, "GPU": 1.0, "memory": 1e9, "object_store_memory": 1e8,
                           "node:127.0.0.1": 1.0, "ssd": 0.5})
    assert node == {"cpu": "4", "nvidia.com/gpu": "1", "memory": "1000000000", "ray.io/ssd": "500m"}


def test_a_job_is_a_podgroup_and_its_pods() -> None:
    objs = job_objects("j", "ns", "q", 3, 2, {"cpu": "2"}, {COMMAND_KEY: json.dumps(["echo", "hi"])}, "r1")
    pg, pods = objs[0], objs[1:]
    assert pg["spec"] == {"queue": "q", "minMember": 2, "minResources": {"cpu": "4"}}
    assert pg["metadata"]["annotations"] == {"apportion.io/reservation": "r1"}
    assert [p["metadata"]["name"] for p in pods] == ["j-0", "j-1", "j-2"]
    assert decode_payload(pods[0]["metadata"]["annotations"]) == ("command", ["echo", "hi"])


def test_a_function_travels_with_its_arguments() -> None:
    kind, (fn, args) = decode_payload(function_payload(divmod, (7, 2)))
    assert kind == "function" and fn(*args) == (3, 1)


def test_bad_submit_input_exits_2_with_one_line() -> None:
    runner = CliRunner()
    for argv, where in ((["--resources", "cpu"], "--resources"), (["--resources", "cpu=x"], "--resources"),
                        (["--tasks", "2", "--min-member", "3"], "--min-member"), ([], "submit")):
        extra = [] if where == "submit" else ["--", "true"]
        r = runner.invoke(main, ["submit", *argv, *extra])
        assert r.exit_code == 2, (argv, r.output)
        assert where in r.output and len(r.output.strip().splitlines()) == 1


def test_submit_to_a_server_that_is_not_there_exits_2() -> None:
    r = CliRunner().invoke(main, ["submit", "--server", "http://127.0.0.1:9", "--", "true"])
    assert r.exit_code == 2 and "cannot reach the server" in r.output
