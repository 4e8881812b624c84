"""`apportion shadow`: a watch stream into the cache, sessions on stream time, decisions as JSON lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml
from click.testing import CliRunner

from apportion.cli import main

import k8s

DEMO = Path(__file__).resolve().parents[2] / "src" / "apportion" / "data" / "demo-snapshot.yaml"


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def _events_and_final() -> tuple[list[dict], list[dict]]:
    """A stream over the demo cluster with updates, deletes and out-of-order events, and the objects
    it leaves, in the cache's order."""
    objs = [d for d in yaml.safe_load_all(DEMO.read_text()) if d]
    pods = [o for o in objs if o["kind"] == "Pod"]
    events = [{"type": "ADDED", "object": o} for o in objs if o is not pods[0]]
    final = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objs if o is not pods[0]}
    # MODIFIED before ADDED, then a real update of another pod, then a delete
    events.append({"type": "MODIFIED", "object": pods[0]})
    final[("Pod", pods[0]["metadata"].get("namespace"), pods[0]["metadata"]["name"])] = pods[0]
    bigger = json.loads(json.dumps(pods[1]))
    bigger["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    events.append({"type": "MODIFIED", "object": bigger})
    final[("Pod", bigger["metadata"].get("namespace"), bigger["metadata"]["name"])] = bigger
    events.append({"type": "DELETED", "object": pods[2]})
    del final[("Pod", pods[2]["metadata"].get("namespace"), pods[2]["metadata"]["name"])]
    return events, list(final.values())


def test_once_prints_what_cycle_prints_for_the_final_objects(tmp_path: Path) -> None:
    events, final = _events_and_final()
    stream = tmp_path / "watch.json"
    # indented values and JSON lines mixed, as a recorded stream may be
    stream.write_text("".join(json.dumps(e, indent=2 if i % 2 else None) + "\n" for i, e in enumerate(events)))
    dump = tmp_path / "final.yaml"
    dump.write_text(yaml.safe_dump_all(final, sort_keys=False))
    code, out, err = _run("shadow", str(stream), "--once")
    assert code == 0, err
    c_code, c_out, _ = _run("cycle", "-o", "json", str(dump))
    assert c_code == 0 and out == c_out
    assert "before it was ADDED; treated as ADDED" in err


def test_malformed_line_exits_2_naming_line_and_field(tmp_path: Path) -> None:
    stream = tmp_path / "watch.json"
    lines = [{"type": "ADDED", "object": k8s.node("n1")}, {"type": "ADDED", "object": k8s.queue("q")},
             {"type": "ADDED", "object": {"kind": "Pod", "metadata": {"namespace": "ns"}}},
             {"type": "ADDED", "object": k8s.node("n2")}]
    stream.write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, out, err = _run("shadow", str(stream), "--once")
    assert code == 2 and out == ""
    assert err.strip() == (f"apportion: error: {stream}: line 3: object.metadata.name: "
                           "required field is missing or empty")
    bad_field = k8s.pod("p", None)
    bad_field["spec"]["priority"] = "high"
    stream.write_text(json.dumps({"type": "ADDED", "object": k8s.node("n1")}) + "\n\n"
                      + json.dumps({"type": "ADDED", "object": bad_field}) + "\n")
    code, _, err = _run("shadow", str(stream), "--once")
    assert code == 2 and err.strip() == f"apportion: error: {stream}: line 3: spec.priority: expected an integer, got 'high'"
    stream.write_text('{"type": "ADDED", "object": {"kind": "Node",\n')
    code, _, err = _run("shadow", str(stream), "--once")
    assert code == 2 and err.strip() == f"apportion: error: {stream}: line 1: unexpected end of stream inside a JSON value"


def test_keep_going_skips_and_says_so(tmp_path: Path) -> None:
    stream = tmp_path / "watch.json"
    stream.write_text("\n".join([
        json.dumps({"type": "ADDED", "object": k8s.node("n1")}),
        '{"type": "ADDED", "object": nonsense}',
        json.dumps({"type": "REPLACED", "object": k8s.node("n2")}),
        json.dumps({"type": "ADDED", "object": k8s.queue("q")}),
        json.dumps({"type": "ADDED", "object": k8s.podgroup("g", "q")}),
        json.dumps({"type": "ADDED", "object": k8s.pod("p", "g")}),
    ]) + "\n")
    code, out, err = _run("shadow", str(stream), "--once", "--keep-going")
    assert code == 0, err
    assert json.loads(out)["binds"] == {"ns/p": "n1"}
    assert f"{stream}: line 2: malformed JSON at column 29" in err
    assert f"{stream}: line 3: type: expected ADDED, MODIFIED or DELETED, got 'REPLACED'; skipped" in err
    assert "2 malformed event(s) skipped" in err


def test_sessions_follow_stream_time(tmp_path: Path) -> None:
    stream = tmp_path / "watch.json"
    evs = [(0.0, k8s.node("n1", cpu=2)), (0.1, k8s.queue("q")), (0.2, k8s.podgroup("a", "q")),
           (0.3, k8s.pod("a0", "a", cpu=1)),
           (1.5, k8s.podgroup("b", "q")), (1.6, k8s.pod("b0", "b", cpu=1)),
           (4.0, k8s.podgroup("c", "q")), (4.1, k8s.pod("c0", "c", cpu=1))]
    stream.write_text("".join(json.dumps({"type": "ADDED", "object": o, "time": t}) + "\n" for t, o in evs))
    code, out, err = _run("shadow", str(stream), "--period", "1")
    assert code == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    # a session before the first event a period after the first unseen one, and one at the end
    assert [(x["session"], x["time"], x["applied"]) for x in lines] == [(1, 1.5, 4), (2, 4.0, 6), (3, 4.1, 8)]
    # without --apply the shadow only watches: a pending pod is proposed again every session
    assert [x["binds"] for x in lines] == [{"ns/a0": "n1"}, {"ns/a0": "n1", "ns/b0": "n1"},
                                           {"ns/a0": "n1", "ns/b0": "n1"}]
    code, out, _ = _run("shadow", str(stream), "--period", "1", "--apply")
    applied = [json.loads(x)["binds"] for x in out.splitlines()]
    assert applied == [{"ns/a0": "n1"}, {"ns/b0": "n1"}, {}]  # n1 is full when c0 comes


def test_a_pause_in_a_pipe_runs_a_session() -> None:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", "from apportion.cli import main; main()", "shadow", "-",
                             "--period", "0.3"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    for o in (k8s.node("n1"), k8s.queue("q"), k8s.podgroup("g", "q"), k8s.pod("p", "g")):
        proc.stdin.write((json.dumps({"type": "ADDED", "object": o}) + "\n").encode())
    proc.stdin.flush()
    t0 = time.monotonic()
    first = proc.stdout.readline()  # printed while the pipe is still open: the pause ran the session
    assert time.monotonic() - t0 < 20
    assert json.loads(first)["binds"] == {"ns/p": "n1"}
    proc.stdin.close()
    proc.wait(timeout=20)
    assert proc.returncode == 0
