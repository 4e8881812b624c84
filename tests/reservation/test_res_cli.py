"""`apportion plan replay`: the shared examples, JSON output, readable output, bad input (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from apportion.cli import main

#: shared/ sits beside the clone (as in CI), never inside it
EXAMPLES = Path(__file__).resolve().parents[3] / "shared" / "examples-plan"
SEED = {
    "plan": {"queue": "dedicated", "capacity": {"memory": 2048, "vCores": 2}, "policy": {"type": "NoOverCommit"},
             "replanner": None, "agent": "greedy"},
    "steps": [],
}


def run(tmp_path, doc, *extra, raw: str | None = None):
    p = tmp_path / "case.json"
    p.write_text(raw if raw is not None else json.dumps(doc))
    return CliRunner().invoke(main, ["plan", "replay", str(p), *extra])


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason="shared examples not present")
@pytest.mark.parametrize("name", ["seed-greedy", "seed-aligned-left"])
def test_shared_examples(name):
    r = CliRunner().invoke(main, ["plan", "replay", str(EXAMPLES / name / "case.json"), "--output", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    want = json.loads((EXAMPLES / name / "expect.json").read_text())
    assert len(out["steps"]) == len(want["steps"])
    sub = out["steps"][3]
    assert sub["status"] == 202 and sub["allocations"] == want["steps"][3]["allocations"]
    assert out["steps"][4] == {"op": "assertCommitted", **{k: v for k, v in want["steps"][4].items() if k != "op"}}


def test_json_and_text_outputs(tmp_path):
    doc = dict(SEED, steps=[
        {"op": "newReservation", "user": "bob"},
        {"op": "submit", "user": "bob", "expect": {"ignored": True}, "body": {
            "queue": "root.dedicated", "reservation-id": "reservation_1700000000000_0001",
            "reservation-definition": {"arrival": 0, "deadline": 5000, "reservation-requests": {
                "reservation-request-interpreter": 1,
                "reservation-request": {"capability": {"memory": 1024, "vCores": 1}, "num-containers": 2,
                                        "min-concurrency": 1, "duration": 2000}}}}},
        {"op": "list", "user": "bob", "query": {"queue": "dedicated", "include-resource-allocations": "true"}},
        {"op": "assertAvailable", "user": "bob", "start": 0, "end": 5000},
        {"op": "getReservations", "reservationId": None, "interval": [0, 100], "user": ""},
        {"op": "planFollower"},
        {"op": "submitApp", "appId": "a1", "user": "bob", "queue": "reservation_1700000000000_0001"},
        {"op": "submitApp", "appId": "a2", "user": "bob", "queue": "nope"},
        {"op": "appFinished", "appId": "a1"},
        {"op": "advanceTime", "to": 10_000},
        {"op": "archive", "tick": 10_000},
        {"op": "replan"},
        {"op": "assertPlan"},
    ])
    r = run(tmp_path, doc, "--output", "json")
    assert r.exit_code == 0, r.output
    steps = json.loads(r.output)["steps"]
    assert [s["op"] for s in steps] == [s["op"] for s in doc["steps"]]
    assert steps[0]["body"]["reservation-id"].startswith("reservation_")
    assert steps[1]["status"] == 202 and steps[1]["exists"] is True
    assert steps[2]["body"]["reservations"][0]["resource-allocations"]
    assert steps[3]["steps"][0][0] == 0
    assert steps[4]["ids"] == ["reservation_1700000000000_0001"]
    # the seed's agent placed both containers at the end ([3000, 5000)): active at 0, holding nothing yet
    assert steps[5]["queues"]["reservation_1700000000000_0001"]["capacity"] == 0.0
    assert steps[5]["queues"]["dedicated-default"]["capacity"] == 1.0
    assert steps[6]["accepted"] is True and steps[7]["accepted"] is False
    assert steps[8] == {"op": "appFinished", "found": True}
    assert steps[10]["archived"] == ["reservation_1700000000000_0001"]
    assert steps[12]["reservationCount"] == 0 and steps[12]["lastEndTime"] == -1
    # deterministic bytes
    assert run(tmp_path, doc, "--output", "json").output == r.output
    text = run(tmp_path, doc)
    assert text.exit_code == 0 and "[1] submit" in text.output and "|" in text.output


@pytest.mark.parametrize(
    "doc, raw, where",
    [
        (None, "{not json", "invalid JSON"),
        ({"steps": []}, None, "'plan'"),
        ({"plan": SEED["plan"]}, None, "'steps'"),
        (dict(SEED, steps=[{"op": "frobnicate"}]), None, "steps[0]"),
        (dict(SEED, steps=[{"op": "advanceTime", "to": "soon"}]), None, "'to'"),
        (dict(SEED, steps=[{"op": "assertPlan"}, {"op": "addAllocation", "user": "a"}]), None, "steps[1]"),
        (dict(SEED, steps=[{"noop": 1}]), None, "'op'"),
        (dict(SEED, plan=dict(SEED["plan"], agent="clever")), None, "agent"),
        (dict(SEED, plan=dict(SEED["plan"], capacity={"memory": "lots", "vCores": 1})), None, "memory"),
        (dict(SEED, steps=[{"op": "addAllocation", "user": "a", "reservationId": "reservation_1_1",
                            "startTime": 0, "endTime": 10, "allocations": [{"start": 0, "end": "x"}]}]), None, "end"),
    ],
)
def test_bad_input_exits_2_without_traceback(tmp_path, doc, raw, where):
    r = run(tmp_path, doc, "--output", "json", raw=raw)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    assert where in r.output
    assert "case.json" in r.output


def test_missing_file_exits_2(tmp_path):
    r = CliRunner().invoke(main, ["plan", "replay", str(tmp_path / "nope.json")])
    assert r.exit_code == 2 and "nope.json" in r.output


def test_rest_failures_are_observations_not_errors(tmp_path):
    doc = dict(SEED, steps=[
        {"op": "submit", "user": None, "body": {}},
        {"op": "submit", "user": "bob", "body": {"queue": "dedicated"}},
        {"op": "update", "user": "bob", "body": 7},
        {"op": "delete", "user": "bob", "body": {"reservation-id": "nonsense"}},
        {"op": "addAllocation", "user": None, "reservationId": "reservation_1_1", "startTime": 0, "endTime": 10,
         "allocations": []},
        {"op": "deleteAllocation", "reservationId": "reservation_1_2"},
    ])
    r = run(tmp_path, doc, "--output", "json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)["steps"]
    assert [x.get("status") for x in s[:4]] == [401, 400, 400, 404]
    assert s[3]["exists"] is False
    assert s[4] == {"op": "addAllocation", "accepted": False, "error": "IllegalArgument",
                    "message": "The specified Reservation with ID reservation_1_0001 is not mapped to any user"}
    assert s[5]["error"] == "DoesNotExist"


@pytest.mark.parametrize("agent", ["aligned-left", "aligned-right", "greedy-left", "greedy-right", "greedy"])
def test_replay_with_a_deadline_at_long_max_finishes(tmp_path, agent):
    """Issue 14 item 12: `"deadline": 9223372036854775807` under aligned-left grew past 11 GB
    (aligned-right: IndexError); every agent now answers from the plan's change points."""
    body = {"queue": "dedicated", "reservation-id": "reservation_1_0001", "reservation-definition": {
        "arrival": 0, "deadline": 9223372036854775807, "reservation-requests": {
            "reservation-request-interpreter": 1, "reservation-request": [
                {"capability": {"memory": 1024, "vCores": 1}, "num-containers": 2, "min-concurrency": 1,
                 "duration": 1000}]}}}
    doc = {"plan": {"queue": "dedicated", "capacity": {"memory": 8192, "vCores": 8}, "agent": agent},
           "steps": [{"op": "submit", "user": "u", "body": body}]}
    r = run(tmp_path, doc, "--output", "json")
    assert r.exit_code == 0, r.output
    step = json.loads(r.output)["steps"][0]
    assert step["status"] == 202
    assert sum((a["end"] - a["start"]) * a["resource"]["memory"] for a in step["allocations"]) == 2 * 1000 * 1024
