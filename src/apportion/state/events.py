"""Watch events: the one door into the cache.

An event has the Kubernetes watch shape, `{"type": "ADDED"|"MODIFIED"|"DELETED", "object": {...}}`, so a
recorded `kubectl get -w -o json --output-watch-events` stream, the simulator and the service all feed
the cache the same way.
"""

from __future__ import annotations

from typing import Any

from apportion.errors import InputError
from apportion.lean_dataclass import dataclass

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
EVENT_TYPES = (ADDED, MODIFIED, DELETED)


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change to one object. `where` locates it for messages (a file and line, or a source name).

    A producer that already holds the parsed record (the simulator) may pass it as `record`: the cache
    then skips parsing `object`. The two must agree; `state.check.check_cache(reparse=True)` verifies it.
    """

    type: str
    object: dict[str, Any]
    where: str = ""
    record: Any = None

    @property
    def kind(self) -> str:
        """The object's kind."""
        return str(self.object.get("kind", ""))

    def to_json(self) -> dict[str, Any]:
        """The watch shape."""
        return {"type": self.type, "object": self.object}


def added(obj: dict[str, Any], where: str = "") -> WatchEvent:
    """An ADDED event for obj."""
    return WatchEvent(ADDED, obj, where)


def modified(obj: dict[str, Any], where: str = "") -> WatchEvent:
    """A MODIFIED event for obj."""
    return WatchEvent(MODIFIED, obj, where)


def deleted(obj: dict[str, Any], where: str = "") -> WatchEvent:
    """A DELETED event for obj."""
    return WatchEvent(DELETED, obj, where)


def parse_event(data: Any, where: str) -> WatchEvent:
    """A watch event from decoded JSON. A bare Kubernetes object (what `kubectl get -w -o json` prints
    without `--output-watch-events`) is a MODIFIED event, which the cache treats as ADDED for an object
    it does not know, as an informer does. Raises InputError naming the field."""
    if not isinstance(data, dict):
        raise InputError(f"expected a watch event or a Kubernetes object (a JSON object), got {type(data).__name__}",
                         where=where)
    if "object" not in data and "kind" in data:
        return WatchEvent(MODIFIED, data, where)
    typ = data.get("type")
    if typ not in EVENT_TYPES:
        if typ is None:
            raise InputError("type: required field is missing", where=where)
        raise InputError(f"type: expected ADDED, MODIFIED or DELETED, got {typ!r}", where=where)
    obj = data.get("object")
    if not isinstance(obj, dict):
        raise InputError("object: required mapping is missing" if obj is None
                         else f"object: expected a mapping, got {type(obj).__name__}", where=where)
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise InputError("object.kind: required field is missing or not a string", where=where)
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise InputError("object.metadata: required mapping is missing", where=where)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("object.metadata.name: required field is missing or empty", where=where)
    return WatchEvent(typ, obj, where)
