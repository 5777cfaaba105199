"""Checks shared by the tests that write Universal Dependencies files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def udvalidate(path: Path, lang: str, level: int = 2) -> subprocess.CompletedProcess:
    """The official UD validator of udtools (the test extra) on ``path``."""
    tool = Path(sys.executable).parent / "udvalidate"
    assert tool.exists(), "udvalidate not found: install the test extra (udtools)"
    return subprocess.run([str(tool), "--level", str(level), "--lang", lang, str(path)], capture_output=True,
                          text=True)
