"""`load_inputs` assembles a dump's snapshot from its records (`engine.LOAD_DIRECT`) as a fresh cache's
first snapshot does (the reference): the same snapshot, the same conf, the same cycle, or the same error,
whatever the dump holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cache_properties import an_object as cached_object

from apportion import engine
from apportion.errors import InputError
from apportion.state.check import canonical

NODES = ["n0", "n1"]
CONF_TEXT = "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n"


@st.composite
def an_object(draw: st.DrawFn) -> dict:
    """The cache property test's objects (two priority classes), a scheduler ConfigMap, a kind no reader
    takes, and pods for another scheduler."""
    kind = draw(st.sampled_from(["cached"] * 7 + ["ConfigMap", "Service"]))
    if kind == "ConfigMap":
        return {"kind": "ConfigMap", "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
                "data": {"volcano-scheduler.conf": draw(st.sampled_from([CONF_TEXT, CONF_TEXT + "# other\n"]))}}
    if kind == "Service":
        return {"kind": "Service", "metadata": {"name": "s"}}
    obj: dict = draw(cached_object(NODES, ("hi", "lo")))
    if obj["kind"] == "Pod" and draw(st.booleans()):
        obj["spec"]["schedulerName"] = draw(st.sampled_from(["volcano", "default-scheduler"]))
    return obj


def _snapshot_form(snap: object) -> object:
    form = dict(canonical(snap)[1])
    assert form.pop("nodes_key") is not None  # a key of its own, as the cache's token is
    return form


def _loaded(path: str, direct: bool) -> object:
    engine.LOAD_DIRECT = direct
    try:
        snap, conf = engine.load_inputs([path])
        form = (_snapshot_form(snap), canonical(conf))
        return form, engine.run_cycle(snap, conf).to_json()
    except InputError as e:
        return str(e)
    finally:
        engine.LOAD_DIRECT = True


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(objs=st.lists(an_object(), max_size=14), as_json=st.booleans())
def test_direct_load_is_the_cache_snapshot(tmp_path: Path, objs: list[dict], as_json: bool) -> None:
    path = tmp_path / ("d.json" if as_json else "d.yaml")
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}) if as_json
                    else yaml.safe_dump_all(objs))
    assert _loaded(str(path), True) == _loaded(str(path), False)


@pytest.mark.parametrize("direct", [True, False])
def test_a_missing_file_is_the_same_error(tmp_path: Path, direct: bool) -> None:
    assert _loaded(str(tmp_path / "none.yaml"), direct) == f"{tmp_path / 'none.yaml'}: cannot read: No such file or directory"
