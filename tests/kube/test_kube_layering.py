"""The readers sit below the framework: loading kubectl YAML never imports it."""

from __future__ import annotations

import subprocess
import sys


def test_kube_readers_do_not_import_the_framework() -> None:
    code = ("import sys, apportion.kube; "
            "bad = sorted(m for m in sys.modules if m.startswith(('apportion.framework', 'apportion.engine', "
            "'apportion.plugins', 'apportion.cli'))); print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_snapshot_conf_stays_text_until_the_engine_parses_it(tmp_path) -> None:
    from apportion.engine import snapshot_conf
    from apportion.kube import load_snapshot

    f = tmp_path / "s.yaml"
    f.write_text("kind: Widget\nmetadata: {name: w}\n---\nkind: ConfigMap\nmetadata: {name: c}\n"
                 "data: {volcano-scheduler.conf: \"actions: allocate\\nodd: 1\\n\"}\n---\n"
                 "kind: Pod\nmetadata: {name: p, annotations: {scheduling.k8s.io/group-name: ghost}}\n"
                 "spec: {containers: []}\n")
    snap = load_snapshot([str(f)])
    assert snap.conf_text is not None and "odd: 1" in snap.conf_text.text
    assert len(snap.warnings) == 2
    conf = snapshot_conf(snap)
    assert conf is not None and conf.actions == ["allocate"]
    # the conf's warning sits at the ConfigMap's place, between the two reader warnings, once
    snapshot_conf(snap)
    assert [("odd" in w, "Widget" in w) for w in snap.warnings] == [(False, True), (True, False), (False, False)]
