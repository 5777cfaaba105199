"""The ``egnlp tagger`` commands (train, tag, evaluate) and ``egnlp parse-text``.

The main command line (:mod:`egnlp.cli`) mounts :data:`tagger_app` as
``egnlp tagger`` and registers :func:`parse_text_command` as
``egnlp parse-text``.  The conventions are those of :mod:`egnlp.console`:
errors in the user's input end a command with one ``error: ...`` line on
stderr and exit status 1; progress and timing go to stderr, results to stdout
(or to the ``-o`` file, written to a temporary file and renamed); ``-`` is
stdin or stdout; input formats are told from the content unless ``--format``
says them.

This module does not import :mod:`egnlp.cli` (which imports it), and imports
the models, trainers and NLTK only inside the commands.
"""

from __future__ import annotations

import dataclasses
import time
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from egnlp.console import (AnnealOption, DecodingProgress, OrderOption, CRF_C, CRF_TRAINER, FORMAT_HELP, MAXENT_BEAM, MAXENT_PASSES, MAXENT_SIGMA2,
                           MAXENT_TRAINER, USER_ERRORS, Column, DaskOption, DataOption, DevOption, EncodingOption, InputFormat,
                           JobsOption, JsonOption, MaxSecondsOption, ModelKind, ModelOut, OutputFormat,
                           PruneOption, QuietOption, SaveOnInterruptOption, SeedOption, TaggedFormat, TaggerTrainerName,
                           TextOut,
                           TrainingProgress, TrainOption, fail, interrupted, model_file, new_app, note, print_json,
                           report_counts, report_rate, start_up, write_output, write_output_pieces)

__all__ = ["parse_text_command", "tagger_app"]

tagger_app = new_app("Train, run and evaluate POS taggers and chunkers.")

DEFAULT_TRAINER = {"crf": CRF_TRAINER, "maxent": MAXENT_TRAINER}
# The names --column takes: a tagger's label columns (corpora.sentence.LABEL_COLUMNS), xpos for pos.
COLUMN_ALIASES = {"xpos": "pos"}
# Options of 'tagger train' that set a trainer's config field (the trainer's config says whether it has
# it), and those of one model family only.
CONFIG_OPTIONS = {"C": "C", "passes": "max_passes", "tol": "tol", "max_seconds": "max_seconds", "seed": "seed",
                  "order": "order", "anneal": "anneal"}
MODEL_OPTIONS = {"C": "crf", "sigma2": "maxent", "beam": "maxent"}


class TextFormat(str, Enum):
    """What parse-text reads: raw text (auto refuses a corpus file, which 'parser parse' reads)."""

    auto = "auto"
    text = "text"


def _format(fmt: Enum | None) -> str | None:
    return None if fmt is None or fmt.value == "auto" else fmt.value


def _column(value: Optional[Column]) -> Optional[str]:
    """The label column named by ``--column`` (``xpos`` is the tagger column ``pos``), or None."""
    if value is None:
        return None
    return COLUMN_ALIASES.get(value.value, value.value)


# --- train ---------------------------------------------------------------------------------------


@tagger_app.command("train")
def tagger_train(
    out: ModelOut,
    data: DataOption = None,
    train: TrainOption = None,
    dev: DevOption = None,
    model: ModelKind = typer.Option(ModelKind.crf, "--model", help="Model family: crf (linear-chain CRF) or maxent "
                                    "(left-to-right maximum-entropy tagger with a beam)."),
    trainer: Optional[TaggerTrainerName] = typer.Option(
        None, "--trainer", help="CRF: a structured trainer of 'egnlp parser train'; maxent: cd, gis, scgis or lbfgs.",
        show_default=f"{CRF_TRAINER} for crf, {MAXENT_TRAINER} for maxent"),
    C: Optional[float] = typer.Option(None, "--C", help="CRF: regularisation constant C of sum_i loss_i + "
                                      "C/2 ||w||^2.", show_default=f"{CRF_C:g}"),
    sigma2: Optional[float] = typer.Option(None, "--sigma2", help="maxent: Gaussian prior variance.",
                                           show_default=f"{MAXENT_SIGMA2:g}"),
    passes: Optional[int] = typer.Option(None, "--passes", help="Pass limit.", show_default="the trainer's"),
    tol: Optional[float] = typer.Option(None, "--tol", help="Convergence tolerance.", show_default="the trainer's"),
    anneal: AnnealOption = None,
    order: OrderOption = None,
    max_seconds: MaxSecondsOption = None,
    seed: SeedOption = None,
    beam: Optional[int] = typer.Option(None, "--beam", help="maxent: beam width of decoding.",
                                       show_default=f"{MAXENT_BEAM}"),
    column: Optional[Column] = typer.Option(None, "--column", help="Label column: xpos (or pos: CoNLL-X POSTAG, "
                                            "CoNLL-U XPOS), upos (CoNLL-X CPOSTAG, CoNLL-U UPOS) or chunk. A chunker "
                                            "reads the POS column.",
                                            show_default="the data set's task; xpos for files"),
    fmt: TaggedFormat = typer.Option(TaggedFormat.auto, "--format", help=f"{FORMAT_HELP}, conll2000 (word POS "
                                     "chunk) of the training and dev files."),
    encoding: EncodingOption = "utf-8",
    save_on_interrupt: SaveOnInterruptOption = False,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Train a POS tagger or chunker (CRF or maxent) and save it."""
    from egnlp.corpora import dataset_task
    from egnlp.inputs import training_sets
    from egnlp.tagger_training import tagged_columns, train_crf_tagger, train_maxent_tagger
    from egnlp.training.records import BestPass
    from egnlp.training.registry import make_config

    kind = model.value
    try:
        model_file(out)
        chosen_column = _column(column)
        trainer_name = trainer.value if trainer is not None else DEFAULT_TRAINER[kind]
        spec, settings = _trainer_settings(kind, trainer_name, C=C, sigma2=sigma2, passes=passes, tol=tol,
                                           max_seconds=max_seconds, seed=seed, beam=beam,
                                           order=order.value if order is not None else None, anneal=anneal)
        config_fields = {f.name for f in dataclasses.fields(spec.config)}
        limit = settings.get("max_passes")
        if limit is None and "max_passes" in config_fields:
            limit = MAXENT_PASSES if kind == "maxent" else make_config(spec, C=1.0).max_passes
        sets = training_sets(data, train, dev, trees=False, encoding=encoding, fmt=_format(fmt))
        task = dataset_task(sets.dataset) if sets.dataset is not None else None
        chosen = chosen_column or ("chunk" if task == "chunk" else "pos")
        tokens, labels, pos = tagged_columns(sets.train, chosen, "training")
        dev_set = tagged_columns(sets.dev, chosen, "dev") if sets.dev else None
        what = {"chunk": "chunker", "upos": "UPOS tagger"}.get(chosen, "POS tagger")
        note(f"training a {kind} {what} on {len(sets.train)} sentences"
             + (f", dev {len(sets.dev)}" if sets.dev else ""), quiet)
        start = time.perf_counter()
        fit = train_crf_tagger if kind == "crf" else train_maxent_tagger
        progress = TrainingProgress(f"{kind} trainer {trainer_name}", has_dual=spec.has_dual, max_passes=limit,
                                    quiet=quiet)
        with progress:
            tagger, result = fit(tokens, labels, pos, dev=dev_set, trainer=trainer_name, column=chosen,
                                 callbacks=[*([BestPass()] if save_on_interrupt else []), progress], **settings)
        status = ("converged" if result.converged else "stopped before converging") \
            + f" after {result.final.passes} passes ({result.final.eff_iters:.1f} effective iterations)"
        seconds = time.perf_counter() - start
        tagger.info["train_seconds"] = seconds
        tagger.save(out)
    except KeyboardInterrupt as stop:
        interrupted(stop, out, save_on_interrupt)
    except USER_ERRORS as exc:
        fail(str(exc))
    if as_json:
        print_json({"model": str(out), "kind": kind, "trainer": trainer_name, "column": chosen,
                    "converged": result.converged, "labels": len(tagger.labels),
                    "train_sentences": len(sets.train), "dev_sentences": len(sets.dev or ()), "seconds": seconds,
                    "final": result.final.as_dict()})
    note(f"{status}; {len(tagger.labels)} labels, {len(tagger.vocabulary or ())} training word forms; "
         f"{seconds:.1f} s; model written to {out}", quiet)


def _trainer_settings(model: str, trainer: str, **given):
    """The trainer of ``model``'s family and the keyword arguments of its training function from the
    options the user gave (not None), checked against what that trainer and model family have."""
    from egnlp.training.registry import MAXENT, STRUCTURED, get_trainer, trainer_names

    problems = {"crf": STRUCTURED, "maxent": MAXENT}  # the kind of problem each model family trains
    given = {k: v for k, v in given.items() if v is not None}
    problem = problems[model]
    try:
        spec = get_trainer(trainer, problem)
    except ValueError:
        family = next((m for m, p in problems.items() if p != problem and trainer in trainer_names(p)), None)
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
    input: str = typer.Argument("-", metavar="INPUT", help="Input file, or - for stdin."),
    fmt: InputFormat = typer.Option(InputFormat.auto, "--format", help=f"{FORMAT_HELP}, conll2000 (word POS chunk), "
                                    "text (raw text, split into sentences and tokenised)."),
    to: Optional[OutputFormat] = typer.Option(None, "--to", help="Output format: text (word/TAG, a sentence per "
                                              "line), conll or conll2000.",
                                              show_default="text for text input, conll2000 for CoNLL-2000 input, "
                                                           "else conll"),
    out: TextOut = "-",
    pos_tagger: Optional[Path] = typer.Option(None, "--pos-tagger", help="With a chunker: a POS tagger model "
                                              "that tags the input first (needed for text input)."),
    jobs: JobsOption = None,
    dask: DaskOption = None,
    encoding: EncodingOption = "utf-8",
    quiet: QuietOption = False,
) -> None:
    """Tag raw text or a corpus file with a POS tagger or chunker."""
    with start_up():  # the imports and the models, out of the garbage collector's way
        from egnlp.corpora import format_conll, parse_corpus
        from egnlp.corpora.formats import CONLL2000, TEXT
        from egnlp.corpora.tagging import check_tags, format_conll2000, slash_text
        from egnlp.inputs import TAGGED_FORMATS, text_pieces
        from egnlp.tagger.tagger_model import Tagger

        try:
            tagger = Tagger.load(model_file(model, "MODEL"))
            pos_model = Tagger.load(model_file(pos_tagger, "--pos-tagger")) if pos_tagger is not None else None
        except USER_ERRORS as exc:
            fail(str(exc))
    try:
        if pos_model is not None:
            if not tagger.use_pos:
                raise ValueError("--pos-tagger goes with a chunker; this model reads words only")
            if pos_model.column != "pos" or pos_model.use_pos:
                raise ValueError(f"{pos_tagger}: not a POS tagger (it predicts the {pos_model.column} column)")
        chosen, name, pieces = text_pieces(input, _format(fmt), accept=(*TAGGED_FORMATS, TEXT),
                                           command="egnlp tagger tag", encoding=encoding)
        target = to.value if to is not None else (
            "text" if chosen == TEXT else "conll2000" if chosen == CONLL2000 else "conll")
        if chosen not in (TEXT, CONLL2000) and dask is None:  # a piece at a time: see egnlp.streams
            from egnlp.streams import run_pieces, tag_piece

            counts = [0, 0]

            def tagged_pieces():
                with DecodingProgress("tagging", input, out, quiet=quiet) as progress:
                    for done in run_pieces(tag_piece, (tagger, pos_model, name, chosen, target), pieces, jobs):
                        counts[0] += done.sentences
                        counts[1] += done.tokens
                        progress.advance(done.nbytes, done.sentences)
                        yield done.text

            start = time.perf_counter()
            write_output_pieces(tagged_pieces(), out)
            report_counts("tagged", counts[0], counts[1], time.perf_counter() - start, out, quiet)
            return
        text = "".join(piece.text for piece in pieces)  # whole for --dask (plain text and CoNLL-2000: one piece)
        if chosen == TEXT:
            if tagger.use_pos and pos_model is None:
                raise ValueError("this model is a chunker and reads POS tags: give --pos-tagger MODEL "
                                 "to tag raw text, or tag a corpus file with a POS column")
            from egnlp.pipeline import text_sentences, tokens_sentence  # NLTK's tokenizers: for text only
            from egnlp.tagger.text import vocabulary_abbreviations

            abbreviations = vocabulary_abbreviations(tagger.vocabulary if pos_model is None else pos_model.vocabulary)
            sentences = [tokens_sentence(tokens) for _, tokens in text_sentences(text, abbreviations=abbreviations)]
        else:
            _, sentences = parse_corpus(text, name, chosen, require_heads=False)
            if tagger.use_pos and pos_model is None:
                check_tags(sentences, "pos", "a chunker reads the POS column (or give --pos-tagger MODEL)")
        start = time.perf_counter()
        if dask is not None:
            from egnlp.distributed import dask_client, tag_on_cluster

            with dask_client(dask, jobs) as client:
                start = time.perf_counter()  # the time to decode, not to start a cluster
                tagged = tag_on_cluster(client, tagger, sentences, pos_model)
        else:
            if pos_model is not None:
                sentences = pos_model.tag_corpus(sentences, jobs=jobs)
            tagged = tagger.tag_corpus(sentences, jobs=jobs)
        seconds = time.perf_counter() - start
        writers = {"conll": format_conll, "conll2000": format_conll2000,
                   "text": lambda s: slash_text(s, tagger.column)}
        write_output(writers[target](tagged), out)
    except USER_ERRORS as exc:
        fail(str(exc))
    report_rate("tagged", tagged, seconds, out, quiet)


# --- evaluate ------------------------------------------------------------------------------------


def _pct(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.2f}%"


@tagger_app.command("evaluate")
def tagger_evaluate(
    gold: str = typer.Argument(..., metavar="GOLD", help="Gold corpus file, or - for stdin."),
    pred: str = typer.Argument(..., metavar="PRED", help="Predicted corpus file (same sentences and tokens), or - "
                               "for stdin."),
    as_json: JsonOption = False,
    model: Optional[Path] = typer.Option(None, "--model", help="The tagger that made the prediction: its "
                                         "training vocabulary gives unknown-word accuracy, its column the column."),
    column: Optional[Column] = typer.Option(None, "--column", help="xpos (or pos), upos or chunk.",
                                            show_default="the model's column; without --model chunk when both "
                                                         "files have chunk tags, else xpos"),
    fmt: TaggedFormat = typer.Option(TaggedFormat.auto, "--format", help=f"{FORMAT_HELP}, conll2000 (word POS "
                                     "chunk) of both files."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of both files."),
) -> None:
    """Token accuracy, unknown-word accuracy and (IOB tags) conlleval chunk precision/recall/F1."""
    from egnlp.corpora import CorpusError
    from egnlp.inputs import TAGGED_FORMATS, read_sentences
    from egnlp.tagger.tag_scores import choose_column, tag_scores
    from egnlp.tagger.tagger_model import Tagger

    try:
        chosen = _column(column)
        vocabulary = None
        tagger = None
        if model is not None:
            tagger = Tagger.load(model_file(model, "--model"))
            vocabulary = tagger.vocabulary
        if gold == pred == "-":
            raise ValueError("only one of GOLD and PRED can be stdin ('-')")
        gold_sents, pred_sents = (read_sentences(path, _format(fmt), accept=TAGGED_FORMATS,
                                                 command="egnlp tagger evaluate", encoding=encoding,
                                                 require_heads=False)[1] for path in (gold, pred))
        chosen = chosen or (tagger.column if tagger is not None else None)
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
        print_json(scores)
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
    input: str = typer.Argument("-", metavar="INPUT", help="Raw text file, or - for stdin."),
    out: TextOut = "-",
    more_taggers: Optional[list[Path]] = typer.Option(None, "--tagger", metavar="MODEL", help="Another POS "
                                                      "tagger model, for a parser that reads both UPOS and XPOS "
                                                      "(one tagger per column)."),
    language: str = typer.Option("english", "--language", "-l", help="Language of the text, for Punkt's "
                                 "sentence splitting and tokenisation: a Punkt language name or its code "
                                 "(english/en, portuguese/pt, dutch/nl, spanish/es, ...)."),
    fmt: TextFormat = typer.Option(TextFormat.auto, "--format", help="auto: raw text, and a corpus file (CoNLL, "
                                   "Malt-TAB, CoNLL-2000) is an error ('egnlp parser parse' reads those); text: "
                                   "read any input as raw text."),
    jobs: JobsOption = None,
    prune: PruneOption = True,
    encoding: EncodingOption = "utf-8",
    quiet: QuietOption = False,
) -> None:
    """Raw text to dependency trees: split, tokenise, tag, parse; CoNLL-U out.

    The taggers fill exactly the tag columns the parser was trained on (UPOS,
    XPOS or both); FORM and '# text' keep the text's characters, MISC marks
    SpaceAfter=No.
    """
    with start_up():  # the imports and the models, out of the garbage collector's way
        from egnlp.corpora.formats import FORMAT_NAMES, TEXT, detect_format
        from egnlp.base.errors import CorpusError
        from egnlp.inputs import read_text
        from egnlp.parser.parser_model import Parser
        from egnlp.pipeline import parse_text, to_conllu
        from egnlp.tagger.tagger_model import Tagger
        from egnlp.tagger.text import language_name

        try:
            language_name(language)
            taggers = [Tagger.load(model_file(path, "TAGGER")) for path in (tagger_model, *(more_taggers or ()))]
            parser = Parser.load(model_file(parser_model, "PARSER"), prune=prune)
        except USER_ERRORS as exc:
            fail(str(exc))
    try:
        text, name = read_text(input, encoding)
        detected = detect_format(text, name) if fmt == TextFormat.auto else TEXT
        if detected != TEXT:
            raise CorpusError(f"{name}: the content is {FORMAT_NAMES[detected]}, not raw text; parse a corpus file "
                              "with 'egnlp parser parse' (or give --format text)")
        start = time.perf_counter()
        trees = parse_text(text, taggers, parser, language=language, jobs=jobs)
        seconds = time.perf_counter() - start
        write_output(to_conllu(trees), out)
    except USER_ERRORS as exc:
        fail(str(exc))
    report_rate("parsed", trees, seconds, out, quiet)
