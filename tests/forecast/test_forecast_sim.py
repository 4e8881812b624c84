"""The forecast simulator's sessions see the dump's own objects, and only those."""

from __future__ import annotations

from dumps import two_queues
from test_fit import NOW, snap_of

from apportion.engine import prepare, resolve_conf
from apportion.forecast.sim import forecast_simulator
from apportion.forecast.start import start_state


def test_jobs_the_dump_gives_are_never_told_to_the_cache() -> None:
    snap = snap_of(two_queues())
    conf = resolve_conf(snap, None)
    prepare(snap, conf)
    sim = forecast_simulator(start_state(snap, conf, NOW))
    sim.run()
    # tasks started and ended (the sessions built those jobs from the dump's objects each time) ...
    assert sim.jobs["ns/train"].first_start is not None and sim.jobs["ns/big"].state == "done"
    # ... and the simulator's cache, which would assemble them for nothing, never held one
    assert not sim.cache.records.podgroups and not sim.cache.raw["Pod"]
