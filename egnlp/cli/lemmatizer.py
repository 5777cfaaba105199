"""``egnlp lemmatizer``: train a lemmatizer on a CoNLL-U file's LEMMA column, lemmatize CoNLL-U.

Each command builds its settings (:class:`~egnlp.settings.LemmatizerSettings`),
calls :mod:`egnlp.lemmatizer_training` or
:class:`~egnlp.tagger.lemmatizer.Lemmatizer` and prints; the conventions are
those of :mod:`egnlp.cli.common`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from egnlp.cli.common import (DevOption, EncodingOption, JsonOption, ModelOut, QuietOption, TextOut, counted,
                              model_file, new_app, note, print_json, report_rate, write_output)
from egnlp.cli.settings_options import settings_options
from egnlp.settings import LemmatizerSettings
from egnlp.startup import kernels_note, start_up

lemmatizer_app = new_app("Train and run lemmatizers (a dictionary and a maxent classifier of edit scripts).")


@lemmatizer_app.command("train")
@settings_options(LemmatizerSettings)
def lemmatizer_train(train: Annotated[str, typer.Argument(metavar="TRAIN", help="CoNLL-U file (- for stdin) "
                                                          "whose LEMMA column the lemmatizer learns.")],
                     out: ModelOut, dev: DevOption = None, encoding: EncodingOption = "utf-8",
                     quiet: QuietOption = False, as_json: JsonOption = False, *, options: dict[str, Any]) -> None:
    """Train a lemmatizer on a CoNLL-U file and save it (C and the form back-off tuned on its last tenth)."""
    from egnlp.corpora.formats import CONLLU
    from egnlp.inputs import read_sentences
    from egnlp.lemmatizer_training import train_lemmatizer

    settings = LemmatizerSettings(**options)
    model_file(out)
    kernels_note()
    read = [read_sentences(path, CONLLU, accept=(CONLLU,), command="egnlp lemmatizer train", encoding=encoding,
                           require_heads=False)[1] if path is not None else None for path in (train, dev)]
    note(f"training a lemmatizer on {counted(len(read[0]), 'sentence')}", quiet)
    lemmatizer = train_lemmatizer(read[0], read[1], settings, data=str(train))
    lemmatizer.save(out)
    info = lemmatizer.info
    if as_json:
        print_json({"out": str(out), **info})
    dev_text = f", dev lemma accuracy {info['dev_accuracy']:.2f}%" if "dev_accuracy" in info else ""
    note(f"{counted(len(lemmatizer.scripts), 'edit script')}, {counted(len(lemmatizer.dictionary), 'dictionary key')}"
         f"{dev_text}; {info['cpu_seconds']:.1f} CPU s; model written to {out}", quiet)


@lemmatizer_app.command("lemmatize")
def lemmatizer_lemmatize(model: Annotated[Path, typer.Argument(metavar="MODEL", help="Model file written by "
                                                               "'egnlp lemmatizer train'.")],
                         input: Annotated[str, typer.Argument(metavar="INPUT", help="CoNLL-U file with the tag "
                                                              "columns the model reads filled, or - for stdin.")
                                          ] = "-",
                         out: TextOut = "-", encoding: EncodingOption = "utf-8", quiet: QuietOption = False) -> None:
    """Fill the LEMMA column of a CoNLL-U file; CoNLL-U out."""
    with start_up():  # the imports and the model, out of the garbage collector's way
        from egnlp.corpora.conll import format_conll
        from egnlp.corpora.formats import CONLLU
        from egnlp.inputs import read_sentences
        from egnlp.tagger.lemmatizer import Lemmatizer

        lemmatizer = Lemmatizer.load(model_file(model, "MODEL"))
    _, sentences = read_sentences(input, CONLLU, accept=(CONLLU,), command="egnlp lemmatizer lemmatize",
                                  encoding=encoding, require_heads=False)
    start = time.perf_counter()
    done = lemmatizer.lemmatize(sentences)
    seconds = time.perf_counter() - start
    write_output(format_conll(done), out)
    report_rate("lemmatized", done, seconds, out, quiet)
