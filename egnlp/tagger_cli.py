"""The ``egnlp tagger`` commands (train, tag, evaluate) and ``egnlp parse-text``.

The main command line (:mod:`egnlp.cli`) mounts :data:`tagger_app` as
``egnlp tagger`` and registers :func:`parse_text_command` as
``egnlp parse-text``.  The conventions are those of :mod:`egnlp.cli`: errors
in the user's input end a command with one ``error: ...`` line on stderr and
exit status 1; progress and timing go to stderr, results to stdout (or to the
``-o`` file, written to a temporary file and renamed).

This module does not import :mod:`egnlp.cli` (which imports it).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Optional

import typer

from egnlp.corpora import CorpusError, dataset_task, format_conll, parse_conll, read_conll
from egnlp.console import (USER_ERRORS, DataOption, DevOption, EncodingOption, MaxSecondsOption, ModelOut,
                           SeedOption, TrainOption, fail, progress_printer, report_rate, write_output)
from egnlp.inputs import STDIN, read_text, training_sets
from egnlp.parser.model import Parser
from egnlp.pipeline import parse_text, slash_text, text_sentences, to_conllu, tokens_sentence
from egnlp.tagger.evaluate import choose_column, tag_scores
from egnlp.tagger.model import Tagger
from egnlp.tagger.text import language_name, vocabulary_abbreviations
from egnlp.tagging import check_tags, tagged_columns
from egnlp.training.registry import MAXENT, STRUCTURED, get_trainer, trainer_names

__all__ = ["parse_text_command", "tagger_app"]

tagger_app = typer.Typer(help="Train, run and evaluate POS taggers and chunkers.", no_args_is_help=True)

MODEL_KINDS = ("crf", "maxent")
PROBLEM = {"crf": STRUCTURED, "maxent": MAXENT}  # the kind of problem each model family trains
DEFAULT_TRAINER = {"crf": "eg-ll", "maxent": "cd"}
FORMATS = ("text", "conll")
# The names --column takes: a tagger's label columns (corpora.sentence.LABEL_COLUMNS), xpos for pos.
COLUMN_CHOICES = ("xpos", "upos", "chunk", "pos")
COLUMN_ALIASES = {"xpos": "pos"}
# Options of 'tagger train' that set a trainer's config field, and those of one model family only.
CONFIG_OPTIONS = {"C": "C", "passes": "max_passes", "tol": "tol", "max_seconds": "max_seconds", "seed": "seed"}
MODEL_OPTIONS = {"C": "crf", "sigma2": "maxent", "beam": "maxent"}


def _choice(value: str, allowed: tuple[str, ...], option: str) -> str:
    if value not in allowed:
        raise ValueError(f"{option} must be one of {', '.join(allowed)}, not '{value}'")
    return value


def _column(value: Optional[str]) -> Optional[str]:
    """The label column named by ``--column`` (``xpos`` is the tagger column ``pos``), or None."""
    if value is None:
        return None
    return COLUMN_ALIASES.get(_choice(value, COLUMN_CHOICES, "--column"), value)


# --- train ---------------------------------------------------------------------------------------


@tagger_app.command("train")
def tagger_train(
    out: ModelOut,
    data: DataOption = None,
    train: TrainOption = None,
    dev: DevOption = None,
    model: str = typer.Option("crf", "--model", help="Model family: crf (linear-chain CRF) or maxent "
                              "(left-to-right maximum-entropy tagger with a beam)."),
    trainer: Optional[str] = typer.Option(None, "--trainer", help="CRF: a structured trainer of 'egnlp parser "
                                          "train' (default eg-ll); maxent: cd (default), gis, scgis or lbfgs."),
    C: Optional[float] = typer.Option(None, "--C", help="CRF: regularisation constant C of sum_i loss_i + "
                                      "C/2 ||w||^2 (default 1)."),
    sigma2: Optional[float] = typer.Option(None, "--sigma2", help="maxent: Gaussian prior variance (default 10)."),
    passes: Optional[int] = typer.Option(None, "--passes", help="Pass limit (default: the trainer's)."),
    tol: Optional[float] = typer.Option(None, "--tol", help="Convergence tolerance (default: the trainer's)."),
    max_seconds: MaxSecondsOption = None,
    seed: SeedOption = None,
    beam: Optional[int] = typer.Option(None, "--beam", help="maxent: beam width of decoding (default 3)."),
    column: Optional[str] = typer.Option(None, "--column", help="Label column: xpos (or pos: CoNLL-X POSTAG, "
                                         "CoNLL-U XPOS), upos (CoNLL-X CPOSTAG, CoNLL-U UPOS) or chunk (default: "
                                         "the data set's task; xpos for files). A chunker reads the POS column."),
    encoding: EncodingOption = "utf-8",
) -> None:
    """Train a POS tagger or chunker (CRF or maxent) and save it."""
    from egnlp.tagging import train_crf_tagger, train_maxent_tagger

    try:
        _choice(model, MODEL_KINDS, "--model")
        column = _column(column)
        trainer = trainer or DEFAULT_TRAINER[model]
        spec, settings = _trainer_settings(model, trainer, C=C, sigma2=sigma2, passes=passes, tol=tol,
                                           max_seconds=max_seconds, seed=seed, beam=beam)
        sets = training_sets(data, train, dev, trees=False, encoding=encoding)
        task = dataset_task(sets.dataset) if sets.dataset is not None else None
        chosen = column or ("chunk" if task == "chunk" else "pos")
        tokens, labels, pos = tagged_columns(sets.train, chosen, "training")
        dev_set = tagged_columns(sets.dev, chosen, "dev") if sets.dev else None
        what = {"chunk": "chunker", "upos": "UPOS tagger"}.get(chosen, "POS tagger")
        typer.echo(f"training a {model} {what} on {len(sets.train)} sentences"
                   + (f", dev {len(sets.dev)}" if sets.dev else ""), err=True)
        start = time.perf_counter()
        fit = train_crf_tagger if model == "crf" else train_maxent_tagger
        tagger, result = fit(tokens, labels, pos, dev=dev_set, trainer=trainer, column=chosen,
                             callbacks=[progress_printer(f"{model} trainer {trainer}", has_dual=spec.has_dual)],
                             **settings)
        status = ("converged" if result.converged else "stopped before converging") \
            + f" after {result.final.passes} passes ({result.final.eff_iters:.1f} effective iterations)"
        seconds = time.perf_counter() - start
        tagger.info["train_seconds"] = seconds
        tagger.save(out)
    except USER_ERRORS as exc:
        fail(str(exc))
    typer.echo(f"{status}; {len(tagger.labels)} labels, {len(tagger.vocabulary or ())} training word forms; "
               f"{seconds:.1f} s; model written to {out}", err=True)


def _trainer_settings(model: str, trainer: str, **given):
    """The trainer of ``model``'s family and the keyword arguments of its training function from the
    options the user gave (not None), checked against what that trainer and model family have."""
    given = {k: v for k, v in given.items() if v is not None}
    problem = PROBLEM[model]
    try:
        spec = get_trainer(trainer, problem)
    except ValueError:
        family = next((m for m, p in PROBLEM.items() if p != problem and trainer in trainer_names(p)), None)
        hint = f"'{trainer}' trains {family} taggers (--model {family}); " if family else ""
        raise ValueError(f"unknown trainer '{trainer}' for --model {model}: {hint}"
                         f"{model} trainers: {', '.join(trainer_names(problem))}") from None
    fields = {f.name for f in dataclasses.fields(spec.config)}
    settings = {}
    for option, value in given.items():
        family = MODEL_OPTIONS.get(option)
        if family is not None and family != model:
            raise ValueError(f"--{option.replace('_', '-')} applies to --model {family}"
                             + ("; a CRF's regularisation is --C" if model == "crf"
                                else "; the maxent regularisation is --sigma2"))
        name = CONFIG_OPTIONS.get(option)
        if name is not None and name not in fields:
            raise ValueError(f"trainer '{trainer}' has no setting --{option.replace('_', '-')}")
        settings[name or option] = value
    return spec, settings


# --- tag -----------------------------------------------------------------------------------------


@tagger_app.command("tag")
def tagger_tag(
    model: Path = typer.Argument(..., metavar="MODEL", help="Model file written by 'egnlp tagger train'."),
    input: str = typer.Argument(STDIN, metavar="INPUT", help="Input file, or - for stdin."),
    fmt: str = typer.Option("text", "--format", help="Input format: text (raw text, split into sentences and "
                            "tokenised) or conll (a CoNLL file, 10 or 11 columns, heads not needed)."),
    to: Optional[str] = typer.Option(None, "--to", help="Output format: text (word/TAG, a sentence per line) or "
                                     "conll (default: the input format)."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="File to write (default: stdout)."),
    pos_tagger: Optional[Path] = typer.Option(None, "--pos-tagger", help="With a chunker: a POS tagger model "
                                              "that tags the input first (needed for text input)."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of the input."),
) -> None:
    """Tag raw text or a CoNLL file with a POS tagger or chunker."""
    try:
        _choice(fmt, FORMATS, "--format")
        to = _choice(to, FORMATS, "--to") if to is not None else fmt
        tagger = Tagger.load(model)
        pos_model = Tagger.load(pos_tagger) if pos_tagger is not None else None
        if pos_model is not None:
            if not tagger.use_pos:
                raise ValueError("--pos-tagger goes with a chunker; this model reads words only")
            if pos_model.column != "pos" or pos_model.use_pos:
                raise ValueError(f"{pos_tagger}: not a POS tagger (it predicts the {pos_model.column} column)")
        text, name = read_text(input, encoding)
        if fmt == "text":
            abbreviations = vocabulary_abbreviations(tagger.vocabulary if pos_model is None else pos_model.vocabulary)
            sentences = [tokens_sentence(tokens) for _, tokens in text_sentences(text, abbreviations=abbreviations)]
            if tagger.use_pos and pos_model is None:
                raise ValueError("this model is a chunker and reads POS tags: give --pos-tagger MODEL "
                                 "to tag raw text, or tag a CoNLL file with a POS column")
        else:
            sentences = parse_conll(text, name, require_heads=False)
            if tagger.use_pos and pos_model is None:
                check_tags(sentences, "pos", "a chunker reads the POS column (or give --pos-tagger MODEL)")
        start = time.perf_counter()
        if pos_model is not None:
            sentences = pos_model.tag_corpus(sentences)
        tagged = tagger.tag_corpus(sentences)
        seconds = time.perf_counter() - start
        write_output(format_conll(tagged) if to == "conll" else slash_text(tagged, tagger.column), out)
    except USER_ERRORS as exc:
        fail(str(exc))
    report_rate("tagged", tagged, seconds, out)


# --- evaluate ------------------------------------------------------------------------------------


def _pct(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.2f}%"


@tagger_app.command("evaluate")
def tagger_evaluate(
    gold: Path = typer.Argument(..., metavar="GOLD", help="Gold CoNLL file."),
    pred: Path = typer.Argument(..., metavar="PRED", help="Predicted CoNLL file (same sentences and tokens)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    model: Optional[Path] = typer.Option(None, "--model", help="The tagger that made the prediction: its "
                                         "training vocabulary gives unknown-word accuracy, its column the column."),
    column: Optional[str] = typer.Option(None, "--column", help="xpos (or pos), upos or chunk (default: the "
                                         "model's column; without --model chunk when both files have chunk tags, "
                                         "else xpos)."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of both files."),
) -> None:
    """Token accuracy, unknown-word accuracy and (IOB tags) conlleval chunk precision/recall/F1."""
    try:
        column = _column(column)
        vocabulary = None
        tagger = None
        if model is not None:
            tagger = Tagger.load(model)
            vocabulary = tagger.vocabulary
        gold_sents = read_conll(gold, encoding=encoding, require_heads=False)
        pred_sents = read_conll(pred, encoding=encoding, require_heads=False)
        chosen = column or (tagger.column if tagger is not None else None)
        if chosen is None:
            if len(gold_sents) != len(pred_sents):
                raise CorpusError(f"{gold} has {len(gold_sents)} sentences, {pred} has {len(pred_sents)}")
            chosen = choose_column(gold_sents, pred_sents)
        scores = tag_scores(gold_sents, pred_sents, chosen, vocabulary)
    except USER_ERRORS as exc:
        fail(str(exc))
    if model is not None and vocabulary is None:
        typer.echo(f"note: {model} records no training vocabulary; no unknown-word accuracy", err=True)
    if as_json:
        typer.echo(json.dumps(scores))
        return
    typer.echo(f"column {scores['column']}: {scores['tokens']} tokens in {scores['sentences']} sentences")
    typer.echo(f"accuracy {_pct(scores['accuracy'])}")
    if scores["unknown_tokens"] is None:
        typer.echo("unknown-word accuracy n/a (give --model MODEL for the training vocabulary)")
    else:
        typer.echo(f"unknown-word accuracy {_pct(scores['unknown_accuracy'])} "
                   f"({scores['unknown_tokens']} tokens not seen in training)")
    if "f1" in scores:
        typer.echo(f"chunks: gold {scores['chunks_gold']}, predicted {scores['chunks_pred']}, "
                   f"correct {scores['chunks_correct']}")
        typer.echo(f"precision {scores['precision']:6.2f}  recall {scores['recall']:6.2f}  F1 {scores['f1']:6.2f}")
        for typ, row in scores["by_type"].items():
            typer.echo(f"  {typ:<6} precision {row['precision']:6.2f}  recall {row['recall']:6.2f}  "
                       f"F1 {row['f1']:6.2f}  ({row['gold']} gold, {row['pred']} predicted)")


# --- parse-text ----------------------------------------------------------------------------------


def parse_text_command(
    tagger_model: Path = typer.Argument(..., metavar="TAGGER", help="POS tagger model (egnlp tagger train); it "
                                        "fills the tag column its model records (UPOS or XPOS)."),
    parser_model: Path = typer.Argument(..., metavar="PARSER", help="Parser model (egnlp parser train)."),
    input: str = typer.Argument(STDIN, metavar="INPUT", help="Raw text file, or - for stdin."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="CoNLL-U file to write (default: stdout)."),
    more_taggers: Optional[list[Path]] = typer.Option(None, "--tagger", metavar="MODEL", help="Another POS "
                                                      "tagger model, for a parser that reads both UPOS and XPOS "
                                                      "(one tagger per column)."),
    language: str = typer.Option("english", "--language", "-l", help="Language of the text, for Punkt's "
                                 "sentence splitting and tokenisation: a Punkt language name or its code "
                                 "(english/en, portuguese/pt, dutch/nl, spanish/es, ...)."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of the input."),
) -> None:
    """Raw text to dependency trees: split, tokenise, tag, parse; CoNLL-U out.

    The taggers fill exactly the tag columns the parser was trained on (UPOS,
    XPOS or both); FORM and '# text' keep the text's characters, MISC marks
    SpaceAfter=No.
    """
    try:
        language_name(language)
        taggers = [Tagger.load(path) for path in (tagger_model, *(more_taggers or ()))]
        parser = Parser.load(parser_model)
        text, _ = read_text(input, encoding)
        start = time.perf_counter()
        trees = parse_text(text, taggers, parser, language=language)
        seconds = time.perf_counter() - start
        write_output(to_conllu(trees), out)
    except USER_ERRORS as exc:
        fail(str(exc))
    report_rate("parsed", trees, seconds, out)
