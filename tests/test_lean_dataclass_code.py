"""The compiled texts `lean_dataclass` keeps (`__pycache__/dataclass_code.<tag>.bin`, KEPT_CODE): each kept
code object is what compiling its text gives, a class made with the table runs the kept code, a text the
table lacks is compiled as ever and added to the file at exit (not where bytecode is not written), and the
table `write_kept_code` writes covers the classes on the forecast's path."""

from __future__ import annotations

import dataclasses
import marshal
import os
import subprocess
import sys
from typing import Any

import pytest

from apportion import lean_dataclass


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A table written by `write_kept_code` in a fresh interpreter, as `make` writes it."""
    path = str(tmp_path_factory.mktemp("kept") / "dataclass_code.bin")
    subprocess.run([sys.executable, "-c", "import sys; from apportion.lean_dataclass import write_kept_code; "
                    "write_kept_code(sys.argv[1])", path], check=True, capture_output=True)
    return path


def _table(path: str) -> dict[str, bytes]:
    with open(path, "rb") as fh:
        tag, table = marshal.loads(fh.read())
    assert tag == lean_dataclass._interpreter_tag()
    return table  # type: ignore[no-any-return]


def test_every_kept_code_object_is_its_text_compiled(written: str) -> None:
    table = _table(written)
    assert len(table) > 100
    for text, blob in table.items():
        code = marshal.loads(blob)
        assert code == lean_dataclass._compile(text)
        assert code.co_filename == "<string>" and code.co_consts == lean_dataclass._compile(text).co_consts


def _made(frozen: bool) -> Any:
    body: dict[str, Any] = {"__annotations__": {"a": "int", "b": "list[int]"}, "__module__": __name__,
                            "__qualname__": "Made", "b": dataclasses.field(default_factory=list)}
    return lean_dataclass.dataclass(frozen=frozen)(type("Made", (), body))


@pytest.mark.parametrize("frozen", [False, True])
def test_kept_code_runs_and_matches(frozen: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    texts: list[str] = []
    real_exec = lean_dataclass.builtins.exec

    def record(source: Any, g: Any = None, ns: Any = None, /) -> None:
        if isinstance(source, str):
            texts.append(source)  # (compiled as `dataclasses` compiles it: no `__future__` of this module)
            source = compile(source, "<string>", "exec", dont_inherit=True)
        real_exec(source, g, ns)

    monkeypatch.setattr(lean_dataclass, "KEPT_CODE", False)
    monkeypatch.setitem(vars(dataclasses), "exec", record)
    plain = _made(frozen)
    monkeypatch.delitem(vars(dataclasses), "exec")
    assert texts and "exec" not in vars(dataclasses)
    # a table holding these texts' code, marked by its file name: the class made with it runs that code
    kept = {t: marshal.dumps(compile(t, "<kept>", "exec", dont_inherit=True)) for t in texts}
    monkeypatch.setattr(lean_dataclass, "_kept", kept)
    monkeypatch.setattr(lean_dataclass, "KEPT_CODE", True)
    monkeypatch.setenv("APPORTION_CHECK_STATE", "1")
    fast = _made(frozen)
    assert "exec" not in vars(dataclasses)
    assert fast.__init__.__code__.co_filename == "<kept>"
    assert fast.__init__.__code__ == plain.__init__.__code__
    assert fast.__init__.__annotations__ == plain.__init__.__annotations__ == {"a": "int", "b": "list[int]",
                                                                               "return": None}
    assert repr(fast(1)) == repr(plain(1)) == "Made(a=1, b=[])"
    if frozen:
        with pytest.raises(dataclasses.FrozenInstanceError):
            fast(1).a = 2
    # a text the table lacks: compiled as ever
    monkeypatch.setattr(lean_dataclass, "_kept", {"def x(): pass": b""})
    other = _made(frozen)
    assert other.__init__.__code__.co_filename == "<string>"
    assert other.__init__.__code__ == plain.__init__.__code__  # (no `__future__` flag of lean_dataclass's)
    assert other.__init__.__annotations__ == plain.__init__.__annotations__


_PROBE = """
import builtins, os, sys
from apportion import lean_dataclass
lean_dataclass.KEPT_CODE_PATH = sys.argv[1]
missed = []
table = lean_dataclass._kept_code()
real = lean_dataclass._exec
def spy(source, g=None, ns=None, /):
    if isinstance(source, str) and source not in table:
        missed.append(source)
    real(source, g, ns)
lean_dataclass._exec = spy
import apportion.cli.forecast, apportion.forecast.api, apportion.forecast.render, apportion.forecast.sim
print(len(table), len(missed))
"""


def _probe(path: str, *, write: bool) -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    out = subprocess.run([sys.executable, "-c", _PROBE, path], capture_output=True, text=True, check=True, env=env)
    kept, missed = out.stdout.split()
    return int(kept), int(missed)


def test_the_forecast_path_is_in_the_written_table(written: str) -> None:
    # every text the forecast's modules compile is in the table `write_kept_code` writes
    assert _probe(written, write=False)[1] == 0


def test_a_run_adds_what_it_compiled_unless_bytecode_is_not_written(tmp_path: Any) -> None:
    path = str(tmp_path / "dataclass_code.bin")
    # bytecode not written (PYTHONDONTWRITEBYTECODE, as for .pyc files) and no table: nothing goes
    # through the table, and nothing is written
    assert _probe(path, write=False) == (0, 0) and not os.path.exists(path)
    kept, missed = _probe(path, write=True)
    assert kept == 0 and missed > 50
    assert len(_table(path)) == missed  # written at exit
    assert _probe(path, write=True) == (missed, 0)  # the next run compiles nothing
    assert _probe(path, write=False) == (missed, 0)  # and reads the table where it writes nothing
    with open(path, "wb") as fh:
        fh.write(b"not a table")
    assert _probe(path, write=False) == (0, 0)  # a bad file is no table: everything compiled as ever
