"""capacity's reclaim point, what it says and the test it asks of every candidate: which dimensions two
requests share, and the texts of the candidates it spared (plugins/capacity/admission.py's
`reclaimable`)."""

from __future__ import annotations

from apportion.plugins.capacity.attrs import _fmt
from apportion.resources import MIN_RESOURCE, PODS, Resource

#: why a candidate was spared: the reason's kind, the queue, the candidate's key, and the queue's limit
#: (kind guarantee or deserved) or the leaf queue the ancestor is above (kind ancestor)
Spared = tuple[str, str, str, Resource | str]
#: the kinds of reason: evicting would take the queue below its guarantee; the queue is not above its
#: deserved; an ancestor is not above its deserved
BELOW_GUARANTEE = "guarantee"
NOT_ABOVE_DESERVED = "deserved"
ANCESTOR_NOT_ABOVE = "ancestor"


def shares_dimension(a: Resource, b: Resource, ignore_pods: bool = True) -> bool:
    """Whether some dimension (pods aside, unless `ignore_pods` is False) is at least 0.1 on both sides:
    the truth of `a.intersection_names(b, ignore_pods=ignore_pods)` without building the name sets
    (reclaimable asks it of every candidate; property-tested against intersection_names)."""
    if (a.cpu >= MIN_RESOURCE and b.cpu >= MIN_RESOURCE) or (a.memory >= MIN_RESOURCE and b.memory >= MIN_RESOURCE):
        return True
    other = b.scalars
    for n, v in a.scalars.items():
        if v >= MIN_RESOURCE and other.get(n, 0.0) >= MIN_RESOURCE and not (ignore_pods and n == PODS):
            return True
    return False


#: a limit's text by its value (cpu, memory, scalars in order: all that `_fmt` reads); a queue's limits
#: are few and are formatted again at every failed search
_FORMATTED: dict[tuple[float, float, tuple[tuple[str, float], ...]], str] = {}


def fmt_limit(r: Resource) -> str:
    """`_fmt(r)`, kept by value (a zero is formatted afresh: -0.0 and 0.0 are one key)."""
    if not (r.cpu and r.memory and all(r.scalars.values())):
        return _fmt(r)
    key = (r.cpu, r.memory, tuple(r.scalars.items()))
    text = _FORMATTED.get(key)
    if text is None:
        if len(_FORMATTED) >= 4096:
            _FORMATTED.clear()
        text = _FORMATTED[key] = _fmt(r)
    return text


def spared_texts(spared: list[Spared]) -> list[str]:
    """The reasons reclaimable gives for the candidates it spared, in order."""
    fmt = fmt_limit

    out = []
    for kind, queue, key, extra in spared:
        if isinstance(extra, str):
            out.append(f"queue {queue} (ancestor of {extra}): not above its deserved on what {key} requests")
        elif kind == BELOW_GUARANTEE:
            out.append(f"queue {queue}: evicting {key} would take it below its guarantee ({fmt(extra)})")
        else:
            out.append(f"queue {queue}: not above its deserved ({fmt(extra)}) on what {key} requests")
    return out
