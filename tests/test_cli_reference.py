"""The command line stays a thin layer with a reference that is true.

- ``docs/cli.md`` is what typer makes of the app (``python -m typer egnlp.cli utils docs ...``);
- every command function is at most 40 lines: it builds settings, calls the application layer, prints.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import typer

from cli_helpers import commands
from egnlp.cli import app

ROOT = Path(__file__).resolve().parents[1]
DOCS_COMMAND = [sys.executable, "-m", "typer", "egnlp.cli", "utils", "docs", "--name", "egnlp",
                "--title", "egnlp command line"]
MAX_COMMAND_LINES = 40


def test_docs_cli_md_is_the_apps_reference(tmp_path: Path) -> None:
    out = tmp_path / "cli.md"
    subprocess.run([*DOCS_COMMAND, "--output", str(out)], check=True, capture_output=True, cwd=ROOT)
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == out.read_text(encoding="utf-8"), (
        "docs/cli.md is out of date; regenerate it with: " + " ".join(DOCS_COMMAND[1:]) + " --output docs/cli.md")


def test_every_command_function_is_short() -> None:
    long = []
    for path, command in commands(typer.main.get_command(app)):
        function = inspect.unwrap(command.callback.__wrapped__ if hasattr(command.callback, "__wrapped__")
                                  else command.callback)
        lines, _ = inspect.getsourcelines(function)
        if len(lines) > MAX_COMMAND_LINES:
            long.append(f"egnlp {' '.join(path)}: {function.__module__}.{function.__name__}, {len(lines)} lines")
    assert not long, "\n".join(long)
