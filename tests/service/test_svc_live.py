"""The service's live cache, in process (no HTTP): every change reaches the cache as events, and the
cache always equals a rebuild from what it holds; reservations route podgroups into their queues."""

from __future__ import annotations

from pathlib import Path

from svc_helpers import job_objects as _job
from svc_helpers import submission

from apportion.service.core import Service, ServiceConfig
from apportion.state.check import check_cache


def _phases(svc: Service, name: str) -> list[str]:
    return [o["status"]["phase"] for (k, ns, n), o in sorted(svc.objects.objects.items())
            if k == "Pod" and n.startswith(name + "-")]


def test_cache_follows_every_change_and_routes_reservations(tmp_path: Path) -> None:
    svc = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'a.db'}", loop=False))
    try:
        svc._apply_now(_job("small", "batch", 2), [])
        svc.loop.tick()
        check_cache(svc.live.cache)
        assert _phases(svc, "small") == ["Running", "Running"]
        # a cache rebuilt from the stored objects holds what the live one holds
        assert svc.live.cache.get("Pod", "t/small-0")["spec"]["nodeName"]

        svc.set_now(svc.clock())
        rid = svc.reservations.new_reservation("alice")[1]["reservation-id"]
        assert svc.committed(lambda: svc.reservations.submit("alice", submission(rid)))[0] == 202
        svc._apply_now(_job("inres", "dedicated", 2, {"apportion.io/reservation": rid})
                       + _job("plain", "dedicated", 1)
                       + _job("late", "dedicated", 1, {"apportion.io/reservation": "reservation_1_0001"}), [])
        svc.loop.tick()
        svc.loop.tick()
        check_cache(svc.live.cache)
        check_cache(svc.live.cache, reparse=True)  # the followers' queues came with their records
        assert svc.live.cache.supplied["Queue"] >= {rid}
        assert svc.live.cache.get("PodGroup", "t/inres")["spec"]["queue"] == rid
        assert svc.live.cache.get("PodGroup", "t/plain")["spec"]["queue"] == "dedicated-default"
        assert svc.live.cache.get("PodGroup", "t/late") is None and svc.live.cache.get("Pod", "t/late-0") is None
        assert "not currently active" in svc.loop.waiting["t/late"]
        assert _phases(svc, "inres") == ["Running", "Running"]
        # the stored object keeps the queue the user gave
        assert svc.objects.objects[("PodGroup", "t", "inres")]["spec"]["queue"] == "dedicated"

        # deleting the reservation expires its queue at the next tick; its running job moves to the
        # default queue (moveOnExpiry) and keeps its nodes
        assert svc.committed(lambda: svc.reservations.delete("alice", {"reservation-id": rid}))[0] == 200
        svc.loop.tick()
        check_cache(svc.live.cache)
        assert svc.live.cache.get("Queue", rid) is None
        assert svc.live.cache.get("PodGroup", "t/inres")["spec"]["queue"] == "dedicated-default"
        assert svc.live.cache.get("Pod", "t/inres-0")["spec"]["nodeName"]

        # a delete through the API leaves the cache too
        svc._apply_now([], [("Pod", "t", "small-1")])
        assert svc.live.cache.get("Pod", "t/small-1") is None
        check_cache(svc.live.cache)
    finally:
        svc.close()


def test_a_reservation_that_starts_later_shows_its_jobs_then_and_a_reload_publishes_its_queue_again(
        tmp_path: Path) -> None:
    """The ticks publish only what changed (publish.py): a job of a reservation not active yet is
    hidden until the tick at which the reservation starts, its queue comes and goes with it, and a
    cache loaded afresh (after a failed commit) gets every queue again."""
    clock = [1_800_000_000_000]
    svc = Service(ServiceConfig(db_url=f"sqlite:///{tmp_path / 'b.db'}", loop=False, clock=lambda: clock[0]))
    try:
        t0 = clock[0]
        svc.set_now(t0)
        rid = svc.reservations.new_reservation("alice")[1]["reservation-id"]
        body = submission(rid, arrival=t0 + 60_000, deadline=t0 + 600_000)
        assert svc.committed(lambda: svc.reservations.submit("alice", body))[0] == 202
        svc._apply_now(_job("later", "dedicated", 2, {"apportion.io/reservation": rid}), [])
        svc.loop.tick()
        assert svc.live.cache.get("Queue", rid) is None
        assert svc.live.cache.get("PodGroup", "t/later") is None and svc.live.cache.get("Pod", "t/later-0") is None
        assert "not currently active" in svc.loop.waiting["t/later"]

        clock[0] = t0 + 61_000
        svc.loop.tick()
        check_cache(svc.live.cache)
        assert svc.live.cache.get("Queue", rid)["spec"]["parent"] == "dedicated"
        assert svc.live.cache.get("PodGroup", "t/later")["spec"]["queue"] == rid
        assert svc.live.cache.get("Pod", "t/later-0") is not None

        svc._reload_after_failure()
        assert svc.live.cache.get("Queue", rid) is None
        svc.loop.tick()
        check_cache(svc.live.cache)
        assert svc.live.cache.get("Queue", rid)["spec"]["parent"] == "dedicated"
        assert svc.live.cache.get("PodGroup", "t/later")["spec"]["queue"] == rid

        clock[0] = t0 + 700_000  # past the reservation's end: its queue expires, its job moves
        svc.loop.tick()
        check_cache(svc.live.cache)
        assert svc.live.cache.get("Queue", rid) is None
        assert svc.live.cache.get("PodGroup", "t/later")["spec"]["queue"] == "dedicated-default"
    finally:
        svc.close()
