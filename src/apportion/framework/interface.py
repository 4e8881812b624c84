"""What a plugin or an action is, the typed extension points, and the registries that name them.

Follows Volcano's `framework/interface.go` (the `Plugin` and `Action` interfaces), `framework/plugins.go`
(`RegisterPluginBuilder`, `RegisterAction`) and the function types of `api/types.go` (`CompareFn`,
`PredicateFn`, `EvictableFn`, `ValidateFn`, `VoteFn`, `JobEnqueuedFn`, ...). Where apportion's function
differs from Volcano's (a predicate or a node order is asked about many nodes at once, as rows of the node
table), the alias says so.

A plugin is found by the name a scheduler conf gives it: first among the registered builders (the
built-in plugins register themselves when `apportion.plugins` is imported; anyone may call
`register_plugin`), then among the `apportion.plugins` entry points of the installed distributions, so a
separate package can add a plugin without touching apportion. Actions are found the same way through
`register_action` and the `apportion.actions` entry-point group. See docs/plugins.md.

The session is a type parameter of `Plugin` and `Action` (`Plugin[Session]`) rather than an import, so
this module sits below `session.py` and the framework has no import cycle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, Protocol, TypeVar, overload

import numpy as np

from apportion.cluster.model import JobInfo, QueueInfo, TaskInfo
from apportion.errors import InternalError
from apportion.framework import extension as ep
from apportion.framework.arguments import Arguments
from apportion.framework.queue_status import QueueStatus
from apportion.lean_dataclass import dataclass

if TYPE_CHECKING:
    import importlib.metadata

#: entry-point groups another distribution can declare plugins and actions in
PLUGIN_ENTRY_POINTS: Final = "apportion.plugins"
ACTION_ENTRY_POINTS: Final = "apportion.actions"

SessionT = TypeVar("SessionT", contravariant=True)
T = TypeVar("T")


# ============================================================================ plugins and actions
class Plugin(Protocol[SessionT]):
    """A scheduler plugin (Volcano's `framework.Plugin`): built from its conf arguments, opened and
    closed with every session. Subclass `Plugin[Session]`, or write any class with these members.

    At session open a plugin registers its callbacks with `ssn.add_fn(point, self.name, fn)`; each
    point has the function type named below (`CompareFn`, `EvictableFn`, ...).
    """

    #: the name a scheduler conf uses for the plugin
    name: str = ""
    #: its arguments from the conf
    arguments: Arguments

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: SessionT) -> None:
        """OnSessionOpen: compute what the session needs and register the callbacks."""
        raise NotImplementedError(f"plugin {self.name!r} does not implement on_session_open")

    def on_session_close(self, ssn: SessionT) -> None:
        """OnSessionClose: write back what the session decided (gang's conditions, for one).

        A hook visits the jobs of `ssn.closing`, not every job, and writes to a job only what follows
        from that job (its tasks, phase, minimums, fit errors) and the session id: the close of a job
        that reached this close as it reached the last one over the same memo is carried over without
        visiting it (framework/closing.py)."""
        return None

    def queue_report(self, ssn: SessionT) -> dict[str, QueueStatus] | None:
        """Each queue's status at the end of the session (the cycle output's `queues` map is its view);
        None if the plugin keeps none."""
        return None


class Action(Protocol[SessionT]):
    """A scheduling action (Volcano's `framework.Action`): one named step a session runs in the order
    of the conf's `actions` line."""

    @property
    def name(self) -> str:
        """The name the conf's `actions` line uses."""
        ...

    def execute(self, ssn: SessionT) -> None:
        """Run the action over the open session."""
        ...


@dataclass(frozen=True)
class FunctionAction(Generic[T]):
    """An action made of a name and a function over the session (how the built-in actions are written)."""

    name: str
    run: Callable[[T], None]

    def execute(self, ssn: T) -> None:
        """Run the function over the session."""
        self.run(ssn)


#: Volcano's `PluginBuilder`: the conf arguments in, the plugin out (a plugin class is one)
PluginBuilder = Callable[[Arguments], Plugin[Any]]


# ============================================================================ extension points
@dataclass
class NodeFilter:
    """A predicate's verdict over candidate rows: which pass, which fail for good, and why."""

    ok: np.ndarray
    unresolvable: np.ndarray
    reasons: list[tuple[str, np.ndarray]] = field(default_factory=list)


#: QueueOrder, JobOrder, TaskOrder: negative when `l` goes first, 0 when the plugin has no opinion
CompareFn = Callable[[T, T], int]
#: VictimQueueOrder: (l, r, the preemptor's queue); negative when `l`'s tasks are evicted first
VictimCompareFn = Callable[[QueueInfo, QueueInfo, QueueInfo], int]
#: JobReady, JobStarving, Overused: a yes/no about one object
ValidateFn = Callable[[T], bool]
#: JobValid: (valid, the reason when not) - Volcano's ValidateExFn and its ValidateResult
ValidateExFn = Callable[[JobInfo], tuple[bool, str]]
#: JobPipelined, JobEnqueueable: PERMIT, ABSTAIN or REJECT (extension.py), tallied tier by tier
VoteFn = Callable[[JobInfo], int]
#: JobEnqueued: told that enqueue admitted the job
JobEnqueuedFn = Callable[[JobInfo], None]
#: Allocatable: may the queue take the task now
AllocatableFn = Callable[[QueueInfo, TaskInfo], bool]
#: Preemptive: may the queue take the task by reclaiming (Volcano's ValidateWithCandidateFn)
ValidateWithCandidateFn = Callable[[QueueInfo, TaskInfo], bool]
#: PrePredicate: None when the task may be placed at all, else the reason
PrePredicateFn = Callable[[TaskInfo], "str | None"]
#: Predicate over many nodes at once: (task, node-table rows) -> NodeFilter over those rows
PredicateFn = Callable[[TaskInfo, np.ndarray], NodeFilter]
#: NodeOrder over many nodes at once (Volcano's BatchNodeOrderFn): (task, rows) -> a score per row
NodeOrderFn = Callable[[TaskInfo, np.ndarray], np.ndarray]
#: BestNode: (task, rows, their scores) -> the chosen row, or None to leave the choice to the score
BestNodeFn = Callable[[TaskInfo, np.ndarray, np.ndarray], "int | None"]
#: Preemptable, Reclaimable: (evictor, candidates) -> (the candidates it would evict, its vote)
EvictableFn = Callable[[TaskInfo, list[TaskInfo]], tuple[list[TaskInfo], int]]
#: SimulateAllocatable: Allocatable against the simulated state of a topology-aware preemption
SimulateAllocatableFn = Callable[[QueueInfo, TaskInfo, dict[str, Any]], bool]
#: SimulatePredicate: (task, row, simulated state) -> None, or the reason the node will not do
SimulatePredicateFn = Callable[[TaskInfo, int, dict[str, Any]], "str | None"]
#: SimulateAddTask, SimulateRemoveTask: move the task in or out of the simulated state at the row
SimulateAddTaskFn = Callable[[dict[str, Any], TaskInfo, int], None]
SimulateRemoveTaskFn = Callable[[dict[str, Any], TaskInfo, int], None]

#: any registered callback, as the dispatch tables hold it
Fn = Callable[..., Any]


class ExtensionPoints:
    """The registration half of the session: one table of callbacks per extension point, filled by the
    plugins at session open through `add_fn`, whose overloads give each point its function type."""

    def __init__(self) -> None:
        #: point -> plugin name -> its callback
        self.fns: dict[str, dict[str, Fn]] = {p: {} for p in ep.GATES}

    def _fns_changed(self, point: str) -> None:
        """Hook for the session: a plugin registered `point`, so its dispatch list is stale."""

    @overload
    def add_fn(self, point: Literal["queue_order"], plugin: str, fn: CompareFn[QueueInfo]) -> None: ...
    @overload
    def add_fn(self, point: Literal["job_order"], plugin: str, fn: CompareFn[JobInfo]) -> None: ...
    @overload
    def add_fn(self, point: Literal["task_order"], plugin: str, fn: CompareFn[TaskInfo]) -> None: ...
    @overload
    def add_fn(self, point: Literal["victim_queue_order"], plugin: str, fn: VictimCompareFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["job_valid"], plugin: str, fn: ValidateExFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["job_ready", "job_starving"], plugin: str, fn: ValidateFn[JobInfo]) -> None: ...
    @overload
    def add_fn(self, point: Literal["job_pipelined", "job_enqueueable"], plugin: str, fn: VoteFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["job_enqueued"], plugin: str, fn: JobEnqueuedFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["overused"], plugin: str, fn: ValidateFn[QueueInfo]) -> None: ...
    @overload
    def add_fn(self, point: Literal["allocatable"], plugin: str, fn: AllocatableFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["preemptive"], plugin: str, fn: ValidateWithCandidateFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["pre_predicate"], plugin: str, fn: PrePredicateFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["predicate"], plugin: str, fn: PredicateFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["best_node"], plugin: str, fn: BestNodeFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["node_order"], plugin: str, fn: NodeOrderFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["preemptable", "reclaimable"], plugin: str, fn: EvictableFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["simulate_allocatable"], plugin: str, fn: SimulateAllocatableFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["simulate_predicate"], plugin: str, fn: SimulatePredicateFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["simulate_add_task"], plugin: str, fn: SimulateAddTaskFn) -> None: ...
    @overload
    def add_fn(self, point: Literal["simulate_remove_task"], plugin: str, fn: SimulateRemoveTaskFn) -> None: ...

    def add_fn(self, point: str, plugin: str, fn: Fn) -> None:
        """Register `fn` for an extension point under the plugin's name (the last registration wins)."""
        if point not in self.fns:
            raise InternalError(f"unknown extension point {point!r}")
        self.fns[point][plugin] = fn
        self._fns_changed(point)


# ============================================================================ registries
@dataclass
class _Registry(Generic[T]):
    """Name -> object, filled by `register` and, for names nobody registered, by an entry-point group.

    A registration may be a "module:attribute" string, imported when the name is first asked for, so
    that registering every built-in plugin costs no import.
    """

    group: str
    kind: str
    entries: dict[str, T | str] = field(default_factory=dict)
    #: the group's entry points, read once on the first name nobody registered
    entry_points: dict[str, importlib.metadata.EntryPoint] | None = None

    def register(self, name: str, obj: T | str) -> None:
        """Register (or replace) the object for a name."""
        if not name or not isinstance(name, str):
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")
        self.entries[name] = obj

    def lookup(self, name: str) -> T | None:
        """The object for a name, or None when nothing registered or installed provides it.

        Raises `LookupError` with a one-line reason when a provider exists but cannot be loaded.
        """
        entry = self.entries.get(name)
        if entry is None:
            entry_point = self._entry_point(name)
            if entry_point is None:
                return None
            try:
                obj: T = entry_point.load()
            except Exception as e:  # any failure of a third-party import is reported, not raised
                raise LookupError(f"{self.kind} {name!r} from entry point {entry_point.value!r}: "
                                  f"{type(e).__name__}: {e}") from e
            self.entries[name] = obj
            return obj
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            try:
                imported = importlib.import_module(module)
            except ModuleNotFoundError as e:
                if e.name != module:
                    raise
                # a registration by name whose module is not installed: as if unregistered
                return None
            if not hasattr(imported, attr):
                raise LookupError(f"{self.kind} {name!r}: module {module!r} has no {attr!r}")
            loaded: T = getattr(imported, attr)
            self.entries[name] = loaded
            return loaded
        return entry

    def _entry_point(self, name: str) -> importlib.metadata.EntryPoint | None:
        if self.entry_points is None:
            # imported here: reading installed distributions' metadata costs about a tenth of a
            # second at start, and only a name nobody registered needs it
            import importlib.metadata

            found = importlib.metadata.entry_points(group=self.group)
            # sorted so that two distributions offering one name resolve the same way every run
            self.entry_points = {}
            for e in sorted(found, key=lambda e: (e.name, e.value)):
                self.entry_points.setdefault(e.name, e)
        return self.entry_points.get(name)

    def names(self) -> list[str]:
        """Every registered or installed name, sorted."""
        self._entry_point("")
        return sorted(set(self.entries) | set(self.entry_points or {}))


_plugins: _Registry[PluginBuilder] = _Registry(PLUGIN_ENTRY_POINTS, "plugin")
_actions: _Registry[Action[Any]] = _Registry(ACTION_ENTRY_POINTS, "action")


def register_plugin(name: str, builder: PluginBuilder | str) -> None:
    """Make a plugin available to scheduler confs under `name` (Volcano's `RegisterPluginBuilder`).

    `builder` is called with the plugin's `Arguments` once per session; a `Plugin` subclass is one.
    A "module:attribute" string defers the import to the first session that names the plugin.
    Registering a name again replaces the earlier builder, a built-in's included.
    """
    _plugins.register(name, builder)


def register_action(action: Action[Any], *, name: str | None = None) -> None:
    """Make an action available to the conf's `actions` line (Volcano's `RegisterAction`).

    The action's own `name` is used unless `name` is given; registering a name again replaces it.
    """
    _actions.register(name or action.name, action)


def plugin_builder(name: str) -> PluginBuilder | None:
    """The builder of the named plugin: registered first, then the `apportion.plugins` entry points.

    None when neither provides it; `LookupError` (one line) when an installed one fails to load.
    """
    return _plugins.lookup(name)


def get_action(name: str) -> Action[Any] | None:
    """The named action: registered first, then the `apportion.actions` entry points; None if unknown.

    `LookupError` (one line) when an installed one fails to load.
    """
    return _actions.lookup(name)


def plugin_names() -> list[str]:
    """The names of every registered or installed plugin, sorted."""
    return _plugins.names()


def action_names() -> list[str]:
    """The names of every registered or installed action, sorted."""
    return _actions.names()
