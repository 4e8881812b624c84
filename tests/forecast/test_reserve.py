"""Reservation suggestions: the job's whole request (GPUs included) booked through the reservation
system's planner, now or at the earliest later start the planner accepts, and each booking checked by
the forecast simulator: applied to the cluster objects, the job starts in the session at the booked
start."""

from __future__ import annotations

from typing import Any

from dumps import T0, running
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fit import CAPACITY, HIER, NOW, snap_of, starts, suggestions

from apportion.cluster.snapshot import Snapshot
from apportion.engine import prepare, resolve_conf
from apportion.forecast.apply import apply_change
from apportion.forecast.fit import Suggestion
from apportion.forecast.reserve import SUGGESTED
from apportion.forecast.sim import forecast_simulator
from apportion.forecast.start import start_state
from apportion.framework.conf import SchedulerConf, parse_conf
from apportion.resources import Resource
from apportion.simulation.reservations import default_child

from k8s import node, pod, podgroup, queue

GPU = "nvidia.com/gpu"


def gpu_node(name: str, gpus: int = 8) -> dict[str, Any]:
    return node(name, cpu=32, memory="128Gi", scalars={GPU: str(gpus)})


def gpu_jobs(q: str) -> list[dict[str, Any]]:
    """n1 frees its 8 GPUs at 00:30, n2's never; c (created first) and t each want 8 GPUs: without a
    booking c takes n1 at 00:30 for 3 h and t waits behind it."""
    return [podgroup("d1", queue=q, phase="Running", created=T0),
            running(pod("d1-0", "d1", cpu=4, node_name="n1", scalars={GPU: "8"}),
                    expected_end="2026-01-01T00:30:00Z"),
            podgroup("a2", queue=q, phase="Running", created=T0),
            running(pod("a2-0", "a2", cpu=4, node_name="n2", scalars={GPU: "8"})),
            podgroup("c", queue=q, phase="Inqueue", created="2025-12-31T23:00:00Z"),
            pod("c-0", "c", cpu=2, scalars={GPU: "8"}, annotations={"apportion.io/duration": "3h"}),
            podgroup("t", queue=q, phase="Inqueue", created=T0),
            pod("t-0", "t", cpu=2, scalars={GPU: "8"}, annotations={"apportion.io/duration": "2h"})]


def reservable_gpu_cluster() -> list[dict[str, Any]]:
    amount = {"cpu": 64, "memory": "256Gi", GPU: 16}
    res = queue("res", deserved=amount, guarantee=amount, capability=amount)
    res["metadata"]["annotations"] = {"apportion.io/reservable": "true"}
    return [gpu_node("n1"), gpu_node("n2"), res,
            queue("res-default", parent="res", deserved=amount, capability=amount), *gpu_jobs("res-default")]


def conf_of(objs: list[dict[str, Any]], conf_text: str | None) -> SchedulerConf:
    snap = snap_of(objs)
    return resolve_conf(snap, parse_conf(conf_text) if conf_text else None)


def booked_start(objs: list[dict[str, Any]], conf_text: str | None, s: Suggestion, uid: str = "ns/t",
                 horizon: float | None = None) -> float | None:
    """The job's first start (seconds from now) when the booking is applied to the cluster objects
    (`apply_change`, what a user would do) from its start on, run forward by the forecast simulator
    from the unchanged dump."""
    conf = conf_of(objs, conf_text)
    applied = snap_of(apply_change(objs, s.change))
    prepare(applied, conf)
    moved = [SUGGESTED] + ([default_child(s.change["queue"])] if s.change["queue"] else [])

    def patch(snap: Snapshot) -> None:
        for name in moved:
            if name in applied.queues:
                snap.queues[name] = applied.queues[name]
        snap.jobs[uid].queue = applied.jobs[uid].queue

    snap = snap_of(objs)
    prepare(snap, conf)
    start = float(s.change["start"])
    sim = forecast_simulator(start_state(snap, conf, NOW), targets=(uid,),
                            horizon=start + 1 if horizon is None else horizon, bookings=[(start, patch)])
    sim.run()
    return sim.jobs[uid].first_start


def unbooked_start(objs: list[dict[str, Any]], conf_text: str | None, uid: str = "ns/t") -> float | None:
    conf = conf_of(objs, conf_text)
    snap = snap_of(objs)
    prepare(snap, conf)
    sim = forecast_simulator(start_state(snap, conf, NOW), targets=(uid,), horizon=86400)
    sim.run()
    return sim.jobs[uid].first_start


def _reservation(found: list[Suggestion]) -> Suggestion:
    (r,) = [s for s in found if s.kind == "reservation"]
    return r


def test_gpu_booking_in_the_reservable_queue_plan_from_a_later_start() -> None:
    objs = reservable_gpu_cluster()
    r = _reservation(suggestions(objs, "ns/t", HIER)[0])
    # the queue's plan holds d1 until 00:30 and a2 for good: 8 GPUs free from 00:30, the whole request
    assert r.change == {"type": "reservation", "plan": "queue", "queue": "res", "job": "ns/t", "pods": 1,
                        "perPod": {"cpu": 2, "memory": 2**30, GPU: 8}, "start": 1800.0,
                        "durationSeconds": 7200.0}
    assert "gpu 8" in r.text and "from 00:30:00 UTC (in 30m" in r.text and "estimate" in r.text
    assert unbooked_start(objs, HIER) == 1800.0 + 3 * 3600  # behind c
    assert booked_start(objs, HIER, r) == 1800.0


def test_gpu_booking_in_a_cluster_plan_without_a_reservable_queue() -> None:
    objs = [gpu_node("n1"), gpu_node("n2"), queue("a"), *gpu_jobs("a")]
    for conf_text in (None, CAPACITY):
        r = _reservation(suggestions(objs, "ns/t", conf_text)[0])
        assert r.change["plan"] == "cluster" and r.change["queue"] is None
        assert r.change["perPod"][GPU] == 8 and r.change["start"] == 1800.0
        assert "a cluster plan" in r.text
        assert booked_start(objs, conf_text, r) == 1800.0


def test_booking_now_still_checked_by_cycle() -> None:
    # an idle GPU node and a queue capped below the job: the cluster plan books it now
    objs = [gpu_node("n1"), queue("a", capability={"cpu": 1, "memory": "1Gi"}),
            podgroup("t", queue="a", phase="Inqueue", created=T0),
            pod("t-0", "t", cpu=2, scalars={GPU: "4"}, annotations={"apportion.io/duration": "1h"})]
    conf = conf_of(objs, CAPACITY)
    r = _reservation(suggestions(objs, "ns/t", CAPACITY)[0])
    assert r.change["start"] == 0 and r.change["perPod"][GPU] == 4 and "from now" in r.text
    assert not starts(objs, "ns/t", conf) and starts(apply_change(objs, r.change), "ns/t", conf)


@st.composite
def gpu_dumps(draw: st.DrawFn) -> tuple[list[dict[str, Any]], str | None]:
    """Random GPU clusters whose running pods end at random known (or unknown) times, and a waiting
    job t asking for GPUs."""
    hier = draw(st.booleans())
    nodes = draw(st.lists(st.sampled_from([4, 8]), min_size=1, max_size=3))
    objs: list[dict[str, Any]] = [gpu_node(f"n{i}", g) for i, g in enumerate(nodes)]
    total = sum(nodes)
    if hier:
        amount = {"cpu": 96, "memory": "384Gi", GPU: total}
        res = queue("res", deserved=amount, guarantee=amount, capability=amount)
        res["metadata"]["annotations"] = {"apportion.io/reservable": "true"}
        objs += [res, queue("res-default", parent="res", deserved=amount, capability=amount)]
        queues = ["res-default"]
    else:
        queues = ["a", "b"]
        objs += [queue("a"), queue("b")]
    for ji, g in enumerate(nodes):
        # most nodes busy, most of their pods with a known end
        used = draw(st.sampled_from([0, g // 2, g, g, g]))
        if not used:
            continue
        end = draw(st.one_of(st.none(), st.integers(1, 120), st.integers(1, 120)))
        ann = {} if end is None else {"expected_end": f"2026-01-01T{end // 60:02d}:{end % 60:02d}:00Z"}
        objs += [podgroup(f"r{ji}", queue=draw(st.sampled_from(queues)), phase="Running", created=T0),
                 running(pod(f"r{ji}-0", f"r{ji}", cpu=1, node_name=f"n{ji}", scalars={GPU: str(used)}), **ann)]
    for name, created in (("c", "2025-12-31T23:00:00Z"), ("t", T0)):
        if name == "c" and not draw(st.booleans()):
            continue
        tasks = draw(st.integers(1, 2))
        g = draw(st.sampled_from([2, 4, 8]))
        objs.append(podgroup(name, queue=draw(st.sampled_from(queues)), min_member=tasks, phase="Inqueue",
                             created=created))
        objs += [pod(f"{name}-{i}", name, cpu=1, scalars={GPU: str(g)},
                     annotations={"apportion.io/duration": str(draw(st.integers(60, 7200)))})
                 for i in range(tasks)]
    return objs, HIER if hier else draw(st.sampled_from([None, CAPACITY]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu_dumps())
def test_every_booking_applied_starts_the_job_at_its_start(case: tuple[list[dict[str, Any]], str | None]) -> None:
    objs, conf_text = case
    found, _ = suggestions(objs, "ns/t", conf_text)
    snap = snap_of(objs)
    for s in found:
        if s.kind != "reservation":
            continue
        # the whole request is booked, GPUs included
        req = snap.jobs["ns/t"].tasks
        gpus = {t.resreq.get(GPU) for t in req.values()}
        assert {s.change["perPod"][GPU] * 1000} == gpus
        assert s.change["pods"] == max(1, snap.jobs["ns/t"].min_available)
        # applied from its start, the job starts in the session at the booked start and not before
        assert booked_start(objs, conf_text, s) == s.change["start"], s.text


@st.composite
def held_amounts(draw: st.DrawFn) -> list[tuple[float, float, Resource]]:
    out = []
    for _ in range(draw(st.integers(0, 30))):
        s = float(draw(st.sampled_from([0, 0, 0, 1, 60, 600])))
        e = s + float(draw(st.sampled_from([1, 2, 30, 60, 599, 600, 3600, 7 * 86400])))
        out.append((s, e, Resource(cpu=1000 * draw(st.integers(0, 8)), memory=2**30 * draw(st.integers(0, 32)),
                                   scalars={GPU: 1000 * draw(st.integers(0, 4))})))
    return out


@settings(max_examples=150, deadline=None)
@given(held_amounts(), st.integers(1, 4), st.integers(0, 4), st.sampled_from([0.0, 1.0, 30.0, 600.0]))
def test_held_pods_summed_plan_as_held_one_by_one(held: list[tuple[float, float, Resource]], pods: int, gpus: int,
                                                  arrival: float) -> None:
    from apportion.forecast.reserve import WINDOW, empty_plan, held_pieces, hold_one_by_one, hold_summed
    from apportion.simulation.specs import ReservationSpec, StageSpec

    cap = Resource(cpu=32_000, memory=128 * 2**30, scalars={GPU: 8000})
    per = Resource(cpu=2000, memory=4 * 2**30, scalars={GPU: 1000 * gpus} if gpus else {})
    answers = []
    for summed in (False, True):
        sp = empty_plan("cluster", cap, per, 1.0)
        if summed:
            hold_summed(sp, held_pieces(held, sp.dims))
        else:
            hold_one_by_one(sp, held)
        res = sp.submit(ReservationSpec(name="forecast-t", queue=sp.queue, user="forecast", submit_at=0.0,
                                        arrival=arrival, deadline=arrival + 3600 + WINDOW, interpreter="R_ALL",
                                        gang=True, stages=[StageSpec(per, pods, 3600.0, pods)]), 0.0)
        answers.append((res.accepted, res.reservation.pieces if res.reservation else None,
                        sp.plan.load.breakpoints()))
    assert answers[0] == answers[1]
