"""The fuzz corpus (tests/fuzz_corpus/): every input that once crashed, hung or blew up a command, run
through the real commands. Each must exit 0 or 2 (with one line naming the file), within a time and a
memory bound. Add an input by dropping it in the folder of the command that reads it (README.md)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import yaml

CORPUS = Path(__file__).resolve().parents[1] / "fuzz_corpus"
#: per run, generous for a machine shared with other work: the slow cases took minutes or did not end
SECONDS = 15.0
#: the whole driver's address space; the blow-ups this corpus holds grew past 9 GB
MEMORY = 3 * 2**30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _corpus(tmp: Path) -> Path:
    """The corpus files plus the generated (too large to keep) inputs, in one folder."""
    out = tmp / "corpus"
    for f in CORPUS.rglob("*"):
        if f.is_file() and f.parent != CORPUS:
            dst = out / f.relative_to(CORPUS)
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(f.read_bytes())
    for item in yaml.safe_load((CORPUS / "generated.yaml").read_text()):
        text = "".join(p if isinstance(p, str) else p[0] * p[1] for p in item["parts"])
        dst = out / item["path"]
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(text)
    return out


def test_every_corpus_input_exits_0_or_2_in_bounded_time_and_memory(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", COLUMNS="80")
    proc = subprocess.run([sys.executable, str(CORPUS / "driver.py"), str(corpus)], capture_output=True, text=True,
                          timeout=600, preexec_fn=_limit_memory, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    expected = sum(len(cmds) * len(list((corpus / folder).iterdir()))
                   for folder, cmds in [("cycle", [1, 2]), ("conf", [1]), ("simulate", [1]), ("replay", [1]), ("shadow", [1])])
    assert len(results) == expected
    bad = [r for r in results if r["exit"] not in (0, 2) or r["seconds"] > SECONDS]
    assert not bad, "\n".join(f"{r['file']} {r['argv']}: exit {r['exit']} in {r['seconds']}s: {r['stderr'][:300]}"
                              for r in bad)
    for r in results:
        name = Path(r["file"]).name
        if r["exit"] == 2:
            lines = r["stderr"].splitlines()
            assert len(lines) == 1 and lines[0].startswith("apportion: error: "), r
            assert name in lines[0], r  # names the file it read
            assert len(lines[0]) < 400, r  # a bad value is never echoed whole
        if name.startswith("valid"):
            assert r["exit"] == 0, r
        else:
            assert r["exit"] == 2, r
