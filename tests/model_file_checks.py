"""Checks shared by the tests of model files: what every loader refuses, with a ModelError naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from egnlp.base.errors import ModelError


def check_missing_and_junk(load: Callable[[Path], Any], folder: Path) -> None:
    """``load`` refuses a file that does not exist and one that is no zip archive."""
    with pytest.raises(ModelError, match="no such model file"):
        load(folder / "missing.npz")
    junk = folder / "junk.npz"
    junk.write_bytes(b"not a zip file at all")
    with pytest.raises(ModelError, match="not an egnlp model file"):
        load(junk)
