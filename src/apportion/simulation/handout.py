"""The jobs a simulator hands each session when a start state's objects build them (the forecast), and
the running tasks' starts it gives the jobs built anew (`give_starts`).

`Simulator._snapshot` asked the objects (`SessionObjects.job_info`) for every active job at every
session, although between two sessions of a forecast only the few jobs an event, a decision or the
session itself touched can be anything but the object handed out last. `JobsHandout` keeps the last
map and asks again only for:

* the jobs the simulator changed since (`Simulator._dirty`: a task status, a phase, a queue, an
  arrival or a departure; captured before the cache feed clears it);
* the jobs a session changed in place or wrote notes on since the last snapshot (the cache's live
  `log` and `notes` of that snapshot's jobs' delta, which every job handed out writes into: K17);
* the jobs the objects did not keep (`SimJob.info` is not the object handed out), which they build
  again each session;
* the cache's own jobs (the scenario's arrivals), taken from its snapshot as before.

Every other job is the last map's object, and asking would hand it out again: nothing that decides
it changed, and nothing is noted on it to clear (the `SessionObjects` contract). `ask_all` is the
reference (`every=True` asks it at every snapshot); under `APPORTION_CHECK_STATE=1` each job handed
out again without asking is asked and must be that object.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from apportion.cluster.model import (
    RUNNING,
    JobInfo,
)
from apportion.cluster.snapshot import JobDelta
from apportion.simulation.jobs import SimJob, SimTask
from apportion.simulation.start import SessionObjects
from apportion.state import check

#: when the start state's objects build their jobs with their starts (`JobsHandout.starts_at_build`),
#: `give_starts` looks at the cache's own jobs alone (`cache_starts`); False: at every job `start_names`
#: names (the reference the tests compare with)
CACHE_STARTS_ONLY = True


class JobsHandout:
    """The last jobs map a start state's objects built, kept from snapshot to snapshot (see the module)."""

    def __init__(self, objects: SessionObjects, every: bool = False) -> None:
        self.objects = objects
        #: ask for every job at every snapshot (the reference the tests compare with)
        self.every = every
        #: the last map handed out, in uid order (None: ask for every job next time)
        self.jobs: dict[str, JobInfo] | None = None
        #: the live log and notes of the last snapshot's jobs' delta (the cache's)
        self.live: tuple[set[str], set[str]] | None = None
        #: uids whose last object the objects did not keep (asked every time)
        self.volatile: set[str] = set()
        #: under the self-check: each job of the last map with its phase when handed out
        self._phases: dict[str, tuple[JobInfo, object]] = {}
        #: the uids of the last map that the map just handed out no longer holds, when `hand_out`
        #: changed that map (None: it asked for every job, and the caller compares the two maps)
        self.gone: set[str] | None = None

    def starts_at_build(self) -> bool:
        """Whether every job object the start state's objects built so far had each running task it
        made anew given its start at build (semantics F10: `DumpObjects.starts_at_build`), so that
        `give_starts` finds nothing to give them: it then looks at the cache's own jobs alone."""
        given = getattr(self.objects, "starts_at_build", None)
        return CACHE_STARTS_ONLY and callable(given) and bool(given())

    def forget(self) -> None:
        """Ask for every job next time (a caller may replace jobs of the snapshot just handed out)."""
        self.jobs = None

    def touched(self, dirty: set[str]) -> set[str]:
        """The uids to ask for at the next snapshot: `dirty` (the simulator's, before the cache feed
        clears it) and those logged or noted since the last snapshot. Call before the cache's
        snapshot, which drains the log and the notes."""
        out = set(dirty)
        if self.live is not None:
            out |= self.live[0]
            out |= self.live[1]
        return out

    def hand_out(self, active: Mapping[str, SimJob], assembled: Mapping[str, JobInfo], touched: set[str],
                 delta: JobDelta | None) -> tuple[dict[str, JobInfo], set[str] | None]:
        """(the session's jobs in uid order, a fresh dict; the uids whose object is not the last map's,
        or None when every job was asked for). `assembled`: the cache's snapshot jobs; `delta`: its
        jobs' delta (its live log and notes are read at the next snapshot)."""
        checking = check.enabled()
        held = self.jobs
        if delta is not None:
            self.live = (delta.log, delta.notes)
        else:
            self.live, held = None, None
        # the last map is this one's to change from here on (the caller has a copy)
        self.jobs = None
        self.gone = None
        if held is None or self.every:
            jobs = self.ask_all(active, assembled)
            changed = None
        else:
            jobs, changed = self._ask_touched(held, active, assembled, touched, checking)
        # the objects handed out again with a new phase, here or since the last snapshot
        # (`SessionObjects.take_moved`): the same objects, changed
        moved = self.objects.take_moved()
        if changed is not None:
            changed.update(uid for uid in moved if uid in jobs)
        if checking:
            self._check_named(jobs, changed, delta)
        self.jobs = jobs
        return dict(jobs), changed

    def ask_all(self, active: Mapping[str, SimJob], assembled: Mapping[str, JobInfo]) -> dict[str, JobInfo]:
        """Every active job asked for (the reference)."""
        jobs = {uid: self._ask(active[uid], assembled) for uid in sorted(active)}
        self.volatile = {uid for uid, ji in jobs.items() if active[uid].info is not ji}
        return jobs

    def _ask(self, sj: SimJob, assembled: Mapping[str, JobInfo]) -> JobInfo:
        ji = self.objects.job_info(sj)
        return assembled[sj.uid] if ji is None else ji

    def _ask_touched(self, held: dict[str, JobInfo], active: Mapping[str, SimJob],
                     assembled: Mapping[str, JobInfo], touched: set[str], checking: bool
                     ) -> tuple[dict[str, JobInfo], set[str] | None]:
        # the last map, changed in place (a copy of a thousand jobs' map per snapshot was a tenth
        # of a forecast's snapshot): each uid is looked at once, its last object read before it is
        # replaced, and the jobs that came are marked so
        jobs = held
        changed: set[str] = set()
        came: set[str] = set()
        gone: set[str] = set()
        volatile = self.volatile
        for uid in touched | volatile:
            sj = active.get(uid)
            if sj is None:
                if jobs.pop(uid, None) is not None:
                    gone.add(uid)
                volatile.discard(uid)
                continue
            ji = self._ask(sj, assembled)
            last = jobs.get(uid)
            if last is None:
                came.add(uid)
            if ji is not last:
                changed.add(uid)
                jobs[uid] = ji
            if sj.info is ji:
                volatile.discard(uid)
            else:
                volatile.add(uid)
        for uid, ji in assembled.items():
            if uid in active:
                last = jobs.get(uid)
                if last is not ji:
                    if last is None:
                        came.add(uid)
                    changed.add(uid)
                    jobs[uid] = ji
        if len(jobs) != len(active):
            # a job came or went without the simulator naming it: ask for every one
            return self.ask_all(active, assembled), None
        if came:
            jobs = {uid: jobs[uid] for uid in sorted(jobs)}
        if checking:
            self._check(jobs, active, assembled, touched)
        # every job of the last map that is not active was popped above: the map now holds exactly
        # the active jobs (the length test, and the self-check's), so these are all that went
        self.gone = gone
        return jobs, changed

    def _check_named(self, jobs: dict[str, JobInfo], changed: set[str] | None, delta: JobDelta | None) -> None:
        """The self-check: a job handed out again whose phase moved since it was last handed out is
        named as changed (K17): here, or by the cache's log (a session's close set it)."""
        last, self._phases = self._phases, {uid: (ji, ji.phase) for uid, ji in jobs.items()}
        if changed is None or delta is None or delta.since is None:
            return  # (a delta from no snapshot names nothing: every job is to be looked at)
        for uid, ji in jobs.items():
            was = last.get(uid)
            if was is not None and was[0] is ji and was[1] is not ji.phase and uid not in changed \
                    and uid not in delta.changed:
                raise check.StateCheckError(f"{check.ENV}: job {uid} handed out again with another phase is "
                                            "not named as changed")

    def _check(self, jobs: dict[str, JobInfo], active: Mapping[str, SimJob], assembled: Mapping[str, JobInfo],
               asked: set[str]) -> None:
        """The self-check: the map is every active job in uid order, and each job handed out again
        without asking is what asking gives, with nothing noted on it."""
        if list(jobs) != sorted(active):
            raise check.StateCheckError(f"{check.ENV}: the jobs handed out are not the active jobs in uid order")
        for uid, ji in jobs.items():
            if uid in asked or uid in self.volatile:
                continue
            if ji.conditions or ji.nodes_fit_errors or ji.failed_roles or ji.job_fit_errors:
                raise check.StateCheckError(f"{check.ENV}: job {uid} handed out again holds notes of a session")
            if self._ask(active[uid], assembled) is not ji:
                raise check.StateCheckError(f"{check.ENV}: job {uid} handed out again without asking is not "
                                            "what the start state's objects give")


def start_names(jobs: Mapping[str, JobInfo], changed: set[str] | None, delta: JobDelta | None,
                from_objects: bool, checking: bool | None = None) -> Collection[str]:
    """The uids of `jobs` whose running tasks `give_starts` looks at: those a start state's objects
    handed out anew (`changed`; None: every job), or the cache's delta names (a job it does not name
    is the last snapshot's object: docs/semantics.md K17); every job under the self-check (`checking`,
    when the caller asked whether it is on; None: asked here)."""
    if check.enabled() if checking is None else checking:
        return jobs
    if from_objects:
        return jobs if changed is None else changed
    return delta.changed if delta is not None and delta.since is not None else jobs


def give_starts(jobs: Mapping[str, JobInfo], names: Iterable[str], last: Mapping[str, JobInfo],
                task_by_key: Mapping[str, tuple[SimJob, SimTask]], checking: bool | None = None,
                given: Collection[str] = ()) -> None:
    """Give each running task of the jobs `names` its start on the session's clock (`Session.now`), as
    the model asks a simulator to, unless it has one. A job handed out again (the last snapshot's
    object, by the cache or by a start state's objects) has it from the session it was built for: its
    tasks' statuses are those it was built with, so it has nothing left to fill in, and is passed over
    (under the self-check, `checking` as for `start_names`, it is looked at, and must have none left).
    `given`: jobs whose objects were built with their starts (`JobsHandout.starts_at_build`), which
    the caller names only under the self-check: they too must have none left."""
    if checking is None:
        checking = check.enabled()
    for uid in names:
        ji = jobs.get(uid)
        if ji is None:
            continue
        kept = last.get(uid) is ji
        if kept and not checking:
            continue
        for t in ji.tasks.values():
            if t.status is RUNNING and t.started_at is None:
                hit = task_by_key.get(t.key)
                if hit is None or hit[1].start is None:
                    continue
                if kept or uid in given:
                    raise check.StateCheckError(f"{check.ENV}: running task {t.key} of a job handed out "
                                                f"{'again' if kept else 'built with its starts'} has no start")
                t.started_at = hit[1].start


def cache_starts(cache_jobs: Mapping[str, JobInfo], names: Collection[str]) -> list[str]:
    """Of the uids `names` (`start_names`), those of the cache's own jobs (`cache_jobs`: the cache's
    snapshot jobs), the only ones whose running tasks may lack their start when the start state's
    objects build theirs with it (`JobsHandout.starts_at_build`; docs/semantics.md F13)."""
    return [uid for uid in cache_jobs if uid in names]


def give_session_starts(jobs: Mapping[str, JobInfo], cache_jobs: Mapping[str, JobInfo], changed: set[str] | None,
                        delta: JobDelta | None, last: Mapping[str, JobInfo],
                        task_by_key: Mapping[str, tuple[SimJob, SimTask]], handout: JobsHandout | None,
                        from_objects: bool, checking: bool) -> None:
    """A snapshot's starts (`Simulator._snapshot`): `give_starts` over the jobs `start_names` names, or
    over the cache's own alone when the start state's objects built theirs with their starts
    (`cache_starts`; under the self-check every job is looked at, and those must have none left).
    `jobs`: the session's; `cache_jobs`: the cache's snapshot jobs; `changed`: `hand_out`'s; `last`:
    the last snapshot's jobs."""
    names = start_names(jobs, changed, delta, from_objects, checking)
    given: Collection[str] = ()
    if handout is not None and handout.starts_at_build():
        # the objects' jobs have every start given at build: the cache's own alone may lack one
        if checking:
            given = jobs.keys() - cache_jobs.keys()
        else:
            names = cache_starts(cache_jobs, names)
    give_starts(jobs, names, last, task_by_key, checking, given)
