"""The scheduler configuration as text: from a ConfigMap of a dump (`objects.parse_conf_map`) or from a
`--conf` file (the conf itself or its ConfigMap). Both go through `configmap_conf`, so a ConfigMap is
read the same way wherever it comes from. Parsing the text is the framework's job
(`framework.conf.parse_conf`)."""

from __future__ import annotations

from apportion.cluster.snapshot import ConfText
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
