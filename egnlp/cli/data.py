"""``egnlp data``: the named data sets."""

from __future__ import annotations

from typing import Annotated

import typer

from egnlp.cli.common import QuietOption, Split, TextOut, counted, dataset_names, new_app, note, output_name, \
    write_output

data_app = new_app("Named data sets.")


@data_app.command("list")
def data_list() -> None:
    """List the named data sets and whether their NLTK packages are found."""
    from egnlp.corpora import list_datasets

    typer.echo(f"{'name':<16} {'task':<6} {'root':<7} {'found':<6} {'source':<34} description")
    for info in list_datasets():
        typer.echo(f"{info.name:<16} {info.task:<6} {info.root:<7} {'yes' if info.found else 'no':<6} "
                   f"{info.source:<34} {info.description}")


@data_app.command("export")
def data_export(name: Annotated[str, typer.Argument(metavar="NAME", help="Data set name (see 'egnlp data list').",
                                                    autocompletion=dataset_names)],
                split: Annotated[Split, typer.Argument(metavar="SPLIT", help="The split to write: train|dev|test.")],
                out: TextOut = "-", quiet: QuietOption = False) -> None:
    """Write one split of a data set as a CoNLL file."""
    from egnlp.corpora import format_conll, load_dataset

    sentences = load_dataset(name, split.value)
    write_output(format_conll(sentences), out)
    note(f"wrote {counted(len(sentences), 'sentence')} to {output_name(out)}", quiet)
