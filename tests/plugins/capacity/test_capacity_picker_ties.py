"""The tree picker's open ties: a pop that scans a tie keeps the tie's leaves for the next pop
(`TreePicker._tie_leaves`), which must list exactly what gathering them afresh lists (`_homes`,
sorted by position), through whole cycles where shares move, queues are pushed back and tied
parents leave the tie; and the cycle decides as with the reference gathering and as with the scan."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_capacity_picker import CONF, tied_parents, trees

from apportion.framework.conf import parse_conf
from apportion.framework.queue_picker import ScanPicker
from apportion.framework.session import Session
from apportion.plugins.capacity import picker as capacity_picker

from k8s import cycle, node, pod, podgroup, queue, session


def _checked(monkeypatch: pytest.MonkeyPatch, kept: list[int]) -> None:
    """Every tie's leaves compared with the reference gathering; `kept` counts the reused ones."""
    real = capacity_picker.TreePicker._tie_leaves

    def check(self: Any, at: str, group: set[str], tie: Any) -> tuple[list[str], dict[str, str]]:
        listed, home = real(self, at, group, tie)
        ref_home = self._homes(group)
        assert listed == sorted(ref_home, key=self.seq.__getitem__)
        assert {leaf: home[leaf] for leaf in listed} == ref_home
        if tie is not None and tie[0] == at:
            kept.append(1)
        return listed, home

    monkeypatch.setattr(capacity_picker.TreePicker, "_tie_leaves", check)


def _decides_as_the_references(objs: list[dict], monkeypatch: pytest.MonkeyPatch) -> list[int]:
    kept: list[int] = []
    with monkeypatch.context() as m:
        _checked(m, kept)
        fast = cycle(objs, CONF).to_json()
    monkeypatch.setattr(capacity_picker.TreePicker, "reuse_ties", False)
    assert fast == cycle(objs, CONF).to_json()
    monkeypatch.setattr(Session, "fast_queue_pickers", False)
    assert fast == cycle(objs, CONF).to_json()
    return kept


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=tied_parents())
def test_kept_tie_leaves_are_the_gathered_ones_over_tied_parents(objs: list[dict],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _decides_as_the_references(objs, monkeypatch)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(objs=trees(three_levels=True))
def test_kept_tie_leaves_are_the_gathered_ones_over_random_trees(objs: list[dict],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _decides_as_the_references(objs, monkeypatch)


def test_a_tie_scanned_again_reuses_its_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three parents tie at share 0; under each, the leaf with a deserved beats the best-effort one, and
    across the tie leaves compare by name, a cycle (q0p1 < q1p0 < q0p0 < q0p1): the first pop scans
    the tie; the job it places lifts p0 out of it, and the next pop scans the two left from the first
    pop's leaves."""
    objs = [node("n0", cpu=64, memory="256Gi"), queue("root")]
    for p in ("p0", "p1", "p2"):
        objs += [queue(p, parent="root", deserved={"cpu": "8"}),
                 queue(f"q0{p}", parent=p), queue(f"q1{p}", parent=p, deserved={"cpu": "4"})]
        for q in (f"q0{p}", f"q1{p}"):
            for j in range(2):
                objs += [podgroup(f"{q}-j{j}", queue=q, phase="Inqueue"), pod(f"{q}-j{j}-0", f"{q}-j{j}", cpu=1)]
    kept = _decides_as_the_references(objs, monkeypatch)
    assert kept


@st.composite
def pops_and_pushes(draw: Any) -> tuple[list[dict], list[int], list[bool]]:
    """Tied parents, the leaves listed in any order, and for each pop whether the queue goes back."""
    objs = draw(tied_parents())
    leaves = sorted(o["metadata"]["name"] for o in objs if o["kind"] == "Queue")
    order = draw(st.permutations(range(len(leaves))))
    back = draw(st.lists(st.booleans(), min_size=1, max_size=40))
    return objs, order, back


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=pops_and_pushes())
def test_pops_with_kept_ties_are_the_scans(case: tuple[list[dict], list[int], list[bool]]) -> None:
    """Pops, each queue pushed back or not, with no share moving: the tree picker (keeping its ties'
    leaves) pops what the reference scan pops."""
    objs, order, back = case
    ssn = session(objs, parse_conf(CONF))
    plugin = next(p for _, p in ssn.plugins if p.name == "capacity")
    leaves = [q for q in ssn.queues.values() if not plugin.attrs[q.name].children and q.name != "root"]
    queues = [leaves[i] for i in order if i < len(leaves)]
    scan = ScanPicker(queues, ssn.queue_compare)
    tree = capacity_picker.TreePicker(plugin, queues, ssn.queue_compare)
    for again in back:
        if not len(scan):
            break
        want = scan.pop()
        assert tree.pop().name == want.name
        if again:
            scan.push(want)
            tree.push(want)
    assert len(tree) == len(scan)
