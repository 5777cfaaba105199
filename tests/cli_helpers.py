"""Helpers shared by the command-line tests: run ``egnlp`` in-process and read its outcome.

With typer 0.29 the runner keeps ``result.stdout`` and ``result.stderr``
apart (``result.output`` interleaves both). An uncaught exception also ends
with exit code 1 but leaves no traceback in the output, so user errors are
recognised by ``result.exception`` being the ``SystemExit`` of ``fail()``.
"""

from __future__ import annotations

import traceback
from pathlib import Path

import typer
from typer.testing import CliRunner, Result

from egnlp.cli import app

RUNNER = CliRunner()


def run(*args: object, input: str | None = None) -> Result:
    """Invoke ``egnlp`` with the arguments (paths and numbers become strings) and optional stdin."""
    return RUNNER.invoke(app, [str(arg) for arg in args], input=input)


def describe(result: Result) -> str:
    """Exit code, output and any exception of a run, for assertion messages."""
    text = f"exit code {result.exit_code}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}"
    if result.exc_info is not None and not isinstance(result.exception, SystemExit):
        text += "--- exception\n" + "".join(traceback.format_exception(*result.exc_info))
    return text


def assert_ok(result: Result) -> None:
    assert result.exit_code == 0, describe(result)


def ok_output(outcome: tuple[Result, Path]) -> Path:
    """The file a successful command wrote, from a ``(result, path)`` pair."""
    result, path = outcome
    assert_ok(result)
    return path


def error_line(result: Result, status: int = 1) -> str:
    """The one ``error: ...`` line of a command that failed on bad user input.

    Asserts the exit ``status`` (1: the input; 2: the command line) from the CLI's own error path (not a
    crash), no traceback, nothing on stdout and exactly one line on stderr.
    """
    assert result.exit_code == status, describe(result)
    assert isinstance(result.exception, SystemExit), describe(result)
    assert "Traceback" not in result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, describe(result)
    assert lines[0].startswith("error: "), describe(result)
    return lines[0]


def usage_line(result: Result) -> str:
    """The one ``error: ...`` line of a command the command line itself refused (an invalid choice, a
    missing option, settings that do not go together): exit status 2, one line on stderr naming the
    command's ``--help``."""
    line = error_line(result, 2)
    assert line.endswith(" --help')"), describe(result)
    return line


def commands(group: typer.core.TyperGroup, path: tuple[str, ...] = ()):
    """(path, click command) of every command under ``group``, depth first."""
    ctx = typer.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, typer.core.TyperGroup):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name), command
