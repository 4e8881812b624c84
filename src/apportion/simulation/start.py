"""Where a simulation starts when it does not start empty: the seam `Simulator.from_state` takes.

A `SimStart` is a cluster state on the simulation's clock: the jobs active from `t0` with their tasks
where the state has them (running tasks on their nodes, each with its own end), the reservation plans
and their current children, and, optionally, `SessionObjects`: the objects sessions see when the
state comes from real cluster objects (a dump or the live cache) rather than from the scenario's
job specs. The forecast (`apportion.forecast.sim`) builds one from a cluster dump.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable
from dataclasses import field
from typing import Protocol

from apportion.cluster.model import JobInfo, QueueInfo
from apportion.cluster.snapshot import JobDelta, Snapshot
from apportion.lean_dataclass import dataclass
from apportion.simulation.jobs import SimJob, SimTask
from apportion.simulation.reservations import SimPlan
from apportion.state import check


class SessionObjects(Protocol):
    """What sessions see of a state that came from cluster objects."""

    def job_info(self, job: SimJob) -> JobInfo | None:
        """The job as a session sees it, or None for the simulator's own (a job of the scenario).
        `job.info` / `job.info_of` are free to keep one between sessions. The simulator hands a job
        out again without asking while `job.info` is the object it last returned and nothing changed
        either since (no task status, phase or queue of `job`; nothing logged or noted on the object:
        simulation/handout.py), so asking must then give that object, with nothing to clear on it.
        Asking (here or from the early quiet test) may hand the last object out again with only its
        phase moved, where a fresh build would differ from it in the phase alone; `take_moved` names
        those objects."""

    def take_moved(self) -> set[str]:
        """The uids of the objects `job_info` handed out again with a new phase since the last call
        (the snapshot names them as changed: K17)."""

    def adjust(self, snap: Snapshot, now: float, live_nodes: Collection[str], node_events: int | None = None) -> None:
        """Change the snapshot the session at `now` is about to see (nodes, other schedulers' pods,
        ...); `live_nodes`: the nodes that have not failed. Sets `snap.nodes` and their `nodes_key`
        (the same key for the same node objects, as the cache gives its own: K9). `node_events`: the
        simulator's count of its node events, the only thing that changes `live_nodes` (one object
        for the run): while the object and the count are those of the last call, so are the live
        nodes (None: not known, compare them)."""

    def kept(self, job: SimJob) -> JobInfo | None:
        """The object `job_info` would hand out again for the job, as it is (nothing cleared on it);
        None when it would build one."""

    def view_key(self, now: float) -> Hashable:
        """A value that is the same at two instants for which `adjust` changes a snapshot alike (what
        it patches in force then): the early quiet test (simulation/skipping.py) trusts what it kept
        from one session at the next only while this is the same."""

    def status_changed(self, job: SimJob, task: SimTask) -> None:
        """The simulation changed this task's status (called before the change)."""


@dataclass
class StartTask:
    """How one task of a start job goes on. The task's status, node and start are its SimTask's."""

    #: `namespace/pod`, as sessions name the task
    key: str
    #: a running task: when it finishes (None: never); a releasing one: when it is released (None:
    #: by the next session)
    end: float | None = None
    #: a releasing task deleted in the cluster: once released it is over (the simulator restarts only
    #: the tasks it evicts itself)
    deleted: bool = False


@dataclass
class StartJob:
    """A job active from the start, its tasks (`job.tasks`) described one by one in `tasks`."""

    job: SimJob
    tasks: list[StartTask]


@dataclass
class SimStart:
    """A simulation's start state (times on the simulation's clock; sessions on the period grid from
    `t0`)."""

    t0: float
    jobs: list[StartJob]
    #: reservation plans of reservable queues and their current children (owned by the simulation)
    plans: dict[str, SimPlan] = field(default_factory=dict)
    children: dict[str, list[QueueInfo]] = field(default_factory=dict)
    #: reservation name -> id, and whether it was accepted (arrivals that name a reservation)
    reservation_ids: dict[str, str] = field(default_factory=dict)
    reservation_accepted: dict[str, bool] = field(default_factory=dict)
    objects: SessionObjects | None = None
    #: instants at which a session must run although no event falls there
    wakes: list[float] = field(default_factory=list)
    #: job uids whose first start ends the run once all have started
    stop_when_started: frozenset[str] = frozenset()
    #: jobs of `jobs` (uid -> reservation id) kept out of the sessions until a plan's follower finds
    #: their reservation active, as the service keeps a job submitted to a reservation that has not
    #: started (service/live.py); their tasks are all pending
    held: dict[str, str] = field(default_factory=dict)
    #: a job whose tasks are all over stays in the sessions as a Completed PodGroup, as a live cluster
    #: keeps one until it is deleted (the service's forecast); False: it leaves them, as a scenario's
    #: finished job does
    keep_done: bool = False
    #: the queues' order in the live cache the state comes from (a session sees its queues in that
    #: order, new ones after: simulation/queue_order.py `CacheQueueOrder`); None: the simulator's own
    queue_order: list[str] | None = None
    #: an evicted member of a gang stops every running member (the simulator's jobs restart whole);
    #: False: only the pod evicted stops, as a live cluster's pod goes back to Pending alone
    whole_gangs: bool = True


def objects_delta(jobs: dict[str, JobInfo], last: dict[str, JobInfo], cache: JobDelta | None,
                  changed: set[str] | None = None, gone: set[str] | None = None) -> JobDelta | None:
    """The jobs' delta of a snapshot whose jobs a start state's objects build (some of) (the
    forecast): the cache's, with every job that is not the last snapshot's object named as well. Every
    job is given the cache's log, so that what changes one of them in place is logged as the cache's
    jobs are (docs/semantics.md K17). None when the cache gave none; a delta from no snapshot (`since`
    None: every job to be looked at) when the cache's is, which still numbers this snapshot, so that
    the passes that keep things from session to session (the quiet test's facts, open's placements,
    capacity's ledger, close) carry the first session's into the second.

    `changed`: the uids of `jobs` whose object is not `last`'s, when the caller knows them (the jobs
    handed out again, simulation/handout.py); else every job is compared. `gone`: the uids of `last`
    that `jobs` does not hold, when the caller knows them (the same handout); else the two maps' keys
    are compared (the reference, which the self-check compares `gone` with)."""
    if changed is None:
        changed = {uid for uid, ji in jobs.items() if last.get(uid) is not ji}
    if gone is not None and check.enabled() and gone != last.keys() - jobs.keys():
        raise check.StateCheckError(f"{check.ENV}: the jobs named as gone {sorted(gone)} are not those the last "
                                    f"snapshot held and this one does not {sorted(last.keys() - jobs.keys())}")
    if cache is not None:
        for uid in changed:
            ji = jobs[uid]
            ji.log, ji.notes = cache.log, cache.notes
    if cache is None:
        return None
    if cache.since is None:
        return JobDelta(cache.snapshot, None, set(), set(), cache.log, cache.notes)
    if gone is None:
        gone = last.keys() - jobs.keys()
    return JobDelta(cache.snapshot, cache.since, changed | cache.changed, gone, cache.log, cache.notes)
