"""What every ``egnlp`` command file shares: the user-error types, the one-line failure, per-pass progress."""

from __future__ import annotations

import typer

from egnlp.corpora import CorpusError
from egnlp.corpora.files import ModelError
from egnlp.training.records import PassRecord

# Errors in the user's input (files, data set names, model files, settings): one line, exit status 1.
USER_ERRORS = (CorpusError, ModelError, ValueError, OSError)


def fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def progress_printer(label: str):
    """A training callback printing one line per pass to stderr."""
    typer.echo(f"{label}\n{'pass':>4} {'eff.it':>7} {'sec':>7} {'C':>8} {'primal':>12} {'dual':>12} "
               f"{'rel.gap':>9} {'dev':>6}", err=True)

    def show(r: PassRecord) -> None:
        dev = f"{r.dev:6.2f}" if r.dev is not None else "     -"
        dual = f"{r.dual:12.2f}" if r.dual is not None else " " * 12
        gap = f"{r.rel_gap:9.2e}" if r.rel_gap is not None else " " * 9
        C = f"{r.C:8.3g}" if r.C is not None else " " * 8
        typer.echo(f"{r.passes:4d} {r.eff_iters:7.2f} {r.seconds:7.1f} {C} {r.primal:12.2f} {dual} {gap} {dev}",
                   err=True)

    return show
