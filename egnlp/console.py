"""What every ``egnlp`` command file shares: the command groups, the choices and options, one-line errors, progress.

This module stays light: it imports typer and the corpus layer's error types
only, so that ``egnlp --help`` and ``egnlp data list`` start without loading
Numba, SciPy or NLTK. The commands import what they use when they run.

Conventions of every command:

- ``--help`` shows every option's default (``[default: ...]``, from typer's
  ``show_default``; help strings are printed as written, with no markup) and
  every choice (each choice option is an :class:`~enum.Enum`, so shells
  complete it);
- a mistake on the command line (an unknown option, a missing argument, an
  invalid choice) is one ``error: ...`` line and exit status 2; a mistake in
  the input (a file, a model, a setting) one ``error: ...`` line and exit
  status 1; Ctrl-C one line and exit status 130;
- ``-`` is stdin for an input file and stdout for an output file;
- progress and timing go to stderr, results to stdout or the ``-o`` file.
"""

from __future__ import annotations

import gc
import importlib
import json
import re
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

try:  # typer 0.2x carries its own copy of click
    from typer._click import exceptions as click_exceptions
except ImportError:  # older typer runs on click itself
    from click import exceptions as click_exceptions

from egnlp.base.errors import CorpusError, ModelError

STDIO = "-"  # stdin for an input file, stdout for an output file
INTERRUPTED = 130  # exit status after Ctrl-C (128 + SIGINT)

# Errors in the user's input (files, data set names, model files, settings): one line, exit status 1.
USER_ERRORS = (CorpusError, ModelError, ValueError, OSError)

# --- defaults shown in --help ---------------------------------------------------------------------
# Written here because the modules that define them load every kernel; tests/test_cli_conventions.py
# keeps each equal to the code's own.
PARSER_TRAINER = "bcfw"  # egnlp.parser_training.DEFAULT_PARSER_TRAINER
PARSER_PASSES = 8  # egnlp.parser_training.FIRST_ORDER_SETTINGS
PARSER_PASSES_HIGHER = 12  # egnlp.parser_training.DEFAULT_PARSER_SETTINGS: second and third order
PARSER_PATIENCE = 3  # egnlp.parser_training.DEFAULT_PATIENCE, for egnlp.parser_training.ONLINE_TRAINERS
DASK_TRAINER = "eg-mm"  # parser train --dask without --trainer (egnlp.distributed.DASK_TRAINERS)
PARSER_C = {"mm": 30.0, "ll": 20.0}  # egnlp.parser_training.DEFAULT_PARSER_C
EG_PASSES, EG_TOL = 60, 1e-3  # egnlp.training.eg.EGConfig
CRF_TRAINER, CRF_C = "eg-ll", 1.0  # egnlp.tagger_training.DEFAULT_C
MAXENT_TRAINER, MAXENT_SIGMA2, MAXENT_BEAM = "cd", 10.0, 3  # egnlp.tagger_training.DEFAULT_SIGMA2, train_maxent_tagger
MAXENT_PASSES, MAXENT_TOL = 100, 1e-5  # egnlp.tagger_training.MAXENT_DEFAULTS
# The trainers of egnlp.training.registry by problem kind, in registry order.
STRUCTURED_TRAINERS = ("eg-ll", "eg-ll-batch", "eg-mm", "eg-mm-batch", "lbfgs", "sgd", "cutting-plane", "bcfw", "egr")
MAXENT_TRAINERS = ("cd", "gis", "scgis", "lbfgs")


# --- choices --------------------------------------------------------------------------------------


class TrainerName(str, Enum):
    """The structured trainers (parsers and CRF taggers)."""

    eg_ll = "eg-ll"
    eg_ll_batch = "eg-ll-batch"
    eg_mm = "eg-mm"
    eg_mm_batch = "eg-mm-batch"
    lbfgs = "lbfgs"
    sgd = "sgd"
    cutting_plane = "cutting-plane"
    bcfw = "bcfw"
    egr = "egr"


# Every trainer of a tagger: the structured ones (CRF) and the maxent ones (lbfgs serves both).
TaggerTrainerName = Enum("TaggerTrainerName", {name.replace("-", "_"): name for name in
                                               dict.fromkeys(STRUCTURED_TRAINERS + MAXENT_TRAINERS)}, type=str)


class Order(str, Enum):
    random = "random"
    cyclic = "cyclic"
    gap = "gap"


class ModelKind(str, Enum):
    crf = "crf"
    maxent = "maxent"


class Column(str, Enum):
    xpos = "xpos"
    upos = "upos"
    chunk = "chunk"
    pos = "pos"


class Split(str, Enum):
    train = "train"
    dev = "dev"
    test = "test"


class TreeFormat(str, Enum):
    """Input formats with dependency trees (or none yet): CoNLL (X or U, by content) and Malt-TAB."""

    auto = "auto"
    conll = "conll"
    conllu = "conllu"
    conllx = "conllx"
    malt = "malt"


class TaggedFormat(str, Enum):
    """Input formats of tagged text: those of :class:`TreeFormat` and CoNLL-2000."""

    auto = "auto"
    conll = "conll"
    conllu = "conllu"
    conllx = "conllx"
    malt = "malt"
    conll2000 = "conll2000"


class InputFormat(str, Enum):
    """Input formats of text to tag: those of :class:`TaggedFormat` and plain text."""

    auto = "auto"
    text = "text"
    conll = "conll"
    conllu = "conllu"
    conllx = "conllx"
    malt = "malt"
    conll2000 = "conll2000"


class OutputFormat(str, Enum):
    text = "text"
    conll = "conll"
    conll2000 = "conll2000"


FORMAT_HELP = ("Input format: auto (told from the content), conll (CoNLL-X or CoNLL-U, by content), conllu, "
               "conllx, malt (Malt-TAB: word, tag, head)")


def dataset_names(incomplete: str = "") -> list[str]:
    """The data set names beginning with ``incomplete`` (shell completion of NAME and --data)."""
    from egnlp.corpora.datasets import _DATASETS

    return [name for name in _DATASETS if name.startswith(incomplete)]


# --- options shared by several commands -----------------------------------------------------------

ModelOut = Annotated[Path, typer.Option("--out", "-o", help="Model file (.npz) to write.")]
DataOption = Annotated[Optional[str], typer.Option(
    "--data", help="Named data set (its train and dev splits; see 'egnlp data list') or a corpus file (- for stdin).",
    autocompletion=dataset_names)]
TrainOption = Annotated[Optional[str], typer.Option(
    "--train", help="Training corpus file (- for stdin).")]
DevOption = Annotated[Optional[str], typer.Option(
    "--dev", help="Dev corpus file, scored after every pass (- for stdin).")]
SeedOption = Annotated[Optional[int], typer.Option(
    "--seed", help="Seed of every random choice (example or feature order); the same seed gives the same model.",
    show_default="0")]
MaxSecondsOption = Annotated[Optional[float], typer.Option(
    "--max-seconds", help="Stop after the pass that brings the optimisation time past this many seconds.",
    show_default="no limit")]
OrderOption = Annotated[Optional[Order], typer.Option(
    "--order", help="EG, BCFW: example order, random (a fresh permutation per pass), cyclic, or gap (draws in "
    "proportion to each example's share of the duality gap).", show_default="random")]
AnnealOption = Annotated[Optional[bool], typer.Option(
    "--anneal/--no-anneal", help="EG: start at 10 C and decay to C (much faster for small C).", show_default="on")]


def at_least_one(value: Optional[int]) -> Optional[int]:
    """A count option's value, checked: None or a whole number >= 1 (else a command-line error)."""
    if value is not None and value < 1:
        raise typer.BadParameter(f"must be at least 1, not {value}")
    return value


def at_least_zero(value: Optional[int]) -> Optional[int]:
    """A count or size option's value, checked: None or a number >= 0 (else a command-line error)."""
    if value is not None and value < 0:
        raise typer.BadParameter(f"must be at least 0, not {value}")
    return value


JobsOption = Annotated[Optional[int], typer.Option(
    "--jobs", "-j", callback=at_least_one,
    help="Processes that decode blocks of sentences (at least 1); the output is the same for any number.",
    show_default="all cores")]
PruneOption = Annotated[bool, typer.Option(
    "--prune/--no-prune",
    help="First-order parsers: leave out the arcs whose coarse tags no gold training arc joined in that "
         "direction at that distance or farther (a fifth to three fifths of them: faster, UAS -0.06 to +0.14 "
         "on five treebanks' test sets); --no-prune decodes every arc.")]
DaskOption = Annotated[Optional[str], typer.Option(
    "--dask", metavar="local|ADDRESS",
    help="Run on a Dask cluster: local (a new cluster of worker processes on this machine) or the address of "
         "a running scheduler, e.g. tcp://host:8786. Needs the extra egnlp[dask].",
    show_default="no cluster")]
EncodingOption = Annotated[str, typer.Option("--encoding", help="Encoding of the input files.")]
TextOut = Annotated[str, typer.Option("--out", "-o", help="File to write (- for stdout).")]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="Print no progress or summary on stderr "
                                           "(errors still go there).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object of the result on stdout and "
                                          "nothing else there.")]
SaveOnInterruptOption = Annotated[bool, typer.Option(
    "--save-on-interrupt", help="On Ctrl-C, write the model of the best pass so far (by dev score with a dev "
    "set, else the last pass) before stopping.")]


# --- the command groups ---------------------------------------------------------------------------


class Group(TyperGroup):
    """A command group of egnlp: command-line mistakes are one ``error:`` line naming the command's
    ``--help`` (exit status 2), and Ctrl-C in a command one line (exit status 130)."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, windows_expand_args: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except click_exceptions.UsageError as error:
            if type(error).__name__ == "NoArgsIsHelpError":  # the help, as click shows it
                error.show()
            else:
                typer.echo(f"error: {usage_message(error)}", err=True)
            code = error.exit_code
        except click_exceptions.ClickException as error:
            typer.echo(f"error: {error.format_message()}", err=True)
            code = error.exit_code
        except typer.Abort:
            typer.echo("error: aborted", err=True)
            code = 1
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(INTERRUPTED) from None


def usage_message(error: click_exceptions.UsageError) -> str:
    """One line for a command-line mistake: what is wrong, and where to read the command's options.

    An invalid choice reads ``--tree: invalid choice 'x' (choose from projective, non-projective, auto)``.
    """
    message = error.format_message().strip().rstrip(".")
    param = getattr(error, "param", None)
    choices = (getattr(getattr(param, "type_descriptor", None), "choices", None)  # typer 0.2x
               or getattr(getattr(param, "type", None), "choices", None))  # click.Choice
    if isinstance(error, click_exceptions.BadParameter) and choices:
        match = re.match(r"(?:Value error, )?(.*) is not one of ", error.message)
        names = ", ".join(str(c.value) if isinstance(c, Enum) else str(c) for c in choices)
        if isinstance(param, typer.core.TyperArgument):
            where = param.metavar or param.human_readable_name.upper()
        else:
            where = max(param.opts, key=len)
        value = match.group(1) if match else "value"
        message = f"{where}: invalid choice {value} (choose from {names})"
    message = " ".join(message.split())
    if error.ctx is not None:
        message += f" (see '{error.ctx.command_path} --help')"
    return message


def new_app(help: str, **settings: Any) -> typer.Typer:
    """A typer app (command group) with egnlp's conventions: :class:`Group`, help printed as written
    (no rich markup), no pretty tracebacks, help when called without a command."""
    return typer.Typer(cls=Group, help=help, no_args_is_help=True, rich_markup_mode=None,
                       pretty_exceptions_enable=False, **{"add_completion": False, **settings})


# --- errors and outputs ---------------------------------------------------------------------------


def fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def is_stdio(path: str | Path | None) -> bool:
    return path is None or str(path) == STDIO


def output_name(out: str | Path | None) -> str:
    """How messages name an output: the file, or ``stdout``."""
    return "stdout" if is_stdio(out) else str(out)


def model_file(path: Path, what: str = "--out") -> Path:
    """A model file's path; ``-`` is refused (models are binary files, read and written by name)."""
    if str(path) == STDIO:
        raise ValueError(f"{what}: a model file is written and read by name, not through stdin or stdout ('-')")
    return path


def write_output(text: str, out: str | Path | None) -> None:
    """``text`` to the file ``out`` (written atomically), or to stdout when ``out`` is None or ``-``."""
    write_output_pieces((text,), out)


def write_output_pieces(pieces: Iterable[str], out: str | Path | None) -> None:
    """The concatenated ``pieces`` to the file ``out`` (written atomically, one piece at a time: an
    error raised by ``pieces`` leaves no file), or to stdout as they come."""
    if is_stdio(out):
        for piece in pieces:
            typer.echo(piece, nl=False)
    else:
        from egnlp.base.files import write_pieces_atomic

        write_pieces_atomic(out, pieces)


def print_json(value: Any) -> None:
    """One JSON object on stdout."""
    typer.echo(json.dumps(value))


def note(message: str, quiet: bool = False) -> None:
    """A line of progress or summary on stderr (nothing when ``quiet``)."""
    if not quiet:
        typer.echo(message, err=True)


def report_rate(done: str, sentences: Sequence[Sequence], seconds: float, out: str | Path | None,
                quiet: bool = False) -> None:
    """One line on stderr: what was ``done`` to how many sentences and tokens, how fast, and where it went."""
    report_counts(done, len(sentences), sum(len(s) for s in sentences), seconds, out, quiet)


def report_counts(done: str, sentences: int, tokens: int, seconds: float, out: str | Path | None,
                  quiet: bool = False) -> None:
    """:func:`report_rate` from the counts."""
    note(f"{done} {sentences} sentences ({tokens} tokens) in {seconds:.2f} s "
         f"({tokens / max(seconds, 1e-9):.0f} tokens/s)" + (f"; wrote {out}" if not is_stdio(out) else ""), quiet)


# --- training: progress, interrupts ---------------------------------------------------------------


def progress_printer(label: str, *, has_dual: bool = True):
    """A training callback printing one line per pass to stderr.

    Trainers with a dual (``has_dual``) show the dual and the relative
    duality gap; the others the norm of the primal's gradient where they
    record it.
    """
    last = "rel.gap" if has_dual else "|grad|"
    typer.echo(f"{label}\n{'pass':>4} {'eff.it':>7} {'sec':>7} {'C':>8} {'primal':>12} "
               + (f"{'dual':>12} " if has_dual else "") + f"{last:>9} {'dev':>6}", err=True)

    def show(r) -> None:
        dev = f"{r.dev:6.2f}" if r.dev is not None else "     -"
        C = f"{r.C:8.3g}" if r.C is not None else " " * 8
        if has_dual:
            dual = f"{r.dual:12.2f} " if r.dual is not None else " " * 13
            end = f"{r.rel_gap:9.2e}" if r.rel_gap is not None else " " * 9
        else:
            dual = ""
            end = f"{r.grad_norm:9.2e}" if r.grad_norm is not None else " " * 9
        typer.echo(f"{r.passes:4d} {r.eff_iters:7.2f} {r.seconds:7.1f} {C} {r.primal:12.2f} {dual}{end} {dev}",
                   err=True)

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
            scores = [f"objective {record.primal:.6g}"]
            if self.has_dual:
                scores.append(f"gap {record.rel_gap:.2e}" if record.rel_gap is not None else "gap -")
            elif record.grad_norm is not None:
                scores.append(f"|grad| {record.grad_norm:.2e}")
            scores.append(f"dev {record.dev:.2f}" if record.dev is not None else "dev -")
            self._bar.update(self._task, completed=record.passes, passes=f"pass {record.passes}{limit}",
                             scores="  ".join(scores))

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


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


# Whether start_up() may tune the process (Python's garbage collector, Numba's first import): only in the
# egnlp program's own process (set by egnlp.cli.main), not in a Python caller's (typer's test runner, a
# notebook), whose collector and modules are its own.
_PROGRAM = {"owns_process": False}


def own_process() -> None:
    """Let :func:`start_up` tune the process: it is the ``egnlp`` program's."""
    _PROGRAM["owns_process"] = True


def _numba_without_blas_probe() -> None:
    """Import Numba's array functions with SciPy out of sight, when neither is loaded yet.

    A process's first Numba kernel imports ``numba.np.arraymath``, which probes for a BLAS at import time
    by importing ``scipy.linalg.cython_blas``: SciPy and its whole ``linalg`` package, 0.2-0.35 s and
    12 MiB, measured, in a command that parses one sentence in 1.0-1.4 s.  The probe only picks the
    inner product of ``np.correlate`` and ``np.convolve`` (BLAS, or Numba's own loop when the import
    fails), and no egnlp kernel calls them; ``np.dot`` and ``np.linalg`` import SciPy themselves when a
    kernel uses them.  A ``None`` entry in ``sys.modules`` makes an import of the name fail, and it is
    removed right after: later imports of SciPy (training's L-BFGS) load it as usual.
    """
    hidden = next((name for name in ("scipy", "scipy.linalg") if name not in sys.modules), None)
    if hidden is None or "numba.np.arraymath" in sys.modules:
        return
    sys.modules[hidden] = None  # type: ignore[assignment]
    try:
        importlib.import_module("numba.np.arraymath")
    finally:
        del sys.modules[hidden]


def _cached_kernels_without_refresh() -> None:
    """Let Numba load a cached kernel without first refreshing its compiler's contexts.

    Before it reads a kernel from its cache, Numba refreshes the typing and target contexts
    (``numba.core.caching.Cache.load_overload``): it imports and registers the implementations of
    everything it can compile (Python's built-in types, typed containers, NumPy's random generators,
    polynomials, dates, jitclass: about 60 modules), which a compiler needs and a kernel that is machine
    code already does not. The loaded kernel needs Numba's runtime (the NRT, whose functions it calls) and
    the modules its environment names, which the cache's loader imports itself. So the replacement starts
    the runtime and loads. A kernel that is not in the cache is compiled as before: Numba's compiler
    refreshes both contexts when it starts (``numba.core.compiler.CompilerBase``). Where this Numba lacks
    the methods it relies on, nothing is replaced.
    """
    from numba.core import caching
    from numba.core.runtime import rtsys

    cache = caching.Cache
    if getattr(cache.load_overload, "_egnlp", False) or not all(
            hasattr(cache, name) for name in ("_load_overload", "_guard_against_spurious_io_errors")):
        return

    def load_overload(self, sig, target_context):  # Numba's, less the contexts' refresh
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
        return None  # the guard swallowed an error reading the cache: Numba then compiles

    load_overload._egnlp = True  # type: ignore[attr-defined]
    cache.load_overload = load_overload


@contextmanager
def start_up() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a decoding command loads (its imports and the model),
    then the objects loaded frozen out of its sight (:func:`gc.freeze`) and the collector resumed; Numba's
    array functions imported without SciPy's BLAS (:func:`_numba_without_blas_probe`), and cached kernels
    loaded without a refresh of Numba's compiler (:func:`_cached_kernels_without_refresh`).

    Loading builds a few hundred thousand long-lived objects (Numba's type system and LLVM's bindings,
    SciPy's modules) and next to no garbage; the collector, run every 700 allocations, would walk them
    again and again: 0.17-0.23 s of the 1.2-1.4 s in which one sentence is parsed. Frozen, they are never
    walked; what the command allocates afterwards is collected as usual. The garbage there is on entry is
    collected first (a few milliseconds: only typer is loaded then), so that none of it is frozen.
    Nothing changes outside the egnlp program's own process (:func:`own_process`).
    """
    if not _PROGRAM["owns_process"] or not gc.isenabled():
        yield
        return
    gc.collect()
    gc.disable()
    try:
        _numba_without_blas_probe()
        _cached_kernels_without_refresh()
        yield
    finally:
        gc.freeze()
        gc.enable()


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
    except USER_ERRORS as exc:
        typer.echo(f"interrupted after pass {stop.last.passes}; error: {exc}", err=True)
        raise typer.Exit(INTERRUPTED) from None
    dev = f", dev {best.dev:.2f}" if best.dev is not None else ""
    typer.echo(f"interrupted after pass {stop.last.passes}; wrote the model of pass {best.passes}{dev} to {out}",
               err=True)
    raise typer.Exit(INTERRUPTED)
