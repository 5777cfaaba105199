"""``egnlp tagger``: train, tag, evaluate.

Each command builds its settings, calls the functions of the application
layer (:mod:`egnlp.tagger_training`, :mod:`egnlp.tagging_text`,
:mod:`egnlp.streams`, :mod:`egnlp.inputs`) and prints; the conventions are
those of :mod:`egnlp.cli.common`.
"""

from __future__ import annotations

import dataclasses
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from egnlp.cli.common import (FORMAT_HELP, DaskOption, DataOption, DevOption, EncodingOption, InputFormat, JobsOption,
                              JsonOption, ModelOut, OutputFormat, QuietOption, TaggedFormat, TextOut, TrainOption,
                              chosen_format, counted, model_file, new_app, note, print_json, report_counts,
                              report_rate, write_output)
from egnlp.cli.progress import TrainingProgress, saved_on_interrupt, write_decoded
from egnlp.cli.settings_options import settings_options
from egnlp.settings import TAGGER_COLUMNS, TaggerSettings
from egnlp.startup import kernels_note, start_up

tagger_app = new_app("Train, run and evaluate POS taggers and chunkers.")

TaggedFormatOption = Annotated[TaggedFormat, typer.Option("--format", help=f"{FORMAT_HELP}, conll2000 (word POS "
                                                          "chunk) of the files.")]
LanguageOption = Annotated[str, typer.Option(
    "--language", "-l", help="Language of raw text, for Punkt's sentence splitting and tokenisation: a Punkt "
    "language name or its code (english/en, portuguese/pt, dutch/nl, spanish/es, ...).")]
TagConfidenceOption = Annotated[bool, typer.Option(
    "--confidence", help="Also write each word's tag probability under the model (CRF: forward-backward; maxent: "
    "a forward pass over its local distributions) to MISC: UPosProb=0.9812 or XPosProb=..., by the column the "
    "model fills (other MISC entries kept). POS taggers, CoNLL output of CoNLL-U or text input only.")]
Column = Enum("Column", {c: c for c in TAGGER_COLUMNS}, type=str)  # type: ignore[misc]


@tagger_app.command("train")
@settings_options(TaggerSettings)
def tagger_train(out: ModelOut, data: DataOption = None, train: TrainOption = None, dev: DevOption = None,
                 fmt: TaggedFormatOption = TaggedFormat.auto, encoding: EncodingOption = "utf-8",
                 quiet: QuietOption = False, as_json: JsonOption = False, *, options: dict[str, Any]) -> None:
    """Train a POS tagger or chunker (CRF or maxent) and save it."""
    from egnlp.inputs import training_sets
    from egnlp.tagger_training import tagged_columns, task_column, train_tagger

    settings = TaggerSettings(**options)
    model_file(out)
    kernels_note()
    sets = training_sets(data, train, dev, trees=False, encoding=encoding, fmt=chosen_format(fmt))
    column = settings.label_column or task_column(sets.dataset)
    tokens, labels, pos = tagged_columns(sets.train, column, "training", settings.reads_upos)
    dev_set = tagged_columns(sets.dev, column, "dev", settings.reads_upos) if sets.dev else None
    what = {"chunk": "chunker", "upos": "UPOS tagger", "feats": "FEATS tagger", "morph": "joint UPOS, XPOS and FEATS "
            "tagger"}.get(column, "POS tagger")
    note(f"training a {settings.model} {what} on {counted(len(sets.train), 'sentence')}"
         + (f", dev {len(sets.dev)}" if sets.dev else ""), quiet)
    start = time.perf_counter()
    limit = getattr(settings.trainer_config(), "max_passes", None)
    with saved_on_interrupt(out, settings.save_on_interrupt), TrainingProgress(
            f"{settings.model} trainer {settings.trainer_name}", has_dual=settings.spec.has_dual, max_passes=limit,
            quiet=quiet) as progress:
        tagger, result = train_tagger(tokens, labels, pos, dataclasses.replace(settings, column=column), dev=dev_set,
                                      callbacks=[progress], data=data)
        tagger.info["train_seconds"] = seconds = time.perf_counter() - start
        tagger.save(out)
    _report_training(tagger, result, settings, column, out, sets, seconds, quiet, as_json)


@tagger_app.command("tag")
def tagger_tag(model: Annotated[Path, typer.Argument(metavar="MODEL", help="Model file written by 'egnlp tagger "
                                                     "train'.")],
               input: Annotated[str, typer.Argument(metavar="INPUT", help="Input file, or - for stdin.")] = "-",
               fmt: Annotated[InputFormat, typer.Option("--format", help=f"{FORMAT_HELP}, conll2000 (word POS chunk), "
                                                        "text (raw text, split into sentences and tokenised).")
                              ] = InputFormat.auto,
               to: Annotated[Optional[OutputFormat], typer.Option(
                   "--to", help="Output format: text (word/TAG, a sentence per line), conll or conll2000.",
                   show_default="text for text input, conll2000 for CoNLL-2000 input, else conll")] = None,
               out: TextOut = "-",
               pos_tagger: Annotated[Optional[Path], typer.Option("--pos-tagger", help="With a chunker: a POS "
                                                                  "tagger model that tags the input first (needed "
                                                                  "for text input).")] = None,
               language: LanguageOption = "english", jobs: JobsOption = None, dask: DaskOption = None,
               confidence: TagConfidenceOption = False, encoding: EncodingOption = "utf-8",
               quiet: QuietOption = False) -> None:
    """Tag raw text or a corpus file with a POS tagger or chunker."""
    with start_up():  # the imports and the models, out of the garbage collector's way
        from egnlp.corpora.formats import CONLL2000, TEXT
        from egnlp.inputs import TAGGED_FORMATS, text_pieces
        from egnlp.streams import check_confidence
        from egnlp.tagger import Tagger
        from egnlp.pipeline import check_pos_tagger

        tagger = Tagger.load(model_file(model, "MODEL"))
        pos_model = Tagger.load(model_file(pos_tagger, "--pos-tagger")) if pos_tagger is not None else None
    check_pos_tagger(tagger, pos_model, pos_tagger)
    chosen, name, pieces = text_pieces(input, chosen_format(fmt), accept=(*TAGGED_FORMATS, TEXT),
                                       command="egnlp tagger tag", encoding=encoding)
    target = to.value if to is not None else {TEXT: "text", CONLL2000: "conll2000"}.get(chosen, "conll")
    check_confidence(confidence, chosen, target=target, chunker=tagger.column == "chunk", dask=dask is not None)
    _tag_pieces(tagger, pos_model, (chosen, name, pieces), input, target, out, language=language, jobs=jobs,
                dask=dask, confidence=confidence, quiet=quiet)


@tagger_app.command("evaluate")
def tagger_evaluate(gold: Annotated[str, typer.Argument(metavar="GOLD", help="Gold corpus file, or - for stdin.")],
                    pred: Annotated[str, typer.Argument(metavar="PRED", help="Predicted corpus file (same sentences "
                                                        "and tokens), or - for stdin.")],
                    as_json: JsonOption = False,
                    model: Annotated[Optional[Path], typer.Option(
                        "--model", help="The tagger that made the prediction: its training vocabulary gives "
                        "unknown-word accuracy, its column the column.")] = None,
                    column: Annotated[Optional[Column], typer.Option(
                        "--column", help="xpos (or pos), upos, feats, morph (UPOS, XPOS and FEATS all right) or chunk.",
                        show_default="the model's column; without --model the column the prediction fills")] = None,
                    fmt: TaggedFormatOption = TaggedFormat.auto,
                    encoding: Annotated[str, typer.Option("--encoding", help="Encoding of both files.")] = "utf-8"
                    ) -> None:
    """Token accuracy, unknown-word accuracy and (IOB tags) conlleval chunk precision/recall/F1."""
    from egnlp.inputs import TAGGED_FORMATS, read_pair
    from egnlp.tagger import Tagger, tag_scores
    from egnlp.tagger.accuracy import choose_column

    tagger = Tagger.load(model_file(model, "--model")) if model is not None else None
    gold_sents, pred_sents = read_pair(gold, pred, chosen_format(fmt), accept=TAGGED_FORMATS,
                                       command="egnlp tagger evaluate", encoding=encoding, require_heads=False)
    chosen = ("pos" if column.value == "xpos" else column.value) if column is not None else \
        tagger.column if tagger is not None else choose_column(gold_sents, pred_sents, gold, pred)
    scores = tag_scores(gold_sents, pred_sents, chosen, tagger.vocabulary if tagger is not None else None)
    if tagger is not None and tagger.vocabulary is None:
        note(f"note: {model} records no training vocabulary; no unknown-word accuracy")
    print_json(scores) if as_json else typer.echo(_scores_text(scores))


# --- what the commands share -------------------------------------------------------------------------


def _tag_pieces(tagger, pos_model, read: tuple, source: str, target: str, out: str, *, language: str,
                jobs: int | None, dask: str | None, confidence: bool, quiet: bool) -> None:
    """``tagger tag`` once the input is open (``read``: its format, name and pieces): a corpus file tagged
    and written a piece at a time, raw text and CoNLL-2000 (and anything on Dask) whole; the summary line."""
    from egnlp.corpora.formats import CONLL2000, TEXT
    from egnlp.pipeline import format_tagged, sentences_to_tag
    from egnlp.streams import tag_piece

    chosen, name, pieces = read
    start = time.perf_counter()
    if chosen not in (TEXT, CONLL2000) and dask is None:  # a piece at a time: see egnlp.streams
        counts = write_decoded(tag_piece, (tagger, pos_model, name, chosen, target, confidence), source, pieces,
                               out, jobs, "tagging", quiet)
        report_counts("tagged", *counts, time.perf_counter() - start, out, quiet)
        return
    sentences = sentences_to_tag("".join(piece.text for piece in pieces), name, chosen, tagger, pos_model, language)
    tagged, seconds = _tag(sentences, tagger, pos_model, jobs, dask, confidence)
    write_output(format_tagged(tagged, target, tagger.column), out)
    report_rate("tagged", tagged, seconds, out, quiet)


def _tag(sentences, tagger, pos_model, jobs: int | None, dask: str | None, confidence: bool = False):
    """(the sentences tagged, the seconds it took): here on ``jobs`` processes or on a Dask cluster (without
    ``confidence``: :func:`egnlp.streams.check_confidence`)."""
    if dask is not None:
        from egnlp.distributed import dask_client, tag_on_cluster

        with dask_client(dask, jobs) as client:
            start = time.perf_counter()  # the time to decode, not to start a cluster
            return tag_on_cluster(client, tagger, sentences, pos_model), time.perf_counter() - start
    start = time.perf_counter()
    if pos_model is not None:
        sentences = pos_model.tag_corpus(sentences, jobs=jobs)
    return tagger.tag_corpus(sentences, jobs=jobs, confidence=confidence), time.perf_counter() - start


def _report_training(tagger, result, settings: TaggerSettings, column: str, out: Path, sets, seconds: float,
                     quiet: bool, as_json: bool) -> None:
    """The summary of ``tagger train``: one line on stderr, and with ``--json`` one object on stdout."""
    if as_json:
        print_json({"model": str(out), "kind": settings.model, "trainer": settings.trainer_name, "column": column,
                    "converged": result.converged, "labels": len(tagger.labels),
                    "train_sentences": len(sets.train), "dev_sentences": len(sets.dev or ()), "seconds": seconds,
                    "final": result.final.as_dict()})
    status = "converged" if result.converged else "stopped before converging"
    note(f"{status} after {counted(result.final.passes, 'pass')} ({result.final.eff_iters:.1f} effective "
         f"iterations); {counted(len(tagger.labels), 'label')}, "
         f"{counted(len(tagger.vocabulary or ()), 'training word form')}; "
         f"{seconds:.1f} s; model written to {out}", quiet)


def _scores_text(scores: dict) -> str:
    """The lines of ``tagger evaluate``."""

    def pct(value: Optional[float]) -> str:
        return "n/a" if value is None else f"{value:.2f}%"

    lines = [f"column {scores['column']}: {scores['tokens']} tokens in {scores['sentences']} sentences",
             f"accuracy {pct(scores['accuracy'])}"]
    if scores["unknown_tokens"] is None:
        lines.append("unknown-word accuracy n/a (give --model MODEL for the training vocabulary)")
    else:
        lines.append(f"unknown-word accuracy {pct(scores['unknown_accuracy'])} "
                     f"({scores['unknown_tokens']} tokens not seen in training)")
    if "f1" in scores:
        lines.append(f"chunks: gold {scores['chunks_gold']}, predicted {scores['chunks_pred']}, "
                     f"correct {scores['chunks_correct']}")
        lines.append(f"precision {scores['precision']:6.2f}  recall {scores['recall']:6.2f}  F1 {scores['f1']:6.2f}")
        lines += [f"  {typ:<6} precision {row['precision']:6.2f}  recall {row['recall']:6.2f}  "
                  f"F1 {row['f1']:6.2f}  ({row['gold']} gold, {row['pred']} predicted)"
                  for typ, row in scores["by_type"].items()]
    return "\n".join(lines)
