"""What every ``egnlp`` command module shares: command groups, shared options, one-line errors, outputs.

This module stays light: it imports typer and egnlp's error types only, so
that ``egnlp --help`` and ``egnlp data list`` start without loading NumPy,
Numba, SciPy or NLTK. The commands import what they use when they run.

Conventions of every command:

- ``--help`` shows every option's default (``[default: ...]``) and every
  choice (each choice option is an :class:`~enum.Enum`, so shells complete it);
- a mistake on the command line (an unknown option, a missing argument, an
  invalid choice, a setting out of range or settings that do not go together:
  :class:`~egnlp.base.errors.SettingsError`) is one ``error: ...`` line and
  exit status 2; a mistake in the input (a file, a model: egnlp's other
  errors) one ``error: ...`` line and exit status 1; Ctrl-C one line and exit
  status 130; any other exception is a bug and shows its traceback;
- ``-`` is stdin for an input file and stdout for an output file;
- progress and timing go to stderr, results to stdout or the ``-o`` file.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Sequence
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

try:  # typer 0.2x carries its own copy of click
    from typer._click import exceptions as click_exceptions
except ImportError:  # older typer runs on click itself
    from click import exceptions as click_exceptions

from egnlp.base.errors import EgnlpError, SettingsError

STDIO = "-"  # stdin for an input file, stdout for an output file
INTERRUPTED = 130  # exit status after Ctrl-C (128 + SIGINT)


# --- choices of input and output formats ----------------------------------------------------------


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
    from egnlp.corpora.datasets import DATASETS

    return [name for name in DATASETS if name.startswith(incomplete)]


# --- options shared by several commands -----------------------------------------------------------


def at_least_one(value: Optional[int]) -> Optional[int]:
    """A count option's value, checked: None or a whole number >= 1 (else a command-line error)."""
    if value is not None and value < 1:
        raise typer.BadParameter(f"must be at least 1, not {value}")
    return value


ModelOut = Annotated[Path, typer.Option("--out", "-o",
                                        help="Model file (.npz) to write (missing folders are created).")]
DataOption = Annotated[Optional[str], typer.Option(
    "--data", help="Named data set (its train and dev splits; see 'egnlp data list') or a corpus file (- for stdin).",
    autocompletion=dataset_names)]
TrainOption = Annotated[Optional[str], typer.Option("--train", help="Training corpus file (- for stdin).")]
DevOption = Annotated[Optional[str], typer.Option("--dev", help="Dev corpus file, scored after every pass "
                                                  "(- for stdin).")]
JobsOption = Annotated[Optional[int], typer.Option(
    "--jobs", "-j", callback=at_least_one, metavar="<int>",
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
TextOut = Annotated[str, typer.Option("--out", "-o",
                                      help="File to write (- for stdout; missing folders are created).")]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="Print no progress or summary on stderr "
                                           "(errors still go there).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object of the result on stdout and "
                                          "nothing else there.")]
FORMAT_HELP = ("Input format: auto (told from the content), conll (CoNLL-X or CoNLL-U, by content), conllu, "
               "conllx, malt (Malt-TAB: word, tag, head)")


def chosen_format(fmt: Enum | None) -> str | None:
    """The format named by a --format choice, None for auto (told from the content)."""
    return None if fmt is None or fmt.value == "auto" else fmt.value


# --- the command groups ---------------------------------------------------------------------------


class Group(TyperGroup):
    """A command group of egnlp: command-line mistakes are one ``error:`` line naming the command's
    ``--help`` (exit status 2); egnlp's own errors one line with their exit status; Ctrl-C one line
    (exit status 130)."""

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
        except EgnlpError as error:
            help_hint = f" (see '{ctx.command_path} {ctx.invoked_subcommand} --help')" if error.exit_status == 2 \
                and ctx.invoked_subcommand else ""
            typer.echo(f"error: {' '.join(str(error).split())}{help_hint}", err=True)
            raise typer.Exit(error.exit_status) from None
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(INTERRUPTED) from None
        except SystemError as error:  # Ctrl-C inside a Numba kernel's call: the interrupt, not a bug
            if not from_interrupt(error):
                raise
            typer.echo("interrupted", err=True)
            raise typer.Exit(INTERRUPTED) from None


def from_interrupt(error: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among the causes and contexts of ``error``, at any depth: Python
    turns a Ctrl-C inside a C function's call into ``SystemError: ... returned a result with an exception
    set``, whose cause is the KeyboardInterrupt, or another SystemError when calls were nested."""
    seen: set[int] = set()
    todo = [error]
    while todo:
        error = todo.pop()
        if isinstance(error, KeyboardInterrupt):
            return True
        if id(error) not in seen:
            seen.add(id(error))
            todo.extend(e for e in (error.__cause__, error.__context__) if e is not None)
    return False


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


# --- outputs --------------------------------------------------------------------------------------


def is_stdio(path: str | Path | None) -> bool:
    return path is None or str(path) == STDIO


def output_name(out: str | Path | None) -> str:
    """How messages name an output: the file, or ``stdout``."""
    return "stdout" if is_stdio(out) else str(out)


def model_file(path: Path, what: str = "--out") -> Path:
    """A model file's path; ``-`` is refused (models are binary files, read and written by name)."""
    if str(path) == STDIO:
        raise SettingsError(f"{what}: a model file is written and read by name, not through stdin or stdout ('-')")
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


def counted(n: int, noun: str) -> str:
    """``1 sentence``, ``2 sentences``, ``3 passes``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}{'es' if noun.endswith(('s', 'x', 'ch', 'sh')) else 's'}"


def report_rate(done: str, sentences: Sequence[Sequence], seconds: float, out: str | Path | None,
                quiet: bool = False) -> None:
    """One line on stderr: what was ``done`` to how many sentences and tokens, how fast, and where it went."""
    report_counts(done, len(sentences), sum(len(s) for s in sentences), seconds, out, quiet)


def report_counts(done: str, sentences: int, tokens: int, seconds: float, out: str | Path | None,
                  quiet: bool = False) -> None:
    """:func:`report_rate` from the counts."""
    note(f"{done} {counted(sentences, 'sentence')} ({counted(tokens, 'token')}) in {seconds:.2f} s "
         f"({tokens / max(seconds, 1e-9):.0f} tokens/s); wrote {output_name(out)}", quiet)


