"""`DumpObjects.build_fast` against its reference `build`: the same job objects, field by field and task
by task (the self-check compares every fast build with `build`), and the same forecasts."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest
from dumps import two_queues
from hypothesis import HealthCheck, given, settings
from test_fit import start_of
from test_forecast_sim import busy_dumps

from apportion.cluster.model import JobInfo, TaskInfo, TaskStatus
from apportion.forecast import job_build
from apportion.forecast.sim import DumpObjects, forecast_simulator
from apportion.simulation.handout import give_starts
from apportion.simulation.jobs import SimJob
from apportion.state import check
from apportion.state.equality import same


def _forecast(objs: list[dict[str, Any]], conf_text: str | None, fast: bool, keep: bool = True):
    sim = forecast_simulator(start_of(objs, conf_text), horizon=4 * 3600.0, keep_waiting=keep)
    assert isinstance(sim.objects, DumpObjects)
    sim.objects.fast = fast
    sim.run()
    return {u: (j.first_start, j.finish, j.phase) for u, j in sim.jobs.items()}, sim.sessions


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_dumps())
def test_fast_builds_are_the_reference_builds(case: tuple[list[dict[str, Any]], str | None]) -> None:
    objs, conf_text = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(check.ENV, "1")  # every fast build is compared with `build`, field by field
        checked = _forecast(objs, conf_text, fast=True)
        checked_unkept = _forecast(objs, conf_text, fast=True, keep=False)
    assert checked == _forecast(objs, conf_text, fast=False)
    assert checked_unkept == _forecast(objs, conf_text, fast=False, keep=False)


@pytest.mark.parametrize("at_build", [True, False])
def test_every_status_builds_alike(at_build: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each task of each job in each status the simulation gives, with its node or none; a running task
    made anew starts where `give_starts` would start it (semantics F10), or, with `STARTS_AT_BUILD`
    off, has no start yet, as the reference build."""
    monkeypatch.setattr(job_build, "STARTS_AT_BUILD", at_build)
    state = start_of(two_queues())
    sim = forecast_simulator(state)
    objects = sim.objects
    assert isinstance(objects, DumpObjects) and objects.starts_known
    nodes = [n.name for n in state.nodes]
    for sj in sim.jobs.values():
        tpl = objects.templates[sj.uid]
        for status in TaskStatus:
            for t in sj.tasks:
                objects.status_changed(sj, t)
                t.status, t.node = status, nodes[t.index % len(nodes)]
            for _ in range(2):  # the second from the fields kept the first time
                fast, ref = objects.build_fast(sj, tpl), objects.build(sj, tpl)
                if at_build:
                    give_starts({sj.uid: ref}, [sj.uid], {}, sim.task_by_key, False)
                _same(fast, ref)


def _same(a: JobInfo, b: JobInfo) -> None:
    """Every field alike (the tasks each a new object, every field of it alike)."""
    assert a is not b
    for f in fields(JobInfo):
        if f.name != "tasks":
            assert same(getattr(a, f.name), getattr(b, f.name)), f.name
    assert list(a.tasks) == list(b.tasks)
    for k in a.tasks:
        assert a.tasks[k] is not b.tasks[k]
        for g in fields(TaskInfo):
            assert same(getattr(a.tasks[k], g.name), getattr(b.tasks[k], g.name)), g.name


def test_the_self_check_catches_a_fast_build_that_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    build_fast = DumpObjects.build_fast

    def off_by_one(self: DumpObjects, sj: SimJob, tpl: JobInfo) -> JobInfo:
        ji = build_fast(self, sj, tpl)
        ji.version += 1
        return ji

    monkeypatch.setattr(DumpObjects, "build_fast", off_by_one)
    monkeypatch.setenv(check.ENV, "1")
    with pytest.raises(check.StateCheckError, match="built fast differs from a fresh build in version"):
        _forecast(two_queues(), None, fast=True)
