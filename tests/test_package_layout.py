"""The package's folders are regular packages, so import-linter's contracts see every module."""

from __future__ import annotations

from pathlib import Path

import apportion

SRC = Path(apportion.__file__).parent


def test_every_folder_with_modules_is_a_regular_package():
    """A folder of modules without __init__.py is a namespace package, which import-linter (grimp) skips:
    its imports would escape the layer and cycle contracts in pyproject.toml."""
    missing = sorted(
        str(folder.relative_to(SRC))
        for folder in SRC.rglob("*")
        if folder.is_dir() and folder.name != "__pycache__" and any(folder.glob("*.py"))
        and not (folder / "__init__.py").exists()
    )
    assert missing == []
