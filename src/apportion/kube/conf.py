"""The scheduler configuration as text: from the ConfigMaps of a snapshot or from a `--conf` file (the
conf itself or its ConfigMap). Both go through `configmap_conf`, so a ConfigMap is read the same way
wherever it comes from. Parsing the text is the framework's job (`framework.conf.parse_conf`)."""

from __future__ import annotations

from apportion.cluster.snapshot import ConfText, Snapshot
from apportion.errors import InputError
from apportion.kube.documents import load_yaml, read_text
from apportion.kube.fields import Fields

CONF_KEY = "volcano-scheduler.conf"


def configmap_conf(o: Fields) -> str | None:
    """The `volcano-scheduler.conf` a ConfigMap carries (None: it carries none)."""
    data = o.map_("data")
    if CONF_KEY not in data:
        return None
    text = data[CONF_KEY]
    if not isinstance(text, str):
        raise o.fail(f"data.{CONF_KEY}", f"expected a string, got {type(text).__name__}")
    return text


def conf_text(snap: Snapshot, objs: list[Fields]) -> None:
    """The `volcano-scheduler.conf` of the snapshot's ConfigMaps, as text (several must agree)."""
    found: list[tuple[str, str]] = []
    for o in objs:
        text = configmap_conf(o)
        if text is not None:
            found.append((o.where, text))
    if not found:
        return
    if len({t for _, t in found}) > 1:
        raise InputError(
            "several ConfigMaps carry different volcano-scheduler.conf; keep one", where=found[-1][0]
        )
    where, text = found[0]
    snap.conf_text = ConfText(text=text, where=f"{where}: data.{CONF_KEY}", warnings_at=len(snap.warnings))


def read_conf_file(path: str) -> ConfText:
    """A `--conf` file: the scheduler conf itself, or a ConfigMap that carries it."""
    text = read_text(path)
    doc = load_yaml(text, path)
    if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
        inner = configmap_conf(Fields(doc, path))
        if inner is None:
            raise InputError(f"ConfigMap has no data.{CONF_KEY}", where=path)
        return ConfText(text=inner, where=f"{path}: data.{CONF_KEY}")
    return ConfText(text=text, where=path)
