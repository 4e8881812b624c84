"""`apportion diff`: queue changes, jobs that start or keep waiting, the eviction preview, exit 0/3/2."""

from __future__ import annotations

import json

from click.testing import CliRunner
from dumps import T0, running, two_queues, write

from apportion.cli import main

from k8s import node, pod, podgroup, queue

CAPACITY_RECLAIM = """actions: "enqueue, allocate, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: capacity
"""


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, list(args))
    return res.exit_code, res.stdout, res.stderr


def borrowing() -> list[dict]:
    """One 8-cpu node; queue b (deserved 2) borrows 6 cpu; queue a (deserved 6) has a job waiting."""
    return [node("n1", cpu=8),
            queue("a", deserved={"cpu": 6, "memory": "8Gi"}), queue("b", deserved={"cpu": 2, "memory": "8Gi"}),
            podgroup("hog", queue="b", phase="Running", created=T0),
            *[running(pod(f"hog-{i}", "hog", cpu=2, node_name="n1")) for i in range(4)],
            podgroup("want", queue="a", phase="Inqueue", created=T0), pod("want-0", "want", cpu=4)]


def test_same_configuration_exit_0(tmp_path) -> None:
    dump = write(tmp_path / "d.yaml", two_queues())
    conf = tmp_path / "same.conf"
    from apportion.framework.conf import DEFAULT_CONF_YAML

    conf.write_text(DEFAULT_CONF_YAML)
    code, out, _ = run("diff", dump, "--conf", str(conf), "-o", "json")
    d = json.loads(out)
    assert code == 0 and d["changed"] is False and d["queues"] == [] and d["evictions"] == []
    assert {j["job"]: (j["current"], j["proposed"]) for j in d["jobs"]} == {
        "ns/train": ("waits", "waits"), "ns/web": ("waits", "waits")}
    code, out, _ = run("diff", dump, "--conf", str(conf))
    assert code == 0 and "no change (exit status 0)" in out


def test_eviction_preview_under_reclaim(tmp_path) -> None:
    dump = write(tmp_path / "d.yaml", borrowing())
    conf = tmp_path / "new.conf"
    conf.write_text(CAPACITY_RECLAIM)
    code, out, _ = run("diff", dump, "--conf", str(conf), "-o", "json")
    d = json.loads(out)
    assert code == 3 and d["changed"]
    # want (4 cpu) is owed 6 cpu by queue a's deserved; b holds 8 with deserved 2: reclaim evicts two of
    # hog's 2-cpu pods (the node is full), and want is pipelined onto the space they free
    assert [(e["pod"], e["job"], e["queue"], e["reason"], e["alsoUnderCurrent"]) for e in d["evictions"]] == [
        ("ns/hog-2", "ns/hog", "b", "reclaim", False), ("ns/hog-3", "ns/hog", "b", "reclaim", False)]
    assert d["jobs"] == [{"job": "ns/want", "queue": "a", "current": "waits", "proposed": "pipelined",
                          "changed": True}]
    code, out, _ = run("diff", dump, "--conf", str(conf))
    assert code == 3 and "eviction preview" in out and max(map(len, out.splitlines())) <= 80


def test_queue_file_changes_shares(tmp_path) -> None:
    dump = write(tmp_path / "d.yaml", borrowing())
    # the default conf's proportion plugin divides by weight (spec.deserved is capacity's)
    qs = write(tmp_path / "q.yaml", [queue("b", weight=3, deserved={"cpu": 2, "memory": "8Gi"})])
    code, out, _ = run("diff", dump, "--queues", qs, "-o", "json")
    d = json.loads(out)
    assert code == 3
    fields = {(q["queue"], q["field"]) for q in d["queues"]}
    assert ("b", "deserved") in fields and ("b", "share") in fields


def test_bad_input(tmp_path) -> None:
    dump = write(tmp_path / "d.yaml", borrowing())
    code, _, err = run("diff", dump)
    assert code == 2 and "give the proposal" in err
    code, _, err = run("diff", dump, "--queues", dump)
    assert code == 2 and "expected only Queue objects, found kind 'Node'" in err
    bad = tmp_path / "bad.conf"
    bad.write_text("actions: [\n")
    c1, _, e1 = run("cycle", dump, "--conf", str(bad))
    c2, _, e2 = run("diff", dump, "--conf", str(bad))
    assert c1 == c2 == 2 and e1 == e2
