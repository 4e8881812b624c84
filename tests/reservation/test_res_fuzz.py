"""Bad input never escapes as a traceback: handlers answer an HTTP status, the command exits 0 or 2."""

from __future__ import annotations

import copy
import json
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from res_helpers import C1, body, system

from apportion.cli import main

junk = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.text(max_size=6),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path inside a JSON document (list indexes included)."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, prefix + (i,))
    return out


def _set(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    cur = doc
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return doc


VALID = body(1, 0, 20_000, [(C1, 2, 1, 3000), ((2048, 2), 2, 2, 2000)], interpreter=2)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), op=st.sampled_from(["submit", "update", "delete"]))
def test_handlers_answer_every_malformed_body_with_a_status(data, op):
    s = system("greedy-left")
    assert s.submit("bob", copy.deepcopy(VALID))[0] == 202
    b = copy.deepcopy(VALID)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(b)))
        b = _set(b, path, data.draw(junk))
    status, resp = getattr(s, op)("bob", b)
    assert status in (200, 202, 400, 404)
    if status >= 400:
        ex = resp["RemoteException"]
        assert ex["message"] and "Traceback" not in ex["message"]
        assert ex["exception"] in ("BadRequestException", "IOException")


PLAN = {"queue": "dedicated", "capacity": {"memory": 8192, "vCores": 8}, "agent": "greedy"}
STEPS = [
    {"op": "submit", "user": "bob", "body": VALID},
    {"op": "addAllocation", "user": "u", "reservationId": "reservation_1_9", "startTime": 0, "endTime": 1000,
     "allocations": [{"start": 0, "end": 1000, "resource": {"memory": 1024, "vCores": 1}}]},
    {"op": "assertCommitted", "points": [0, [500, "x"]]},
    {"op": "advanceTime", "to": 10},
    {"op": "assertAvailable", "user": "bob", "start": 0, "end": 5000},
    {"op": "archive", "tick": 5},
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_replay_exits_0_or_2_and_never_shows_a_traceback(tmp_path_factory, data):
    doc = {"plan": copy.deepcopy(PLAN), "steps": copy.deepcopy(STEPS)}
    for _ in range(data.draw(st.integers(1, 2))):
        path = data.draw(st.sampled_from(_paths(doc)[1:]))
        doc = _set(doc, path, data.draw(st.one_of(junk, st.just("frobnicate"))))
    p = tmp_path_factory.mktemp("fuzz") / "case.json"
    p.write_text(json.dumps(doc))
    r = CliRunner().invoke(main, ["plan", "replay", str(p), "--output", "json"])
    assert r.exit_code in (0, 2), (r.output, r.exception)
    assert "Traceback" not in r.output
    if r.exit_code == 2:
        assert "case.json" in r.output
    else:
        assert len(json.loads(r.output)["steps"]) == len(doc["steps"])
