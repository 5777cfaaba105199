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
import os
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from egnlp.corpora import (CorpusError, Sentence, format_conll, is_dataset, load_sentences, parse_conll, read_conll,
                     write_conll)
from egnlp.corpora.files import decode, read_bytes, write_text_atomic
from egnlp.corpora.datasets import dataset_task
from egnlp.corpora.sentence import BLANK
from egnlp.console import USER_ERRORS, fail, progress_printer
from egnlp.pipeline import parse_text, text_sentences, to_conllu, tokens_sentence
from egnlp.tagging import label_columns
from egnlp.parser.model import Parser
from egnlp.tagger.evaluate import tag_scores
from egnlp.tagger.model import Tagger

__all__ = ["parse_text_command", "tagger_app"]

tagger_app = typer.Typer(help="Train, run and evaluate POS taggers and chunkers.", no_args_is_help=True)

MODEL_KINDS = ("crf", "maxent")
DEFAULT_TRAINER = {"crf": "eg-ll", "maxent": "cd"}
COLUMNS = ("pos", "chunk")
FORMATS = ("text", "conll")
STDIN = "-"


def _choice(value: str, allowed: tuple[str, ...], option: str) -> str:
    if value not in allowed:
        raise ValueError(f"{option} must be one of {', '.join(allowed)}, not '{value}'")
    return value


# --- input and output ----------------------------------------------------------------------------


def _read_text(source: str, encoding: str) -> tuple[str, str]:
    """(text, name) of a file or of stdin (``-``)."""
    if source == STDIN:
        stream = sys.stdin
        raw = getattr(stream, "buffer", None)
        if raw is None:
            return stream.read(), "<stdin>"
        return decode(raw.read(), "<stdin>", encoding), "<stdin>"
    if os.path.isdir(source):
        raise CorpusError(f"{source}: is a folder, not a file")
    return decode(read_bytes(source), source, encoding), source


def _where(sentence: Sentence, number: int) -> str:
    if sentence.source and sentence.source != "<string>":
        return f"{sentence.source}:{sentence.line}"
    return f"sentence {number}"


def _check_tags(sentences: list[Sentence], column: str, role: str) -> None:
    """Every token of every sentence has a tag in ``column`` (``_`` is no tag)."""
    for number, s in enumerate(sentences, start=1):
        tags = s.pos if column == "pos" else s.chunks
        if tags is None:
            raise CorpusError(f"{_where(s, number)}: no chunk column (11th column); {role}")
        for k, tag in enumerate(tags):
            if tag == BLANK:
                raise CorpusError(f"{_where(s, number)}: token {k + 1} has no {column.upper()} tag ('_'); {role}")


def _columns(sentences: list[Sentence], column: str, what: str):
    """(tokens, labels, POS input or None) of a training or dev set."""
    if not sentences:
        raise CorpusError(f"the {what} set has no sentences")
    _check_tags(sentences, column, f"a {'chunker' if column == 'chunk' else 'POS tagger'} trains on these tags")
    if column == "chunk":
        _check_tags(sentences, "pos", "a chunker reads the POS column")
    return label_columns(sentences, column)


# --- progress ------------------------------------------------------------------------------------


def _maxent_progress(label: str):
    typer.echo(f"{label}\n{'pass':>4} {'sec':>7} {'objective':>14} {'|grad|':>10} {'rel.chg':>9} {'dev':>6}", err=True)

    def show(r) -> None:
        dev = f"{100.0 * r.dev:6.2f}" if r.dev is not None else "     -"
        rel = f"{r.rel_change:9.2e}" if r.rel_change is not None else " " * 9
        typer.echo(f"{r.passes:4d} {r.seconds:7.1f} {r.primal:14.4f} {r.grad_norm:10.3e} {rel} {dev}", err=True)

    return show


# --- train ---------------------------------------------------------------------------------------


def _training_sets(data: Optional[str], train: Optional[Path], dev: Optional[Path], column: Optional[str],
                   encoding: str):
    """(train sentences, dev sentences or None, column) from --data or --train/--dev."""
    if (data is None) == (train is None):
        raise CorpusError("give either --data NAME or --train FILE")
    if data is not None and is_dataset(data):
        if dev is not None:
            raise CorpusError("--dev goes with --train; a data set brings its own dev split")
        task = dataset_task(data)
        chosen = column or ("chunk" if task == "chunk" else "pos")
        return load_sentences(data, "train"), load_sentences(data, "dev"), chosen
    path = data if data is not None else str(train)
    if data is not None and not os.path.isfile(data):
        load_sentences(data)  # raises: unknown data set or file
    train_sents = read_conll(path, encoding=encoding, require_heads=False)
    dev_sents = read_conll(dev, encoding=encoding, require_heads=False) if dev is not None else None
    return train_sents, dev_sents, column or "pos"


@tagger_app.command("train")
def tagger_train(
    out: Path = typer.Option(..., "--out", "-o", help="Model file (.npz) to write."),
    data: Optional[str] = typer.Option(None, "--data", help="Named data set (its train and dev splits; "
                                       "see 'egnlp data list') or a CoNLL file."),
    train: Optional[Path] = typer.Option(None, "--train", help="Training CoNLL file (10 or 11 columns)."),
    dev: Optional[Path] = typer.Option(None, "--dev", help="Dev CoNLL file, scored (token accuracy) after every pass."),
    model: str = typer.Option("crf", "--model", help="Model family: crf (linear-chain CRF) or maxent "
                              "(left-to-right maximum-entropy tagger with a beam)."),
    trainer: Optional[str] = typer.Option(None, "--trainer", help="CRF: a structured trainer of 'egnlp parser "
                                          "train' (default eg-ll); maxent: cd (default), gis, scgis or lbfgs."),
    C: Optional[float] = typer.Option(None, "--C", help="CRF: regularisation constant C of sum_i loss_i + "
                                      "C/2 ||w||^2 (default 1)."),
    sigma2: Optional[float] = typer.Option(None, "--sigma2", help="maxent: Gaussian prior variance (default 10)."),
    passes: Optional[int] = typer.Option(None, "--passes", help="Pass limit (default: the trainer's)."),
    tol: Optional[float] = typer.Option(None, "--tol", help="Convergence tolerance (default: the trainer's)."),
    max_seconds: Optional[float] = typer.Option(None, "--max-seconds", help="Stop after the pass that brings the "
                                                "optimisation time past this many seconds (default: no limit)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the example (CRF) or feature (maxent) order."),
    beam: Optional[int] = typer.Option(None, "--beam", help="maxent: beam width of decoding (default 3)."),
    column: Optional[str] = typer.Option(None, "--column", help="Label column: pos or chunk (default: the data "
                                         "set's task; pos for files). A chunker reads the POS column."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of the CoNLL files."),
) -> None:
    """Train a POS tagger or chunker (CRF or maxent) and save it."""
    from egnlp.tagging import train_crf_tagger, train_maxent_tagger

    try:
        _choice(model, MODEL_KINDS, "--model")
        if column is not None:
            _choice(column, COLUMNS, "--column")
        trainer = trainer or DEFAULT_TRAINER[model]
        settings = _trainer_settings(model, trainer, C=C, sigma2=sigma2, passes=passes, tol=tol,
                                     max_seconds=max_seconds, seed=seed, beam=beam)
        train_sents, dev_sents, chosen = _training_sets(data, train, dev, column, encoding)
        tokens, labels, pos = _columns(train_sents, chosen, "training")
        dev_set = _columns(dev_sents, chosen, "dev") if dev_sents else None
        if dev_set is not None and pos is None:
            dev_set = dev_set[:2]
        what = "chunker" if chosen == "chunk" else "POS tagger"
        typer.echo(f"training a {model} {what} on {len(train_sents)} sentences"
                   + (f", dev {len(dev_sents)}" if dev_sents else ""), err=True)
        start = time.perf_counter()
        if model == "crf":
            tagger, result = train_crf_tagger(tokens, labels, pos, dev=dev_set, trainer=trainer, column=chosen,
                                              callbacks=[progress_printer(f"trainer {trainer}")], **settings)
            status = ("converged" if result.converged else "stopped before converging") \
                + f" after {result.final.eff_iters:.1f} effective iterations"
        else:
            tagger, history = train_maxent_tagger(tokens, labels, pos, dev=dev_set, trainer=trainer, column=chosen,
                                                  callbacks=[_maxent_progress(f"maxent trainer {trainer}")],
                                                  **settings)
            converged = bool(tagger.info.get("converged"))
            status = ("converged" if converged else "stopped before converging") \
                + f" after {history[-1].passes if history else 0} passes"
        seconds = time.perf_counter() - start
        tagger.info["train_seconds"] = seconds
        tagger.save(out)
    except USER_ERRORS as exc:
        fail(str(exc))
    typer.echo(f"{status}; {len(tagger.labels)} labels, {len(tagger.vocabulary or ())} training word forms; "
               f"{seconds:.1f} s; model written to {out}", err=True)


def _trainer_settings(model: str, trainer: str, **given) -> dict:
    """The trainer settings the user gave, checked against what the trainer has."""
    given = {k: v for k, v in given.items() if v is not None}
    if model == "crf":
        from egnlp.training.registry import get_trainer

        try:
            spec = get_trainer(trainer)
        except ValueError as exc:
            hint = " (maxent trainers go with --model maxent)" if trainer in ("cd", "gis", "scgis") else ""
            raise ValueError(f"{exc}{hint}") from None
        names = {"C": "C", "passes": "max_passes", "tol": "tol", "max_seconds": "max_seconds", "seed": "seed"}
        fields = {f.name for f in dataclasses.fields(spec.config)}
        for option in ("sigma2", "beam"):
            if option in given:
                raise ValueError(f"--{option} applies to --model maxent; a CRF's regularisation is --C")
    else:
        from egnlp.training.maxent import get_maxent_trainer

        get_maxent_trainer(trainer)
        if "C" in given:
            raise ValueError("--C applies to --model crf; the maxent regularisation is --sigma2")
        names = {"sigma2": "sigma2", "passes": "max_passes", "tol": "tol", "max_seconds": "max_seconds",
                 "seed": "seed", "beam": "beam"}
        fields = set(names.values())
    settings = {}
    for option, value in given.items():
        name = names[option]
        if name not in fields:
            raise ValueError(f"trainer '{trainer}' has no setting --{option}")
        settings[name] = value
    return settings


# --- tag -----------------------------------------------------------------------------------------


def _load_tagger(path: Path) -> Tagger:
    return Tagger.load(path)


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
        tagger = _load_tagger(model)
        pos_model = _load_tagger(pos_tagger) if pos_tagger is not None else None
        if pos_model is not None:
            if not tagger.use_pos:
                raise ValueError("--pos-tagger goes with a chunker; this model reads words only")
            if pos_model.column != "pos" or pos_model.use_pos:
                raise ValueError(f"{pos_tagger}: not a POS tagger (it predicts the {pos_model.column} column)")
        text, name = _read_text(input, encoding)
        if fmt == "text":
            sentences = [tokens_sentence(tokens) for _, tokens in text_sentences(text)]
            if tagger.use_pos and pos_model is None:
                raise ValueError("this model is a chunker and reads POS tags: give --pos-tagger MODEL "
                                 "to tag raw text, or tag a CoNLL file with a POS column")
        else:
            sentences = parse_conll(text, name, require_heads=False)
            if tagger.use_pos and pos_model is None:
                _check_tags(sentences, "pos", "a chunker reads the POS column (or give --pos-tagger MODEL)")
        start = time.perf_counter()
        if pos_model is not None:
            sentences = pos_model.tag_corpus(sentences)
        tagged = tagger.tag_corpus(sentences)
        seconds = time.perf_counter() - start
        if to == "conll":
            if out is not None:
                write_conll(out, tagged)
            else:
                typer.echo(format_conll(tagged), nl=False)
        else:
            lines = "".join(_slash_line(s, tagger) + "\n" for s in tagged)
            if out is not None:
                write_text_atomic(out, lines)
            else:
                typer.echo(lines, nl=False)
    except USER_ERRORS as exc:
        fail(str(exc))
    n_tokens = sum(len(s) for s in tagged)
    typer.echo(f"tagged {n_tokens} tokens in {len(tagged)} sentences in {seconds:.2f} s "
               f"({n_tokens / max(seconds, 1e-9):.0f} tokens/s)" + (f"; wrote {out}" if out is not None else ""),
               err=True)


def _slash_line(sentence: Sentence, tagger: Tagger) -> str:
    """``word/TAG`` tokens (``word/POS/CHUNK`` for a chunker), space-separated."""
    if tagger.column == "chunk":
        return " ".join(f"{w}/{p}/{c}" for w, p, c in zip(sentence.forms, sentence.pos, sentence.chunks))
    return " ".join(f"{w}/{t}" for w, t in zip(sentence.forms, sentence.pos))


# --- evaluate ------------------------------------------------------------------------------------


def choose_column(gold: list[Sentence], pred: list[Sentence]) -> str:
    """The column to score when none is given: ``chunk`` when both files have chunk tags, else ``pos``.

    Exception: when the chunk columns are identical and the POS columns
    differ, the prediction is a POS tagger's output on chunking data (e.g. an
    export of ``conll2000-pos``), and ``pos`` is scored.
    """
    if not all(s.chunks is not None for s in gold) or not all(s.chunks is not None for s in pred):
        return "pos"
    same_chunks = all(g.chunks == p.chunks for g, p in zip(gold, pred))
    same_pos = all(g.pos == p.pos for g, p in zip(gold, pred))
    return "pos" if same_chunks and not same_pos else "chunk"


def _pct(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.2f}%"


@tagger_app.command("evaluate")
def tagger_evaluate(
    gold: Path = typer.Argument(..., metavar="GOLD", help="Gold CoNLL file."),
    pred: Path = typer.Argument(..., metavar="PRED", help="Predicted CoNLL file (same sentences and tokens)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    model: Optional[Path] = typer.Option(None, "--model", help="The tagger that made the prediction: its "
                                         "training vocabulary gives unknown-word accuracy, its column the column."),
    column: Optional[str] = typer.Option(None, "--column", help="pos or chunk (default: the model's column; "
                                         "without --model chunk when both files have chunk tags, else pos)."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of both files."),
) -> None:
    """Token accuracy, unknown-word accuracy and (IOB tags) conlleval chunk precision/recall/F1."""
    try:
        if column is not None:
            _choice(column, COLUMNS, "--column")
        vocabulary = None
        tagger = None
        if model is not None:
            tagger = _load_tagger(model)
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
    tagger_model: Path = typer.Argument(..., metavar="TAGGER", help="POS tagger model (egnlp tagger train)."),
    parser_model: Path = typer.Argument(..., metavar="PARSER", help="Parser model (egnlp parser train)."),
    input: str = typer.Argument(STDIN, metavar="INPUT", help="Raw text file, or - for stdin."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="CoNLL-U file to write (default: stdout)."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of the input."),
) -> None:
    """Raw text to dependency trees: split, tokenise, tag, parse; CoNLL-U out."""
    try:
        tagger = _load_tagger(tagger_model)
        parser = Parser.load(parser_model)
        text, _ = _read_text(input, encoding)
        start = time.perf_counter()
        trees = parse_text(text, tagger, parser)
        seconds = time.perf_counter() - start
        if out is not None:
            write_conll(out, trees)
        else:
            typer.echo(to_conllu(trees), nl=False)
    except USER_ERRORS as exc:
        fail(str(exc))
    n_tokens = sum(len(s) for s in trees)
    typer.echo(f"parsed {len(trees)} sentences ({n_tokens} tokens) in {seconds:.2f} s "
               f"({n_tokens / max(seconds, 1e-9):.0f} tokens/s)" + (f"; wrote {out}" if out is not None else ""),
               err=True)
