"""What an incremental follower step publishes whole, made only when someone reads it.

`FollowerState.active` (every active reservation's share, in the full step's order) and
`FollowerState.queues` (every child queue, by name) take time in proportion to the active
reservations to build, although a reader that follows the step's `changes` (the service) never
reads them. `IncrementalFollower` hands them out as these views: each is made from the follower's
structures when first read, and the follower makes any view still referenced before its next step
changes those structures, so a view reads as the tuple or dict it stands for whenever it is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from apportion.reservation.follower import QueueView, ReservationShare


class LazyShares(Sequence["ReservationShare"]):
    """A tuple of shares, made by `make` when first read; equal to that tuple."""

    __slots__ = ("_make", "_rows", "__weakref__")

    def __init__(self, make: Callable[[], tuple[ReservationShare, ...]]) -> None:
        self._make: Callable[[], tuple[ReservationShare, ...]] | None = make
        self._rows: tuple[ReservationShare, ...] | None = None

    def rows(self) -> tuple[ReservationShare, ...]:
        """The tuple (made now if it was not yet)."""
        if self._rows is None:
            assert self._make is not None
            self._rows, self._make = self._make(), None
        return self._rows

    def __len__(self) -> int:
        return len(self.rows())

    @overload
    def __getitem__(self, i: int) -> ReservationShare: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[ReservationShare, ...]: ...

    def __getitem__(self, i: int | slice) -> ReservationShare | tuple[ReservationShare, ...]:
        return self.rows()[i]

    def __iter__(self) -> Iterator[ReservationShare]:
        return iter(self.rows())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyShares):
            other = other.rows()
        return self.rows() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.rows())


class LazyQueues(Mapping[str, "QueueView"]):
    """A dict of queue views by name, made by `make` when first read; equal to that dict."""

    __slots__ = ("_make", "_queues", "__weakref__")

    def __init__(self, make: Callable[[], dict[str, QueueView]]) -> None:
        self._make: Callable[[], dict[str, QueueView]] | None = make
        self._queues: dict[str, QueueView] | None = None

    def queues(self) -> dict[str, QueueView]:
        """The dict (made now if it was not yet)."""
        if self._queues is None:
            assert self._make is not None
            self._queues, self._make = self._make(), None
        return self._queues

    def __getitem__(self, name: str) -> QueueView:
        return self.queues()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.queues())

    def __len__(self) -> int:
        return len(self.queues())

    def __contains__(self, name: object) -> bool:
        return name in self.queues()

    def items(self) -> Any:
        """The dict's items."""
        return self.queues().items()

    def keys(self) -> Any:
        """The dict's keys."""
        return self.queues().keys()

    def values(self) -> Any:
        """The dict's values."""
        return self.queues().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyQueues):
            other = other.queues()
        return self.queues() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.queues())
