"""The ``egnlp`` command line: one typer app, a module of thin commands per group.

=====================  =========================================================
``egnlp data``         :mod:`egnlp.cli.data`: the named data sets
``egnlp parser``       :mod:`egnlp.cli.parser`: train, parse, evaluate, show
``egnlp tagger``       :mod:`egnlp.cli.tagger`: train, tag, evaluate
``egnlp lemmatizer``   :mod:`egnlp.cli.lemmatizer`: train, lemmatize
``egnlp parse-text``   :mod:`egnlp.cli.pipeline`: raw text to CoNLL-U
``egnlp model``        :mod:`egnlp.cli.model`: what a model file holds
``egnlp bench``        :mod:`egnlp.cli.bench`: the EG paper's comparisons
``egnlp demo``         :mod:`egnlp.cli.demo`: the README's first command
=====================  =========================================================

A command builds its settings (:mod:`egnlp.settings`), calls the application
layer and prints; :mod:`egnlp.cli.common` holds the conventions (one-line
errors, exit statuses, ``-`` for stdin and stdout). The command modules
import typer and egnlp's settings only, so that ``egnlp --help`` starts
without NumPy, Numba, SciPy or NLTK; a command imports what it uses when it
runs. ``docs/cli.md`` is generated from this app (``typer egnlp.cli utils
docs``; a test keeps it current).
"""

from __future__ import annotations

import os
import signal
import sys

import typer

from egnlp import __version__
from egnlp.cli.bench import bench_app
from egnlp.cli.common import new_app
from egnlp.cli.data import data_app
from egnlp.cli.demo import demo
from egnlp.cli.lemmatizer import lemmatizer_app
from egnlp.cli.model import model_app
from egnlp.cli.parser import parser_app
from egnlp.cli.pipeline import parse_text_command, pipeline_app
from egnlp.cli.tagger import tagger_app

# One BLAS thread per process, set before any command imports NumPy (the user's own setting wins).
# egnlp's BLAS calls are dot products of weight-sized vectors, between which idle BLAS threads spin:
# 'parser train --data es' took 146.9 CPU s (125.3 s wall) with OpenBLAS's default threads on 2 cores
# and 110.8 CPU s (111.0 s wall) with one. Parallel work goes through --jobs processes instead.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

app = new_app("Dependency parsers and POS taggers trained with exponentiated-gradient algorithms.",
              add_completion=True)
app.add_typer(data_app, name="data")
app.add_typer(parser_app, name="parser")
app.add_typer(tagger_app, name="tagger")
app.add_typer(lemmatizer_app, name="lemmatizer")
app.add_typer(pipeline_app, name="pipeline")
app.command("parse-text")(parse_text_command)
app.add_typer(model_app, name="model")
app.add_typer(bench_app, name="bench")
app.command("demo")(demo)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"egnlp {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Dependency parsers and POS taggers trained with exponentiated-gradient algorithms."""


def main() -> None:
    """The ``egnlp`` program: the commands, then the end of the process."""
    from egnlp.base.interrupts import safe_interrupts
    from egnlp.startup import own_process, show_notes

    own_process()  # see egnlp.startup
    show_notes()
    try:
        # Ctrl-C never lands inside Numba's code (see egnlp.base.interrupts); once the command has ended, it
        # is ignored while the process exits (else it would end with SIGINT and no status of its own)
        with safe_interrupts(then=signal.SIG_IGN):
            app()
    except KeyboardInterrupt:  # Ctrl-C outside a command (the commands end it themselves): one line, no traceback
        typer.echo("interrupted", err=True)
        sys.exit(130)
    finally:
        # The process ends here, and the command has closed its files. The interpreter's last garbage collection
        # would take apart every cycle of Numba's and LLVM's objects one by one (0.2 s after a parse of one
        # sentence); frozen, they are left to the operating system with the rest of the memory.
        import gc

        gc.freeze()
