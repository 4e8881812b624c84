"""The self-checks of capacity's ledger (ledger.py), run under `APPORTION_CHECK_STATE=1`: its split from
the jobs' delta against the full split, new jobs counted in together against job by job, attributes
built from the last ones against a build afresh, and the cached first listers against their sets."""

from __future__ import annotations

import copy
from typing import Any

from apportion.cluster.model import JobInfo
from apportion.plugins.capacity.attrs import QueueAttr
from apportion.plugins.capacity.ledger_sums import NewJob, count_in_many
from apportion.state import check

#: the checks take the ledger (ledger.py `Ledger`, which imports this module) untyped
Ledger = Any


def check_split(ledger: Ledger, jobs: dict[str, JobInfo], look: set[str]) -> None:
    """The delta names every job the full split would find changed or gone."""
    entries = ledger.entries
    missed = [uid for uid, job in jobs.items() if uid not in look and not (
        (e := entries.get(uid)) is not None and e.job is job and e.version == job.version and e.phase is job.phase)]
    missed.extend(uid for uid in entries.keys() - jobs.keys() if uid not in look)
    if missed:
        raise check.StateCheckError(f"{check.ENV}: capacity's ledger split from the jobs' delta passes over "
                                    f"jobs the full split charges again: {sorted(missed)[:5]}")


def check_many(ledger: Ledger, batch: list[NewJob], nfields: int) -> None:
    """Count the batch in together (`count_in_many`), and compare with `_admit_new` job by job on a
    copy of the sums: the same sums, members, listers and dirty marks. The ledger keeps the former."""
    sums, dirty = copy.deepcopy(ledger.sums), dict(ledger.dirty)
    for uid, path, amounts in batch:
        ledger._admit_new(uid, path, amounts)
    want, want_dirty = ledger.sums, ledger.dirty
    ledger.sums, ledger.dirty = sums, dirty
    count_in_many(sums, dirty, batch, nfields)
    got = {q: [(s.cpu, s.memory, s.scalars, s.members, s.listers) for s in v] for q, v in sums.items()}
    if got != {q: [(s.cpu, s.memory, s.scalars, s.members, s.listers) for s in v] for q, v in want.items()} or (
            dirty != want_dirty):
        raise check.StateCheckError(f"{check.ENV}: capacity's ledger counted {len(batch)} new jobs in together "
                                    "to sums, listers or dirty marks other than job by job")


def check_kept_fields(q: str, got: QueueAttr, want: QueueAttr, fields: tuple[str, ...]) -> None:
    """Attributes built from the last ones are those built afresh, field by field (the scalar names in
    the same order) and share."""
    bad = [name for name in fields if not (
        getattr(got, name) == getattr(want, name)
        and list(getattr(got, name).scalars) == list(getattr(want, name).scalars))]
    if got.share != want.share:
        bad.append("share")
    bad.extend(name for name, v in want.__dict__.items() if name not in fields and name != "share"
               and got.__dict__.get(name) != v)
    if bad:
        raise check.StateCheckError(f"{check.ENV}: capacity's ledger built queue {q}'s attributes from its "
                                    f"last ones with {', '.join(bad)} differing from a build afresh")


def check_first_listers(ledger: Ledger, fields: tuple[str, ...]) -> None:
    """Every cached first lister is the smallest of its name's listers."""
    for q, sums in ledger.sums.items():
        for f, s in enumerate(sums):
            for n, at in s.first.items():
                if at != min(s.listers[n]):
                    raise check.StateCheckError(
                        f"{check.ENV}: capacity's ledger holds {at} as the first lister of {n} in queue {q}'s "
                        f"{fields[f]}, but the smallest of its listers is {min(s.listers[n])}")
