"""Child processes of the benchmarks, timed by the operating system.

:func:`run` starts a command, waits for it with ``os.wait4`` and returns its
output with its wall seconds, its CPU seconds (user + system of the child and
of the children it waited for, such as ``--jobs`` workers) and its peak RSS.
On a shared machine the CPU seconds move less than the wall seconds: the
tables quote them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# The installed console script of this interpreter's environment: the CLI as users run it.
EGNLP = str(Path(sys.executable).parent / "egnlp")
# Children keep Python's bytecode cache, as an installed package does.
CHILD_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # one BLAS thread: steadier timings
    CHILD_ENV.setdefault(_var, "1")


@dataclass(frozen=True)
class Finished:
    """A finished child: its output, wall and CPU seconds, peak RSS in MB, exit status."""

    stdout: str
    stderr: str
    wall: float
    cpu: float
    peak_mb: float
    returncode: int = 0


def run(argv: list[object], *, stdin: str | None = None, check: bool = True,
        env: dict[str, str] | None = None) -> Finished:
    """Run ``argv`` to its end; with ``check`` a failure stops the benchmark with the command and its errors.
    ``env``: variables set for this child on top of :data:`CHILD_ENV`."""
    args = [str(a) for a in argv]
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out, tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        start = time.perf_counter()
        child = subprocess.Popen(args, stdout=out, stderr=err, env={**CHILD_ENV, **(env or {})}, text=True,
                                 stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        if stdin is not None:
            child.stdin.write(stdin)
            child.stdin.close()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if check and child.returncode != 0:
        shown = " ".join(args[3:] if args[1:2] == ["-c"] else args)
        sys.exit(f"failed ({child.returncode}): {shown[:400]}\n{stderr.strip()[-2000:]}")
    return Finished(stdout, stderr, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, child.returncode)


def egnlp(*args: object, check: bool = True, env: dict[str, str] | None = None) -> Finished:
    """``egnlp ARGS`` by the console script of this environment (:func:`run`)."""
    return run([EGNLP, *args], check=check, env=env)


def log(message: str) -> None:
    """A progress line on stderr with the time of day."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def kept_parser(folder: Path, scratch: Path, name: str, commit: str, train_file: Path, *options: object) -> Path:
    """The model of ``egnlp parser train --train TRAIN_FILE OPTIONS``: ``folder/NAME-COMMIT.npz``, trained
    there once and reused by later runs at the same commit; in ``scratch`` when the commit is not one
    (uncommitted changes: its name has a space), so it is trained again every run."""
    model = folder / f"{name}-{commit}.npz" if " " not in commit else scratch / f"{name}.npz"
    if not model.exists():
        shown = " ".join(str(option) for option in options)
        log(f"egnlp parser train --train {train_file.name}{' ' + shown if shown else ''}")
        egnlp("parser", "train", "--train", train_file, *options, "--out", model, "-q")
    return model
