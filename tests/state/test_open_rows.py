"""Properties of session open's touched rows (framework/open_rows.py): a row merged by insertion
(`merge_row`) is the row sorted in full (`merge_row_reference`), for any base row in the full
placement's order, any jobs taken out of it and any new placements (jobs new or changed, tasks outside
jobs); a node's task map made from its last one (`row_tasks`) is the map made from the row, whatever
was kept, replaced (same key or not), added or taken out, keys repeated or not; a row whose tasks are
replaced by tasks of the same keys (`replace_in_row`) is the row with them in their places, and its map
the map made from it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from apportion.cluster.model import JobInfo, TaskInfo, TaskStatus
from apportion.framework.open_rows import (
    merge_row,
    merge_row_reference,
    replace_in_row,
    row_key,
    row_tasks,
    row_tasks_less,
    tasks_map,
)
from apportion.resources import Resource

JOBS = [f"j{i}" for i in range(8)]


@st.composite
def a_row(draw: st.DrawFn) -> tuple[dict[str, int], list, list]:
    """(positions, kept entries in order, new entries in any order): each job's entries are all kept or
    all new, and a task is placed once."""
    order = draw(st.permutations(JOBS))
    pos = {uid: i for i, uid in enumerate(order)}
    placed = {uid: sorted(draw(st.sets(st.integers(0, 6), max_size=4))) for uid in JOBS}
    new_jobs = draw(st.sets(st.sampled_from(JOBS)))
    orphans = sorted(draw(st.sets(st.integers(0, 5), max_size=3)))
    key = row_key(pos, len(JOBS))
    kept = [(0, object(), "used", None, uid, i) for uid in JOBS if uid not in new_jobs for i in placed[uid]]
    new = [(0, object(), "used", None, uid, i) for uid in JOBS if uid in new_jobs for i in placed[uid]]
    new += [(0, object(), "used", None, None, i) for i in orphans]
    kept.sort(key=key)
    new = draw(st.permutations(new))
    return pos, kept, list(new)


@given(a_row())
def test_merge_row_is_the_full_sort(row: tuple[dict[str, int], list, list]) -> None:
    pos, kept, new = row
    key = row_key(pos, len(JOBS))
    want = merge_row_reference(list(kept), list(new), key)
    got = merge_row(list(kept), list(new), key)
    assert [id(e[1]) for e in got] == [id(e[1]) for e in want]
    assert len(got) == len(kept) + len(new)


@st.composite
def a_row_again(draw: st.DrawFn) -> tuple[list, list]:
    """(a row's last entries, its entries now): some entries kept, some replaced by a task with the same
    key or another key, some added or taken out; keys may repeat."""
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=6))
    old = [(0, _task(n), "used", None, "j", i) for i, n in enumerate(names)]
    now = []
    for e in old:
        what = draw(st.sampled_from(["keep", "keep", "same-key", "other-key", "drop"]))
        if what == "keep":
            now.append(e)
        elif what == "same-key":
            now.append((0, _task(e[1].name), "used", None, "j", e[5]))
        elif what == "other-key":
            now.append((0, _task(draw(st.sampled_from(["x", "y"]))), "used", None, "j", e[5]))
    now += [(0, _task(n), "used", None, "k", i) for i, n in enumerate(draw(st.lists(st.sampled_from(["a", "z"]),
                                                                                      max_size=2)))]
    return old, now


def _task(name: str) -> TaskInfo:
    return TaskInfo(uid=f"uid-{name}-{id(object())}", name=name, namespace="ns", job="j", resreq=Resource(),
                    status=TaskStatus.RUNNING)


@given(a_row_again())
def test_row_tasks_is_the_map_made_from_the_row(rows: tuple[list, list]) -> None:
    old, now = rows
    got = row_tasks(now, old, tasks_map(old))
    want = tasks_map(now)
    assert [(k, id(t)) for k, t in got.items()] == [(k, id(t)) for k, t in want.items()]


@given(a_row_again(), st.booleans())
def test_a_row_that_lost_entries_has_the_map_made_from_the_row(rows: tuple[list, list], drop_new: bool) -> None:
    """K35: `row_tasks_less` (the last map less the keys taken out) is the map made from the row, for
    a row that lost entries and kept or replaced the others, and for any other row (then it makes it)."""
    old, now = rows
    if drop_new:  # the rows a completed task leaves: nothing added
        now = [e for e in now if e[4] == "j"]
    got = row_tasks_less(now, old, tasks_map(old))
    want = tasks_map(now)
    assert [(k, id(t)) for k, t in got.items()] == [(k, id(t)) for k, t in want.items()]


@st.composite
def a_row_replaced(draw: st.DrawFn) -> tuple[list, list]:
    """(a row's last entries, keys distinct; pairs of one of them and a new task of its key)."""
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=6, unique=True))
    old = [(0, _task(n), "used", None, "j", i) for i, n in enumerate(names)]
    chosen = draw(st.sets(st.sampled_from(range(len(old))))) if old else set()
    pairs = [(old[i], (0, _task(old[i][1].name), "used", None, "j", i)) for i in chosen]
    return old, list(draw(st.permutations(pairs)))


@given(a_row_replaced())
def test_replace_in_row_is_the_row_with_the_tasks_in_their_places(rows: tuple[list, list]) -> None:
    old, pairs = rows
    by_old = {id(o): n for o, n in pairs}
    want_row = [by_old.get(id(e), e) for e in old]
    before = list(old)
    got_row, got_map = replace_in_row(old, tasks_map(old), pairs)
    assert [id(e) for e in got_row] == [id(e) for e in want_row] and old == before
    assert [(k, id(t)) for k, t in got_map.items()] == [(k, id(t)) for k, t in tasks_map(want_row).items()]


@st.composite
def a_changed_job(draw: st.DrawFn) -> JobInfo:
    """A job whose tasks are in every status, on nodes that exist or not, with GPU-like scalars or none."""
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
    for i in range(draw(st.integers(0, 8))):
        scalars = draw(st.dictionaries(st.sampled_from(["nvidia.com/gpu", "example.com/fpga"]),
                                       st.integers(0, 4).map(float), max_size=2))
        t = TaskInfo(uid=f"uid-{i}", name=f"t{i}", namespace="ns", job="ns/j",
                     resreq=Resource(1000.0, 1.0, scalars), status=draw(st.sampled_from(list(TaskStatus))),
                     node_name=draw(st.sampled_from(["", "n0", "n1", "gone"])))
        job.add_task(t)
    return job


@settings(deadline=None)  # an example passed the 200 ms deadline once under the shared machine's load
@given(a_changed_job())
def test_a_changed_jobs_one_pass_is_its_entries_and_scalar_names(job: JobInfo) -> None:
    """`_changed_job` fuses `_job_entries` and `scalar_names` into one pass over the tasks (open11;
    every job of a full placement and a carried open's changed ones): the same placements, in the same
    order, and the same names, as the two loops it stands for."""
    from apportion.cluster.model import NodeInfo
    from apportion.framework.open_parts import scalar_names
    from apportion.framework.open_state import _changed_job, _job_entries

    nodes = {n: NodeInfo(name=n, index=i, allocatable=Resource(8000.0, 8.0)) for i, n in enumerate(["n0", "n1"])}
    want_entries = _job_entries(job, job.uid, nodes, [])
    want_names = scalar_names(job)
    job.derived.clear()
    got_entries, got_names = _changed_job(job, job.uid, nodes)
    assert got_entries == want_entries and got_names == want_names
    assert all(t.initial_status is t.status for t in job.tasks.values())
