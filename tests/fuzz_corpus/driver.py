"""Run every input of the fuzz corpus through the real commands, in one process, and print one JSON
line per run: the file, the command, its exit status, its wall time and its stderr.

Used by tests/cli/test_fuzz_corpus.py, which runs this under a memory limit. Standalone:
`python tests/fuzz_corpus/driver.py CORPUS_DIR`.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from apportion.cli import main

#: the commands each folder's inputs go through ({} is the input's path; VALID the valid snapshot)
COMMANDS = {
    "cycle": [["cycle", "{}", "-o", "json"], ["quota", "{}", "-o", "json"]],
    "conf": [["cycle", "VALID", "--conf", "{}", "-o", "json"]],
    "simulate": [["simulate", "{}", "-o", "json"]],
    "replay": [["plan", "replay", "{}", "-o", "json"]],
    "shadow": [["shadow", "{}", "--once"]],
}


def runs(corpus: Path) -> list[tuple[Path, list[str]]]:
    """(input, argv) for every input under `corpus`, in name order."""
    valid = str(corpus / "cycle" / "valid.yaml")
    out = []
    for folder, commands in COMMANDS.items():
        for f in sorted((corpus / folder).iterdir()):
            for argv in commands:
                out.append((f, [valid if a == "VALID" else a.replace("{}", str(f)) for a in argv]))
    return out


def main_() -> None:
    corpus = Path(sys.argv[1])
    runner = CliRunner()
    for f, argv in runs(corpus):
        t0 = time.perf_counter()
        res = runner.invoke(main, argv)
        print(json.dumps({"file": str(f.relative_to(corpus)), "argv": argv[:2], "exit": res.exit_code,
                          "seconds": round(time.perf_counter() - t0, 3), "stderr": res.stderr[:2000]}), flush=True)


if __name__ == "__main__":
    main_()
