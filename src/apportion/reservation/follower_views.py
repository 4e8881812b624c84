"""The incremental follower's published child queues (`PublishedViews`, mixed into
`follower_inc.IncrementalFollower`).

A step changes a few queues; the mapping of all child queues it publishes is made again (when read)
only when one of them changed, and each queue's view only when that queue did. The views of the
queues a step changed are made when the mapping is read, or ahead of the next step by the follower's
`prepare`, not by the step: a reader of the changes alone (the service) never reads them.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sortedcontainers import SortedDict

from apportion.reservation.follower import QueueView
from apportion.reservation.published import LazyQueues

if TYPE_CHECKING:
    from apportion.reservation.follower import ChildQueue


class PublishedViews:
    """The published queue mapping and its views, kept as the follower's steps change queues."""

    queues: dict[str, ChildQueue]
    _views: SortedDict
    _dirty: set[str]
    _stale: set[str]
    _queues_ref: weakref.ref[LazyQueues] | None
    _queues_dict: Mapping[str, QueueView] | None

    def _publish_queues(self) -> Mapping[str, QueueView]:
        """The child queues sorted by name, made again (when read) only when one of them changed. The
        views of the queues a step changed are made when the mapping is (`_refresh_views`), or ahead of
        the next step by `prepare`, not by the step: a reader of the changes (the service) never reads
        them."""
        dirty, self._dirty = self._dirty, set()
        current = self._queues_dict
        if current is None and self._queues_ref is not None:
            current = self._queues_ref()
        if not dirty and current is not None:
            return current
        self._stale |= dirty
        if len(self._stale) > max(4096, 2 * len(self.queues)):
            self._refresh_views(None)  # nobody reads them: kept from growing with every name ever seen
        current = LazyQueues(self._make_views)
        self._queues_ref, self._queues_dict = weakref.ref(current), None
        return current

    def _make_views(self) -> dict[str, QueueView]:
        self._refresh_views(None)
        views = self._views
        return dict(zip(views, map(views.__getitem__, views)))

    def _refresh_views(self, limit: int | None) -> int:
        """The views of (at most `limit` of) the queues changed since their views were made, as the
        queues are now (which is as the last step left them: whoever changes a queue after a step
        first makes the published views still held, `_settle_published`). Returns how many."""
        stale = self._stale
        if limit is None or limit >= len(stale):
            names, self._stale = stale, set()
        else:
            names = {stale.pop() for _ in range(limit)}
        views, queues = self._views, self.queues
        for name in names:
            q = queues.get(name)
            if q is None:
                views.pop(name, None)
            else:
                views[name] = QueueView(name, q.capacity, q.max_capacity, tuple(q.apps))
        return len(names)
