"""``egnlp model``: what a model file holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from egnlp.cli.common import JsonOption, model_file, new_app

model_app = new_app("Inspect model files.")


@model_app.command("info")
def model_info_command(model: Annotated[Path, typer.Argument(metavar="MODEL", help="Model file (.npz) written by "
                                                             "'egnlp parser train' or 'egnlp tagger train'.")],
                       as_json: JsonOption = False) -> None:
    """Print what a model file holds.

    Kind, format version, tree space and labels or tag set, features, training data, settings, final primal/dual/gap.
    """
    from egnlp.model_info import format_info, model_info

    info = model_info(model_file(model, "MODEL"))
    typer.echo(json.dumps(info, indent=2) if as_json else format_info(info), nl=as_json)
