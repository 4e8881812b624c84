"""The look apportion's HTML pages share: the service's dashboard and the simulator's report.

One palette (the colour of allocated, deserved, pending, ... wherever they are drawn), one base
template (`page.html`), one style sheet (`static/apportion.css`) and one chart code path
(`charts.py` builds the charts, the macros of `templates/charts.html` draw them, `static/charts.js`
draws the line charts with the vendored uPlot). The dashboard serves the static files; the report
inlines them, so it stays one self-contained file that opens offline. Every chart reads its
colours from the CSS variables `page.html` writes from `PALETTE`.
"""

from __future__ import annotations

from importlib import resources as ires

import jinja2

from apportion.web.charts import number, resource_label, resource_unit

#: what each quantity is drawn in, everywhere (the tab10 colours the report's plots always had)
PALETTE: dict[str, str] = {
    "allocated": "#1f77b4",
    "deserved": "#2ca02c",
    "pending": "#ff7f0e",
    "other": "#d62728",
    "guarantee": "#9467bd",
    "capability": "#7f7f7f",
    "realCapability": "#8c564b",
    "capacity": "#333333",
    "limit": "#d62728",
    "average": "#e377c2",
    "reservation": "#2ca02c",
    # the cluster's utilisation per resource, and its fairness
    "cpu": "#1f77b4",
    "memory": "#ff7f0e",
    "gpu": "#2ca02c",
    "fairness": "#9467bd",
}


def static_text(name: str) -> str:
    """A shared static file's text (the report inlines the style sheet with it)."""
    return ires.files("apportion.web").joinpath("static", name).read_text(encoding="utf-8")


def environment(*packages: str) -> jinja2.Environment:
    """A Jinja2 environment over the templates of `packages` (searched first) and the shared ones."""
    loaders: list[jinja2.BaseLoader] = [jinja2.PackageLoader(p, "templates") for p in packages]
    loaders.append(jinja2.PackageLoader("apportion.web", "templates"))
    env = jinja2.Environment(loader=jinja2.ChoiceLoader(loaders), autoescape=jinja2.select_autoescape(["html"]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals["palette"] = PALETTE
    env.globals["static_text"] = static_text
    env.globals.update(number=number, resource_label=resource_label, resource_unit=resource_unit)
    return env


__all__ = ["PALETTE", "environment", "static_text"]
