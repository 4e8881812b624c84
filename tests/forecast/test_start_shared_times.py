"""The stamps `newest_timestamp` parses handed to `start_state` (`times`), and each distinct start time
subtracted from now once: the same `now` and the same start state as each read on its own, and as the
reference that parses every stamp where it is read (`start.DISTINCT_STAMPS` off)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from test_start_stamps import _now, _state, a_snapshot

from apportion.cluster.snapshot import Snapshot
from apportion.errors import InputError
from apportion.forecast.start import newest_timestamp, start_state
from apportion.framework.conf import default_conf
from apportion.state.check import canonical


def _shared(snap: Snapshot, now: datetime | None) -> object:
    times: dict[str, datetime | None] = {}
    newest = newest_timestamp(snap, times)
    try:
        s = start_state(snap, default_conf(), now or newest or datetime(2026, 1, 1, tzinfo=UTC), times=times)
    except InputError as e:
        return None if newest is None else (newest.isoformat(), newest.tzinfo), str(e)
    return None if newest is None else (newest.isoformat(), newest.tzinfo), (
        [(j.uid, j.runtime, j.runtime_basis, [(t.index, t.status, t.node, t.elapsed, t.remaining, t.runtime, t.basis)
                                              for t in j.tasks]) for j in s.jobs], canonical(s.warnings))


@settings(max_examples=300, deadline=None)
@given(snap=a_snapshot(), now=st.sampled_from([None, datetime(2026, 1, 1, 0, 10, tzinfo=UTC),
                                                datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)]))
def test_shared_times_are_the_reference(snap: Snapshot, now: datetime | None) -> None:
    newest = _now(snap, False)
    at = now or (datetime.fromisoformat(newest[0]) if newest else datetime(2026, 1, 1, tzinfo=UTC))
    assert _shared(snap, now) == (newest, _state(snap, at, False))
