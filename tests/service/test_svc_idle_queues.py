"""Which queues the service treats as job-less (`service/idle_queues.py`): the ones the report leaves
out with no job in them or anywhere below them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from apportion.cluster.model import QueueInfo
from apportion.framework.conf import build_conf
from apportion.service.idle_queues import job_less, queue_plugin


@st.composite
def forests(draw: st.DrawFn) -> dict[str, QueueInfo]:
    """Queues q0..qn, each child of an earlier one or of root (parent "" also means root)."""
    n = draw(st.integers(1, 8))
    queues = {"root": QueueInfo(name="root")}
    for i in range(n):
        parent = draw(st.sampled_from(["", "root", *[f"q{k}" for k in range(i)]]))
        queues[f"q{i}"] = QueueInfo(name=f"q{i}", parent=parent)
    return queues


def _under(queues: dict[str, QueueInfo], name: str, top: str) -> bool:
    """Whether `top` is `name` or one of its ancestors (the brute-force walk)."""
    while True:
        if name == top:
            return True
        if name == "root":
            return False
        name = queues[name].parent or "root"


@given(queues=forests(), data=st.data())
def test_a_queue_is_job_less_when_no_busy_queue_is_at_or_below_it(queues: dict[str, QueueInfo],
                                                                   data: st.DataObject) -> None:
    busy = data.draw(st.sets(st.sampled_from(sorted(queues))))
    reported = data.draw(st.sets(st.sampled_from(sorted(queues))))
    got = job_less(queues, busy, reported)
    want = [q for q in queues if q not in reported and not any(_under(queues, b, q) for b in busy)]
    assert got == want


def test_the_queue_plugin_is_the_first_of_proportion_and_capacity() -> None:
    assert queue_plugin(build_conf("enqueue, allocate", [["gang"], ["proportion", "capacity"]])) == "proportion"
    assert queue_plugin(build_conf("enqueue, allocate", [["gang", "capacity"]])) == "capacity"
    assert queue_plugin(build_conf("enqueue, allocate", [["gang", "predicates"]])) is None
