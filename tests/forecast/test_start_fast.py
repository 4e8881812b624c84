"""The start state's fast read of a task's own runtime (`_own_runtime`) against its reference: the same
seconds, or the same InputError (message and where), for any annotation text on the pod, its PodGroup,
both or neither."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import JobInfo, TaskInfo, TaskStatus
from apportion.errors import InputError
from apportion.forecast.runtime import DURATION_KEY
from apportion.forecast.start import LONGEST_S, _own_runtime, _own_runtime_reference
from apportion.resources import Resource

_NUMBERS = st.one_of(
    st.integers(min_value=-10, max_value=10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(min_value=0.0, max_value=LONGEST_S * 2).map(lambda f: f"{f:.6e}"),
    st.sampled_from(["3155760000", "3153600000", "3153600000.0", "3153600000.5", "1e9", "-0", "-0.0", "+5",
                     "nan", "inf", "-inf", "1_000", "0x10", "", " ", "1 ", "\t7\n", "1h30m", "90s", "1.5h",
                     "-1h", "2h-1m", "10", "abc", "5\u00a0", "\u2003 8"]),
)
_TEXTS = st.one_of(_NUMBERS, st.text(max_size=12),
                   st.tuples(_NUMBERS, st.sampled_from(["", " ", "s", "m", "h", "ms", "us", "ns"]))
                   .map(lambda t: t[0] + t[1]))


def _outcome(fn, task: TaskInfo, job: JobInfo) -> tuple[str, object]:
    try:
        v = fn(task, job)
    except InputError as e:
        return "error", (str(e), e.where)
    # -0.0 and 0.0 are told apart, as a forecast's arithmetic would not, but an answer should be alike
    return "value", (v, None if v is None else math.copysign(1.0, v))


@settings(max_examples=400, deadline=None)
@given(pod=st.none() | _TEXTS, group=st.none() | _TEXTS)
def test_the_fast_read_is_the_reference(pod: str | None, group: str | None) -> None:
    task = TaskInfo(uid="u", name="p", namespace="ns", job="ns/g", resreq=Resource(), status=TaskStatus.RUNNING,
                    annotations={} if pod is None else {DURATION_KEY: pod})
    job = JobInfo(uid="ns/g", name="g", namespace="ns", queue="q",
                  annotations={} if group is None else {DURATION_KEY: group})
    assert _outcome(_own_runtime, task, job) == _outcome(_own_runtime_reference, task, job)
