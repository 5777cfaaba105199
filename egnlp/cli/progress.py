"""Progress of the long commands on stderr, and the end of a training run that Ctrl-C stopped."""

from __future__ import annotations

import math
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from egnlp.base.errors import EgnlpError
from egnlp.cli.common import INTERRUPTED, is_stdio


def _known(value: float | None) -> bool:
    """Whether a record's objective or gap was computed: not None, not NaN (BCFW's passes without them,
    ``--gap-every``)."""
    return value is not None and not math.isnan(value)


def progress_printer(label: str, *, has_dual: bool = True):
    """A training callback printing one line per pass to stderr: ``label`` now, the columns' header with the
    first pass (so that the lines a command prints of its stages before the passes come before it).

    Trainers with a dual (``has_dual``) show the dual and the relative
    duality gap; the others the norm of the primal's gradient where they
    record it.
    """
    last = "rel.gap" if has_dual else "|grad|"
    typer.echo(label, err=True)
    header = [f"{'pass':>4} {'eff.it':>7} {'sec':>7} {'C':>8} {'primal':>12} "
              + (f"{'dual':>12} " if has_dual else "") + f"{last:>9} {'dev':>6}"]

    def show(r) -> None:
        if header:
            typer.echo(header.pop(), err=True)
        dev = f"{r.dev:6.2f}" if r.dev is not None else "     -"
        C = f"{r.C:8.3g}" if r.C is not None else " " * 8
        if has_dual:
            dual = f"{r.dual:12.2f} " if r.dual is not None else " " * 13
            end = " " * 9 if r.rel_gap is None else f"{r.rel_gap:9.2e}" if _known(r.rel_gap) else f"{'-':>9}"
        else:
            dual = ""
            end = f"{r.grad_norm:9.2e}" if r.grad_norm is not None else " " * 9
        primal = f"{r.primal:12.2f}" if _known(r.primal) else f"{'-':>12}"
        typer.echo(f"{r.passes:4d} {r.eff_iters:7.2f} {r.seconds:7.1f} {C} {primal} {dual}{end} {dev}", err=True)

    return show


class TrainingProgress:
    """The passes of a training run on stderr; use it as a context manager around training, and as a callback.

    On a terminal (stderr a TTY) a ``rich`` progress bar: the pass out of the
    pass limit, the primal objective, the relative duality gap (or the
    gradient norm of trainers without a dual), the dev score and the time.
    Elsewhere one line per pass after a header (:func:`progress_printer`;
    scripts read these lines). Nothing with ``quiet``.
    """

    def __init__(self, label: str, *, has_dual: bool = True, max_passes: int | None = None, quiet: bool = False,
                 terminal: bool | None = None) -> None:
        self.label = label
        self.has_dual = has_dual
        self.max_passes = max_passes
        self.quiet = quiet
        self.terminal = sys.stderr.isatty() if terminal is None else terminal
        self._show: Callable[[Any], None] | None = None
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> TrainingProgress:
        if self.quiet:
            return self
        if not self.terminal:
            self._show = progress_printer(self.label, has_dual=self.has_dual)
            return self
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                             TextColumn("{task.fields[passes]}", markup=False),
                             TextColumn("{task.fields[scores]}", markup=False), TimeElapsedColumn(),
                             console=Console(stderr=True), transient=False)
        self._bar.start()
        self._task = self._bar.add_task(self.label, total=self.max_passes, passes="starting", scores="")
        return self

    def __call__(self, record: Any) -> None:
        if self._show is not None:
            self._show(record)
        elif self._bar is not None:
            limit = f"/{self.max_passes}" if self.max_passes else ""
            scores = [f"objective {record.primal:.6g}" if _known(record.primal) else "objective -"]
            if self.has_dual:
                scores.append(f"gap {record.rel_gap:.2e}" if _known(record.rel_gap) else "gap -")
            elif record.grad_norm is not None:
                scores.append(f"|grad| {record.grad_norm:.2e}")
            scores.append(f"dev {record.dev:.2f}" if record.dev is not None else "dev -")
            self._bar.update(self._task, completed=record.passes, passes=f"pass {record.passes}{limit}",
                             scores="  ".join(scores))

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


class StageProgress:
    """The stages of a pipeline's training on stderr, one after the other: a context manager whose value is
    called as each stage starts (``on_stage(name, description, passes=True)``), closes the last stage's
    :class:`TrainingProgress`, shows a new one and returns it as the stage's callbacks."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self._current: TrainingProgress | None = None

    def __enter__(self) -> Callable[[str, str], list[TrainingProgress]]:
        return self._start

    def _start(self, name: str, description: str, passes: bool | None = True) -> list[TrainingProgress]:
        """Show a stage; one not trained in passes (``passes`` False) is its description line alone, and
        ``passes`` None makes ``description`` a line of the stage under way, which goes on (the parser's
        cascade and labeler)."""
        if passes is None:
            if not self.quiet:
                typer.echo(description, err=True)
            return []
        self.__exit__()
        if not passes:
            if not self.quiet:
                typer.echo(description, err=True)
            return []
        self._current = TrainingProgress(description, quiet=self.quiet).__enter__()
        return [self._current]

    def __exit__(self, *exc: object) -> None:
        if self._current is not None:
            self._current.__exit__()
            self._current = None


class DecodingProgress:
    """A corpus file parsed or tagged a piece at a time, shown on stderr while it runs: on a terminal, when
    the output goes to a file (not to the same terminal), a ``rich`` bar of the input read (out of the
    file's size; a count for stdin), the sentences done, the time and the time left.  Nothing
    otherwise, or with ``quiet``: the summary line comes at the end either way.  Use it as a context
    manager, and :meth:`advance` after each piece."""

    def __init__(self, label: str, source: str, out: str | Path | None, *, quiet: bool = False,
                 terminal: bool | None = None) -> None:
        self.label = label
        self.on = not quiet and not is_stdio(out) and (sys.stderr.isatty() if terminal is None else terminal)
        self.total = Path(source).stat().st_size if not is_stdio(source) and Path(source).is_file() else None
        self.sentences = 0
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> DecodingProgress:
        if self.on:
            from rich.console import Console
            from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            self._bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn(),
                                 TextColumn("{task.fields[sentences]:,} sentences", markup=False),
                                 TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True),
                                 transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total, sentences=0)
        return self

    def advance(self, nbytes: int, sentences: int) -> None:
        """Count a piece done: the input bytes it covered and its sentences."""
        self.sentences += sentences
        if self._bar is not None:
            self._bar.update(self._task, advance=nbytes, sentences=self.sentences)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


@contextmanager
def no_interrupts() -> Iterator[None]:
    """Ignore Ctrl-C inside the block (a model being saved after an interrupt), where the main thread
    can set signal handlers."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupted(stop: KeyboardInterrupt, out: Path, save: bool) -> None:
    """End a training command that Ctrl-C stopped, with one line on stderr and exit status 130.

    ``stop`` is a :class:`~egnlp.training.records.TrainingInterrupted` (its model is then written to
    ``out``, atomically and with Ctrl-C ignored for that moment) or a bare KeyboardInterrupt; ``save``
    says whether ``--save-on-interrupt`` was given.
    """
    model = getattr(stop, "model", None)
    if model is None:
        typer.echo("interrupted before the first pass ended; no model written" if save else
                   "interrupted; no model written (--save-on-interrupt keeps the best pass so far)", err=True)
        raise typer.Exit(INTERRUPTED)
    best = stop.result.final
    try:
        with no_interrupts():
            model.save(out)
    except EgnlpError as exc:
        typer.echo(f"interrupted after pass {stop.last.passes}; error: {exc}", err=True)
        raise typer.Exit(INTERRUPTED) from None
    dev = f", dev {best.dev:.2f}" if best.dev is not None else ""
    typer.echo(f"interrupted after pass {stop.last.passes}; wrote the model of pass {best.passes}{dev} to {out}",
               err=True)
    raise typer.Exit(INTERRUPTED)


@contextmanager
def saved_on_interrupt(out: Path, save: bool) -> Iterator[None]:
    """A training command's block: Ctrl-C inside it ends the command with :func:`interrupted`."""
    try:
        yield
    except KeyboardInterrupt as stop:
        interrupted(stop, out, save)


def write_decoded(fn: Callable[..., Any], job: tuple, source: str, pieces: Iterator[Any], out: str | Path | None,
                  jobs: int | None, label: str, quiet: bool) -> tuple[int, int]:
    """Decode ``pieces`` of the file ``source`` with ``fn`` (:mod:`egnlp.streams`) and write the output to
    ``out`` a piece at a time (atomically to a file), a progress bar on a terminal; (sentences, tokens)."""
    from egnlp.cli.common import write_output_pieces
    from egnlp.streams import run_pieces

    counts = [0, 0]

    def texts() -> Iterator[str]:
        with DecodingProgress(label, source, out, quiet=quiet) as progress:
            for done in run_pieces(fn, job, pieces, jobs):
                counts[0] += done.sentences
                counts[1] += done.tokens
                progress.advance(done.nbytes, done.sentences)
                yield done.text

    write_output_pieces(texts(), out)
    return counts[0], counts[1]
