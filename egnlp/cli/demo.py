"""``egnlp demo``: train a parser and a tagger with the defaults and print their scores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from egnlp.cli.common import at_least_one, dataset_names, note


def demo(data: Annotated[str, typer.Option("--data", help="Dependency data set for the parser.",
                                           autocompletion=dataset_names)] = "wsj",
         tagger_data: Annotated[str, typer.Option("--tagger-data", help="POS data set for the tagger.",
                                                  autocompletion=dataset_names)] = "ptb-pos",
         out: Annotated[Path, typer.Option("--out", help="Folder for the two models.")] = Path("runs"),
         limit: Annotated[Optional[int], typer.Option("--limit", callback=at_least_one, show_default="all",
                                                      help="Train on the first N sentences only (a quick check).")
                          ] = None,
         passes: Annotated[Optional[int], typer.Option("--passes", callback=at_least_one, show_default="the trainers'",
                                                       help="Pass limit of both trainers.")] = None) -> None:
    """Train a parser and a POS tagger with the defaults, tag and parse the test split, print the scores.

    When the tagger's test sentences are the parser's (wsj and ptb-pos), the
    parser also runs on the predicted tags.
    """
    from egnlp.cli.progress import progress_printer
    from egnlp.demo import run_demo

    rows = run_demo(data, tagger_data, out, limit=limit, passes=passes, note=note,
                    progress=lambda label, has_dual: progress_printer(label, has_dual=has_dual))
    typer.echo(f"\nmodels saved to {out / 'demo-parser.npz'} and {out / 'demo-tagger.npz'}")
    for what, where, score in rows:
        typer.echo(f"{what:<16} {where:<28} {score}")
