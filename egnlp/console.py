"""What every ``egnlp`` command file shares: the user-error types, the one-line failure, per-pass progress."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Optional

import typer

from egnlp.corpora import CorpusError
from egnlp.corpora.files import ModelError, write_text_atomic
from egnlp.training.records import PassRecord

# Options that the training commands share (declared once, so every command spells and explains them alike).
ModelOut = Annotated[Path, typer.Option("--out", "-o", help="Model file (.npz) to write.")]
DataOption = Annotated[Optional[str], typer.Option(
    "--data", help="Named data set (its train and dev splits; see 'egnlp data list') or a CoNLL file.")]
TrainOption = Annotated[Optional[Path], typer.Option("--train", help="Training CoNLL file.")]
DevOption = Annotated[Optional[Path], typer.Option("--dev", help="Dev CoNLL file, scored after every pass.")]
SeedOption = Annotated[Optional[int], typer.Option(
    "--seed", help="Seed of every random choice (example or feature order); the same seed gives the same model.")]
MaxSecondsOption = Annotated[Optional[float], typer.Option(
    "--max-seconds", help="Stop after the pass that brings the optimisation time past this many seconds.")]
EncodingOption = Annotated[str, typer.Option("--encoding", help="Encoding of the CoNLL files.")]

# Errors in the user's input (files, data set names, model files, settings): one line, exit status 1.
USER_ERRORS = (CorpusError, ModelError, ValueError, OSError)


def fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def write_output(text: str, out: Path | None) -> None:
    """``text`` to the file ``out`` (written atomically), or to stdout when ``out`` is None."""
    if out is not None:
        write_text_atomic(out, text)
    else:
        typer.echo(text, nl=False)


def report_rate(done: str, sentences: Sequence[Sequence], seconds: float, out: Path | None) -> None:
    """One line on stderr: what was ``done`` to how many sentences and tokens, how fast, and where it went."""
    tokens = sum(len(s) for s in sentences)
    typer.echo(f"{done} {len(sentences)} sentences ({tokens} tokens) in {seconds:.2f} s "
               f"({tokens / max(seconds, 1e-9):.0f} tokens/s)" + (f"; wrote {out}" if out is not None else ""),
               err=True)


def progress_printer(label: str, *, has_dual: bool = True):
    """A training callback printing one line per pass to stderr.

    Trainers with a dual (``has_dual``) show the dual and the relative
    duality gap; the others the norm of the primal's gradient where they
    record it.
    """
    last = "rel.gap" if has_dual else "|grad|"
    typer.echo(f"{label}\n{'pass':>4} {'eff.it':>7} {'sec':>7} {'C':>8} {'primal':>12} "
               + (f"{'dual':>12} " if has_dual else "") + f"{last:>9} {'dev':>6}", err=True)

    def show(r: PassRecord) -> None:
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
