"""One forward run serving every reservation try (`ForwardRun`, forecast/forward.py) against the
reference, which simulates each try from now (`reserve.first_start` / `reserve.starts_at`): the same
answers at every booked start, and the same suggestions."""

from __future__ import annotations

from typing import Any

import pytest
from dumps import T0, running, two_queues
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fit import CAPACITY, HIER, capped
from test_fit_known import CASES, state_of
from test_reserve import gpu_dumps, gpu_jobs, gpu_node, reservable_gpu_cluster

from apportion.forecast import reserve
from apportion.forecast.core import forecast
from apportion.forecast.fit import KnownStart, natural
from apportion.forecast.forward import COPY_AFTER, ForwardRun
from apportion.forecast.sim import forecast_simulator
from apportion.forecast.suggest import suggest
from apportion.resources import Resource
from apportion.simulation.specs import JobSpec
from apportion.state import check

from k8s import pod, podgroup, queue

#: the forecast test dumps: (objects, conf, the waiting job asked about)
DUMPS: dict[str, tuple[list[dict[str, Any]], str | None, str]] = {
    **{name: (*make(), "ns/t") for name, make in CASES.items()},
    "two-queues-train": (two_queues(), CAPACITY, "ns/train"),
    "two-queues-web": (two_queues(), CAPACITY, "ns/web"),
    "capped": (capped(), CAPACITY, "ns/t"),
    "reservable-without-c": ([o for o in reservable_gpu_cluster() if not o["metadata"]["name"].startswith("c")],
                             HIER, "ns/t"),
}


def booking(state: Any, uid: str, queue_name: str | None) -> Any:
    """The booking of the job's gang (its first pod's request), in a queue's plan or the cluster's."""
    js = state.job(uid)
    per = next(t.template.resreq for t in js.tasks if t.status == "pending").clone()
    change = {"type": "reservation", "queue": queue_name, "job": uid, "pods": max(1, js.template.min_available),
              "perPod": natural(per), "start": 0.0, "durationSeconds": 3600.0}
    return reserve.booking_patch(change, queue_name is not None)


def both_ways(state: Any, uid: str, starts: list[float], patch: Any) -> None:
    run = ForwardRun(state, uid)
    for s in starts:
        assert run.starts_at(s, patch) == reserve.starts_at(state, uid, s, patch), s
        assert run.first_start(s, s, []) == reserve.first_start(state, uid, s, []), s


@pytest.mark.parametrize("name", sorted(DUMPS))
def test_suggestions_as_the_reference_gives_them(name: str) -> None:
    objs, conf_text, uid = DUMPS[name]
    state = state_of(objs, conf_text)
    (jf,) = forecast(state, [uid]).jobs
    for known in (None, KnownStart(jf.start_in)):
        fast = [s.to_json() for s in suggest(state, uid, known=known)]
        assert fast == [s.to_json() for s in suggest(state, uid, known=known, reference=True, free_reference=False)]


@pytest.mark.parametrize("name", sorted(DUMPS))
def test_every_start_answered_as_the_reference(name: str) -> None:
    objs, conf_text, uid = DUMPS[name]
    state = state_of(objs, conf_text)
    hier = any(o["kind"] == "Queue" and o["metadata"].get("annotations", {}).get("apportion.io/reservable")
               for o in objs)
    both_ways(state, uid, [0.0, 1.0, 60.0, 299.0, 300.0, 600.0, 1800.0, 1801.0, 5400.0],
              booking(state, uid, "res" if hier and conf_text == HIER else None))


@pytest.mark.parametrize("name", ["two-queues-web", "cluster-plan-later"])
def test_a_booked_job_kept_between_sessions_passes_the_self_check(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A booking moves its job into the suggested queue on the session's own job object, which the
    forecast keeps between sessions: the self-check (every kept job equals a fresh build) must see a
    fresh build there, not the moved object, and the answers stay those of the plain run."""
    objs, conf_text, uid = DUMPS[name]
    state = state_of(objs, conf_text)
    patch = booking(state, uid, None)
    plain = [reserve.starts_at(state, uid, s, patch) for s in (0.0, 60.0, 600.0)]
    monkeypatch.setenv(check.ENV, "1")
    assert [reserve.starts_at(state, uid, s, patch) for s in (0.0, 60.0, 600.0)] == plain
    both_ways(state, uid, [0.0, 60.0, 600.0], patch)


def test_the_forward_run_is_copied_not_rerun() -> None:
    # t waits behind c, which takes n1 at 00:30: a booking at 00:30 starts t (the reference's example)
    objs = [gpu_node("n1"), gpu_node("n2"), queue("a"), *gpu_jobs("a")]
    state = state_of(objs, None)
    patch = booking(state, "ns/t", None)
    run = ForwardRun(state, "ns/t")
    assert not run.starts_at(600.0, patch)
    assert run.starts_at(1800.0, patch)
    assert run.copies == 2
    # the run itself never saw a booking: it goes on as the forecast simulator without one
    rest = forecast_simulator(state, targets=("ns/t",))
    rest.run()
    run.sim.run()
    assert run.sim.jobs["ns/t"].first_start == rest.jobs["ns/t"].first_start
    assert (run.sim.sessions, run.sim.events) == (rest.sessions, rest.events)


def test_a_start_before_the_run_is_simulated_from_now() -> None:
    objs = [gpu_node("n1"), gpu_node("n2"), queue("a"), *gpu_jobs("a")]
    state = state_of(objs, None)
    patch = booking(state, "ns/t", None)
    run = ForwardRun(state, "ns/t")
    assert run.starts_at(1800.0, patch)
    assert not run.starts_at(600.0, patch) and run.copies == 1
    assert not run.starts_at(0.0, patch) and run.copies == 1


def test_a_start_near_now_is_simulated_from_now() -> None:
    objs = [gpu_node("n1"), gpu_node("n2"), queue("a"), *gpu_jobs("a")]
    state = state_of(objs, None)
    patch = booking(state, "ns/t", None)
    run = ForwardRun(state, "ns/t")
    for s in (0.0, 1.0, COPY_AFTER - 1.0):
        assert run.starts_at(s, patch) == reserve.starts_at(state, "ns/t", s, patch)
    assert run.copies == 0 and run._sim is None
    assert run.starts_at(1800.0, patch) and run.copies == 1


def test_future_arrivals_after_the_horizon_stay_out() -> None:
    # jobs as big as t arrive around the booked start: a try's horizon (its start plus a period) takes
    # in some of them, the no-booking check's (its start) fewer; the copies drop what theirs does not
    objs = [gpu_node("n1"), gpu_node("n2"), queue("a"), *gpu_jobs("a")]
    state = state_of(objs, None)
    big = Resource.from_natural({"cpu": 2, "nvidia.com/gpu": 8})
    state.arrivals = [JobSpec(name=f"z{i}", queue="a", arrival=state.t0 + at, duration=3600.0, tasks=1,
                              min_member=1, resources=big) for i, at in enumerate((1799.5, 1800.5, 1801.0, 1830.0))]
    both_ways(state, "ns/t", [600.0, 1799.0, 1800.0, 1801.0, 1830.0], booking(state, "ns/t", None))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu_dumps(), st.lists(st.integers(0, 150), min_size=1, max_size=4))
def test_forward_run_answers_as_the_reference_on_random_dumps(case: tuple[list[dict[str, Any]], str | None],
                                                              minutes: list[int]) -> None:
    objs, conf_text = case
    state = state_of(objs, conf_text)
    hier = conf_text == HIER and any(o["metadata"]["name"] == "res" for o in objs if o["kind"] == "Queue")
    both_ways(state, "ns/t", sorted({60.0 * m for m in minutes}), booking(state, "ns/t", "res" if hier else None))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu_dumps(), st.lists(st.integers(0, 2 * COPY_AFTER), min_size=1, max_size=4))
def test_tries_seconds_apart_answered_as_the_reference(case: tuple[list[dict[str, Any]], str | None],
                                                       seconds: list[int]) -> None:
    """Tries a few periods from now (the run stops after the booked start's session, the reference a
    period later), on either side of COPY_AFTER."""
    objs, conf_text = case
    state = state_of(objs, conf_text)
    hier = conf_text == HIER and any(o["metadata"]["name"] == "res" for o in objs if o["kind"] == "Queue")
    both_ways(state, "ns/t", sorted({float(s) for s in seconds}), booking(state, "ns/t", "res" if hier else None))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gpu_dumps(), st.booleans())
def test_same_suggestions_as_the_reference_on_random_dumps(case: tuple[list[dict[str, Any]], str | None],
                                                           with_known: bool) -> None:
    objs, conf_text = case
    state = state_of(objs, conf_text)
    known = None
    if with_known:
        (jf,) = forecast(state, ["ns/t"], horizon=86400.0).jobs
        known = KnownStart(jf.start_in, 86400.0)
    assert [s.to_json() for s in suggest(state, "ns/t", known=known)] == [
        s.to_json() for s in suggest(state, "ns/t", known=known, reference=True, free_reference=False)]


def test_a_running_pod_ending_at_the_booked_start() -> None:
    # n1's pod ends exactly at the booked start: its end is an event at that instant, seen by the try's
    # session there, and the copy is taken before it
    objs = [gpu_node("n1"), queue("a"),
            podgroup("d", queue="a", phase="Running", created=T0),
            running(pod("d-0", "d", cpu=4, node_name="n1", scalars={"nvidia.com/gpu": "8"}),
                    expected_end="2026-01-01T00:10:00Z"),
            podgroup("t", queue="a", phase="Inqueue", created=T0),
            pod("t-0", "t", cpu=2, scalars={"nvidia.com/gpu": "8"}, annotations={"apportion.io/duration": "1h"})]
    state = state_of(objs, None)
    both_ways(state, "ns/t", [599.0, 600.0, 601.0], booking(state, "ns/t", None))
