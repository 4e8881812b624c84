"""The forecast simulator's sessions see the dump's own objects, and only those."""

from __future__ import annotations

from typing import Any

from dumps import T0, two_queues
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fit import start_of
from test_reserve import GPU, gpu_dumps

from apportion.forecast.sim import forecast_simulator
from apportion.resources import Resource
from apportion.simulation import engine, feed
from apportion.simulation.specs import JobSpec

from k8s import pod, podgroup


def test_jobs_the_dump_gives_are_never_told_to_the_cache() -> None:
    sim = forecast_simulator(start_of(two_queues()))
    sim.run()
    # tasks started and ended (the sessions built those jobs from the dump's objects each time) ...
    assert sim.jobs["ns/train"].first_start is not None and sim.jobs["ns/big"].state == "done"
    # ... and the simulator's cache, which would assemble them for nothing, never held one
    assert not sim.cache.records.podgroups and not sim.cache.raw["Pod"]


@st.composite
def busy_dumps(draw: st.DrawFn) -> tuple[list[dict[str, Any]], str | None]:
    """Random GPU clusters (test_reserve's) with more jobs waiting behind the running ones."""
    objs, conf_text = draw(gpu_dumps())
    queues = [o["metadata"]["name"] for o in objs if o["kind"] == "Queue" and o["metadata"]["name"] != "res"]
    for ji in range(draw(st.integers(1, 4))):
        tasks = draw(st.integers(1, 3))
        objs.append(podgroup(f"w{ji}", queue=draw(st.sampled_from(queues)), min_member=draw(st.integers(1, tasks)),
                             phase=draw(st.sampled_from(["Pending", "Inqueue"])), created=T0))
        objs += [pod(f"w{ji}-{i}", f"w{ji}", cpu=draw(st.integers(1, 8)), scalars={GPU: str(draw(st.sampled_from([0, 2, 4])))},
                     annotations={"apportion.io/duration": str(draw(st.integers(30, 3600)))})
                 for i in range(tasks)]
    return objs, conf_text


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps())
def test_keeping_waiting_jobs_between_sessions_changes_no_start(case: tuple[list[dict[str, Any]], str | None]) -> None:
    objs, conf_text = case
    runs = []
    for keep in (True, False):
        sim = forecast_simulator(start_of(objs, conf_text), horizon=4 * 3600.0, keep_waiting=keep)
        sim.run()
        runs.append(({u: (j.first_start, j.finish, j.phase) for u, j in sim.jobs.items()}, sim.sessions))
    assert runs[0] == runs[1]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps())
def test_sessions_opening_over_the_last_open_change_no_start(case: tuple[list[dict[str, Any]], str | None]) -> None:
    """The start state's nodes key lets each session open over the last one's node side (K9); the
    reference opens every session in full (no key), as before the key."""
    objs, conf_text = case
    runs = []
    for carried in (True, False):
        sim = forecast_simulator(start_of(objs, conf_text), horizon=4 * 3600.0)
        if not carried:
            keyed = sim._snapshot

            def full_open(keyed: Any = keyed) -> Any:
                s = keyed()
                s.nodes_key = None
                return s

            sim._snapshot = full_open  # type: ignore[method-assign]
        opened: list[bool] = []
        real_open = engine.open_session

        def spy(*a: Any, real_open: Any = real_open, opened: list[bool] = opened, **k: Any) -> Any:
            ssn = real_open(*a, **k)
            opened.append(ssn.open_delta is not None)
            return ssn

        engine.open_session = spy  # type: ignore[assignment]
        try:
            sim.run()
        finally:
            engine.open_session = real_open  # type: ignore[assignment]
        # the carried run does open over the last session (the key is not ignored); the reference never
        assert (any(opened[1:]) or len(opened) < 2) if carried else not any(opened)
        runs.append(({u: (j.first_start, j.finish, j.phase, j.evictions) for u, j in sim.jobs.items()},
                     sim.sessions, sim.events))
    assert runs[0] == runs[1]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.booleans())
def test_jobs_handed_out_again_without_asking_change_no_start(case: tuple[list[dict[str, Any]], str | None],
                                                              keep: bool) -> None:
    """simulation/handout.py: asking the start state's objects only for the jobs that may have changed
    gives the run that asks for every job at every session (the reference), with or without skipping."""
    objs, conf_text = case
    runs = []
    for every in (False, True):
        sim = forecast_simulator(start_of(objs, conf_text), horizon=4 * 3600.0, keep_waiting=keep)
        assert sim.handout is not None
        sim.handout.every = every
        sim.run()
        runs.append(({u: (j.first_start, j.last_start, j.finish, j.phase, j.evictions,
                          tuple((t.status, t.node, t.start) for t in j.tasks)) for u, j in sim.jobs.items()},
                     sim.sessions, sim.sessions_skipped, sim.events, list(sim.warnings)))
    assert runs[0] == runs[1]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps(), st.lists(st.tuples(st.integers(0, 7200), st.sampled_from([0, 2, 4, 8]), st.integers(1, 2)),
                              max_size=3))
def test_nodes_left_out_of_the_cache_change_nothing(case: tuple[list[dict[str, Any]], str | None],
                                                    arrivals: list[tuple[int, int, int]]) -> None:
    """The forecast's cache holds no nodes until a job it builds (an arrival) is told (feed.py's
    `defer_nodes`): the run is the reference's, which tells the cache every node at once, and the
    cache then holds the same nodes and pods."""
    objs, conf_text = case
    runs = []
    for defer in (True, False):
        state = start_of(objs, conf_text)
        queues = sorted(n for n in state.queues if n not in ("res", "root") and not any(q.parent == n for q in state.queues.values()))
        state.arrivals = [JobSpec(name=f"z{i}", queue=queues[i % len(queues)], arrival=state.t0 + at, duration=1800.0,
                                  tasks=tasks, min_member=tasks,
                                  resources=Resource.from_natural({"cpu": 1, GPU: g}))
                          for i, (at, g, tasks) in enumerate(arrivals)]
        feed.ClusterFeed.defer_nodes = defer
        try:
            sim = forecast_simulator(state, horizon=4 * 3600.0)
            # the deferring run's cache holds no node before a job of its own is told
            assert sim.cache.raw["Node"] == {} if defer else len(sim.cache.raw["Node"]) == len(state.nodes)
            sim.run()
        finally:
            feed.ClusterFeed.defer_nodes = True
        if defer and not arrivals:
            assert sim.cache.raw["Node"] == {}
        runs.append(({u: (j.first_start, j.last_start, j.finish, j.phase, j.evictions,
                          tuple((t.status, t.node, t.start) for t in j.tasks)) for u, j in sim.jobs.items()},
                     sim.sessions, sim.sessions_skipped, sim.events, list(sim.warnings), dict(sim.cache.anomalies),
                     dict(sim.cache.raw["Pod"]), sorted(sim.cache.raw["Node"]) if sim._cache_nodes else None))
    if runs[0][-1] is None:  # no job of the cache's was told: nor any pod to the reference's cache
        assert not runs[1][-2] and not arrivals
        runs[1] = (*runs[1][:-1], None)
    assert runs[0] == runs[1]
