"""What would make a job fit: the suggestions, and (property) each one applied to the cluster objects
makes the job start in the next session, checked by `apportion cycle`'s own path (YAML objects in)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from unittest import mock

from dumps import T0, running
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import apportion.forecast.sim as fsim
from apportion.engine import prepare, resolve_conf, run_cycle
from apportion.forecast.apply import apply_change
from apportion.forecast.start import StartState, start_state
from apportion.forecast.suggest import suggest
from apportion.framework.conf import parse_conf
from apportion.kube import build_snapshot

from k8s import node, pod, podgroup, queue

NOW = datetime(2026, 1, 1, tzinfo=UTC)
CAPACITY = """actions: "enqueue, allocate, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: capacity
"""


def snap_of(objs: list[dict[str, Any]]):
    return build_snapshot([(f"doc {i}", o) for i, o in enumerate(objs)])


def start_of(objs: list[dict[str, Any]], conf_text: str | None = None) -> StartState:
    """The forecast's start state of a dump's objects at NOW, under the conf (default: the dump's,
    else Volcano's), as `forecast_snapshot` makes it."""
    snap = snap_of(objs)
    conf = resolve_conf(snap, parse_conf(conf_text) if conf_text else None)
    prepare(snap, conf)
    return start_state(snap, conf, NOW)


def suggestions(objs: list[dict[str, Any]], uid: str, conf_text: str | None = None, keep: int = 10):
    state = start_of(objs, conf_text)
    return suggest(state, uid, keep=keep), state.conf


def starts(objs: list[dict[str, Any]], uid: str, conf) -> bool:
    snap = snap_of(objs)
    job = snap.jobs[uid]
    need = max(1, job.min_available)
    res = run_cycle(snap, conf)
    return sum(1 for t in job.tasks.values() if t.key in res.binds) >= need


def capped() -> list[dict[str, Any]]:
    return [node("n1", cpu=8), node("n2", cpu=8), queue("a", capability={"cpu": 4}), queue("b"),
            podgroup("a1", queue="a", phase="Running", created=T0), running(pod("a1-0", "a1", cpu=3, node_name="n1")),
            podgroup("b1", queue="b", phase="Running", created=T0), running(pod("b1-0", "b1", cpu=6, node_name="n2")),
            podgroup("t", queue="a", min_member=2, phase="Pending", created=T0),
            pod("t-0", "t", cpu=1), pod("t-1", "t", cpu=1)]


def test_each_kind_found_and_exact() -> None:
    objs = capped()
    found, conf = suggestions(objs, "ns/t")
    by_kind = {s.kind: s for s in found}
    # queue a holds 3 cpu under a capability of 4; t needs 2: raising the capability by 1 is the least
    assert by_kind["queue-capability"].change == {"type": "queue", "queue": "a", "field": "capability",
                                                  "to": {"cpu": 5}, "by": {"cpu": 1}}
    # one pod of 1 cpu fits under the capability
    assert by_kind["min-member"].change["to"] == 1
    # two pods of at most 0.5 cpu fit in the 1 cpu left under the capability
    assert by_kind["task-request"].change["to"]["cpu"] == 0.5
    # freeing a1 (3 cpu in queue a) leaves room under the capability; b1 would not help
    assert by_kind["free-jobs"].change["jobs"] == [{"job": "ns/a1", "queue": "a"}]
    assert [s.cost for s in found] == sorted(s.cost for s in found)
    for s in found:
        if s.kind == "reservation" and s.change["start"] > 0:
            continue  # a later booking: checked forward in time (test_reserve.py)
        assert starts(apply_change(objs, s.change), "ns/t", conf), s.text
    assert not starts(objs, "ns/t", conf)
    # the cheapest three by default
    assert len(suggest(start_state(snap_of(objs), conf, NOW), "ns/t")) == 3


def test_a_job_that_starts_gets_none() -> None:
    objs = capped()
    objs[2] = queue("a")
    assert suggestions(objs, "ns/t")[0] == []


@st.composite
def dumps(draw: st.DrawFn) -> tuple[list[dict[str, Any]], str]:
    nodes = draw(st.lists(st.sampled_from([4, 8]), min_size=1, max_size=3))
    nq = draw(st.integers(1, 3))
    objs: list[dict[str, Any]] = [node(f"n{i}", cpu=c) for i, c in enumerate(nodes)]
    for qi in range(nq):
        spec: dict[str, Any] = {}
        if draw(st.booleans()):
            spec["capability"] = {"cpu": draw(st.integers(1, 12))}
        if draw(st.booleans()):
            spec["deserved"] = {"cpu": draw(st.integers(1, 12)), "memory": "64Gi"}
        objs.append(queue(f"q{qi}", weight=draw(st.integers(1, 3)), **spec))
    free = list(nodes)
    for ji in range(draw(st.integers(0, 4))):
        q = f"q{draw(st.integers(0, nq - 1))}"
        cpu = draw(st.integers(1, 4))
        placed = []
        for ti in range(draw(st.integers(1, 3))):
            n = next((i for i, f in enumerate(free) if f >= cpu), None)
            if n is None:
                break
            free[n] -= cpu
            placed.append(running(pod(f"r{ji}-{ti}", f"r{ji}", cpu=cpu, node_name=f"n{n}")))
        if placed:
            objs.append(podgroup(f"r{ji}", queue=q, phase="Running", created=T0))
            objs.extend(placed)
    tasks = draw(st.integers(1, 4))
    objs.append(podgroup("t", queue=f"q{draw(st.integers(0, nq - 1))}", min_member=draw(st.integers(1, tasks)),
                         phase=draw(st.sampled_from(["Pending", "Inqueue"])), created=T0))
    cpu = draw(st.integers(1, 6))
    objs.extend(pod(f"t-{i}", "t", cpu=cpu) for i in range(tasks))
    return objs, draw(st.sampled_from(["default", CAPACITY]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(dumps())
def test_every_suggestion_applied_starts_the_job(case: tuple[list[dict[str, Any]], str]) -> None:
    objs, conf_name = case
    conf_text = None if conf_name == "default" else conf_name
    snap = snap_of(objs)
    conf = resolve_conf(snap, parse_conf(conf_text) if conf_text else None)
    assume(not starts(objs, "ns/t", conf))
    # a dump whose decisions never settle (test_a_forward_run_that_never_settles_...) stops sooner here
    with mock.patch.object(fsim, "FORWARD_SESSION_LIMIT", 2_000):
        found, conf = suggestions(objs, "ns/t", conf_text)
    for s in found:
        if s.kind == "reservation" and s.change["start"] > 0:
            continue  # a later booking: checked forward in time (test_reserve.py)
        assert starts(apply_change(objs, s.change), "ns/t", conf), s.text


HIER = CAPACITY.replace("  - name: capacity\n", "  - name: capacity\n    enableHierarchy: true\n").replace(
    "  - name: drf\n", "")


def test_reservation_planned_now_and_checked() -> None:
    res = queue("res", deserved={"cpu": 8, "memory": "32Gi"}, guarantee={"cpu": 8, "memory": "32Gi"},
                capability={"cpu": 8, "memory": "32Gi"})
    res["metadata"]["annotations"] = {"apportion.io/reservable": "true"}
    # the default child of a plan without over-use is capped to what the plan leaves it (4 cpu), all held
    objs = [node("n1", cpu=16, memory="64Gi"), res,
            queue("res-default", parent="res", deserved={"cpu": 4, "memory": "16Gi"},
                  guarantee={"cpu": 4, "memory": "16Gi"}, capability={"cpu": 4, "memory": "16Gi"}),
            podgroup("d1", queue="res-default", phase="Running", created=T0),
            running(pod("d1-0", "d1", cpu=4, node_name="n1")),
            podgroup("t", queue="res-default", min_member=2, phase="Pending", created=T0),
            pod("t-0", "t", cpu=1, annotations={"apportion.io/duration": "2h"}), pod("t-1", "t", cpu=1)]
    found, conf = suggestions(objs, "ns/t", HIER)
    (r,) = [s for s in found if s.kind == "reservation"]
    # the plan (8 cpu, nothing reserved) places 2 x 1 cpu for the job's 2 h at once
    assert r.change == {"type": "reservation", "plan": "queue", "queue": "res", "job": "ns/t", "pods": 2,
                        "perPod": {"cpu": 1, "memory": 1073741824}, "start": 0.0, "durationSeconds": 7200.0}
    assert not starts(objs, "ns/t", conf) and starts(apply_change(objs, r.change), "ns/t", conf)
    # a plan already full (a reservation queue holding its 8 cpu, as held for the whole 7-day window:
    # a dump does not say when it ends) has no room before the window ends
    held = queue("r-1", parent="res", deserved={"cpu": 8, "memory": "32Gi"})
    held["metadata"]["annotations"] = {"apportion.io/reservation": "r1"}
    found, _ = suggestions(objs + [held], "ns/t", HIER)
    assert all(s.change["start"] >= 7 * 86400 for s in found if s.kind == "reservation")


def _never_settles() -> list[dict[str, Any]]:
    """Two queues over their deserved with pods that never end, and a job that reclaim makes room for
    and takes back every period: the decisions never settle (found by the property test above, where it
    simulated to the 7-day edge of the booking window one second at a time)."""
    objs = [node("n0", cpu=8), node("n1", cpu=4), node("n2", cpu=4),
            queue("q0", weight=2, deserved={"cpu": 4, "memory": "64Gi"}),
            queue("q1", weight=2, deserved={"cpu": 7, "memory": "64Gi"})]
    for name, q, pods in (("r0", "q0", [(1, "n0"), (1, "n0")]), ("r1", "q1", [(3, "n0"), (3, "n0"), (3, "n1")]),
                          ("r2", "q0", [(4, "n2")]), ("r3", "q0", [(1, "n1")])):
        objs.append(podgroup(name, queue=q, phase="Running", created=T0))
        objs += [running(pod(f"{name}-{i}", name, cpu=c, node_name=n)) for i, (c, n) in enumerate(pods)]
    objs += [podgroup("t", queue="q0", phase="Pending", created=T0), pod("t-0", "t", cpu=2)]
    return objs


def test_a_forward_run_that_never_settles_stops_at_the_session_limit() -> None:
    snap = snap_of(_never_settles())
    conf = resolve_conf(snap, parse_conf(CAPACITY))
    prepare(snap, conf)
    state = start_state(snap, conf, NOW)
    with mock.patch.object(fsim, "FORWARD_SESSION_LIMIT", 300):
        sim = fsim.forecast_simulator(state, targets=("ns/t",), horizon=7 * 86400)
        sim.run()
        # the run stops at the limit, long before the horizon, without the job starting
        assert sim.stopped_at_limit and sim.sessions == 300 and sim.now < 600
        assert sim.jobs["ns/t"].first_start is None
        # and the fit search that used to run for hours here returns
        found, _ = suggestions(_never_settles(), "ns/t", CAPACITY)
    assert found


def test_a_long_list_of_jobs_to_free_is_named_in_short() -> None:
    from apportion.forecast.fit import FREE_NAMED, _free_text

    uids = [f"ns/j{i:02d}" for i in range(12)]
    text = _free_text(uids, {u: f"q{i % 3}" for i, u in enumerate(uids)}, "cpu 12")
    assert text.startswith("free running 12 jobs in 3 queue(s): ns/j00 (queue q0)")
    assert text.count("(queue ") == FREE_NAMED and "and 7 more (-o json lists them all): cpu 12" in text
    short = _free_text(uids[:2], {u: "q0" for u in uids}, "cpu 2")
    assert short == "free running ns/j00 (queue q0), ns/j01 (queue q0): cpu 2"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(dumps())
def test_checks_over_kept_jobs_answer_as_checks_over_fresh_ones(case: tuple[list[dict[str, Any]], str]) -> None:
    """The checks' sessions see the jobs the last check left untouched (`Checker(keep=True)`): every
    search finds what it finds when every check builds its jobs again."""
    from apportion.forecast.fit import Checker, Search

    objs, conf_name = case
    snap = snap_of(objs)
    conf = resolve_conf(snap, parse_conf(conf_name) if conf_name != "default" else None)
    prepare(snap, conf)
    state = start_state(snap, conf, NOW)
    js = state.job("ns/t")
    assert js is not None
    answers = []
    for keep in (True, False):
        search = Search(state, js, Checker(state, keep=keep))
        found = [*search.queue_raises(), *search.min_member(), *search.request(), *search.free()]
        # and the job as it is, after those checks
        answers.append(([s.to_json() for s in found], search.check.starts("ns/t", lambda s: None),
                        search.check.sessions))
    assert answers[0] == answers[1]
