"""The ``egnlp`` command line: data sets, parser training, parsing, evaluation.

Every command is a thin layer over importable functions; errors in the
user's input (files, data set names, model files, settings) end the command
with one line on stderr and exit status 1, never a traceback; mistakes on
the command line (an invalid choice, a missing option) one line and exit
status 2; Ctrl-C one line and exit status 130 (see :mod:`egnlp.console`).
"""

from __future__ import annotations

import os
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from egnlp import __version__
from egnlp.console import (AnnealOption, DecodingProgress, OrderOption, DASK_TRAINER, EG_PASSES, EG_TOL, FORMAT_HELP,
                           PARSER_C, PARSER_PASSES, PARSER_PASSES_HIGHER, PARSER_PATIENCE, PARSER_TRAINER,
                           USER_ERRORS, DaskOption, DataOption, DevOption, EncodingOption, JobsOption, JsonOption,
                           MaxSecondsOption, ModelOut, PruneOption, QuietOption, SaveOnInterruptOption, SeedOption,
                           Split, TextOut, TrainerName, TrainingProgress, TrainOption, TreeFormat, dataset_names,
                           fail, interrupted, model_file, new_app, note, write_output_pieces, at_least_one,
                           at_least_zero, output_name, print_json, progress_printer, own_process, start_up,
                           write_output)
from egnlp.tagger_cli import parse_text_command, tagger_app

# One BLAS thread per process, set before any command imports NumPy (the user's own setting wins).
# egnlp's BLAS calls are dot products of weight-sized vectors, between which idle BLAS threads spin:
# 'parser train --data es' took 146.9 CPU s (125.3 s wall) with OpenBLAS's default threads on 2 cores
# and 110.8 CPU s (111.0 s wall) with one (farm-bench, one run each).  Parallel work goes through --jobs
# processes instead.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

# The commands import the modules they use when they run (Numba kernels, SciPy, NLTK): 'egnlp --help' and
# 'egnlp data list' load none of them.

app = new_app("Dependency parsers and POS taggers trained with exponentiated-gradient algorithms.",
              add_completion=True)
data_app = new_app("Named data sets.")
parser_app = new_app("Train, run and evaluate dependency parsers.")
app.add_typer(data_app, name="data")
app.add_typer(parser_app, name="parser")
app.add_typer(tagger_app, name="tagger")
app.command("parse-text")(parse_text_command)
bench_app = new_app("Reproduce the optimizer comparisons and regularization paths of the EG paper.")
app.add_typer(bench_app, name="bench")


def _format(fmt: Enum | None) -> str | None:
    """The format named by a --format choice, None for auto (told from the content)."""
    return None if fmt is None or fmt.value == "auto" else fmt.value


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"egnlp {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Dependency parsers and POS taggers trained with exponentiated-gradient algorithms."""


class Root(str, Enum):
    single = "single"
    multi = "multi"


class FeatureMode(str, Enum):
    alphabet = "alphabet"
    hash = "hash"


class Tree(str, Enum):
    projective = "projective"
    non_projective = "non-projective"
    auto = "auto"


class TagColumns(str, Enum):
    both = "both"
    upos = "upos"
    xpos = "xpos"


@data_app.command("list")
def data_list() -> None:
    """List the named data sets and whether their NLTK packages are found."""
    from egnlp.corpora import list_datasets

    typer.echo(f"{'name':<16} {'task':<6} {'root':<7} {'found':<6} {'source':<34} description")
    for info in list_datasets():
        typer.echo(f"{info.name:<16} {info.task:<6} {info.root:<7} {'yes' if info.found else 'no':<6} "
                   f"{info.source:<34} {info.description}")


@data_app.command("export")
def data_export(name: str = typer.Argument(..., metavar="NAME", help="Data set name (see 'egnlp data list').",
                                           autocompletion=dataset_names),
                split: Split = typer.Argument(..., metavar="SPLIT", help="The split to write: train|dev|test."),
                out: TextOut = "-",
                quiet: QuietOption = False) -> None:
    """Write one split of a data set as a CoNLL file."""
    from egnlp.corpora import format_conll, is_dataset, load_sentences
    from egnlp.base.errors import CorpusError

    try:
        if not is_dataset(name):
            raise CorpusError(f"unknown data set '{name}'; see 'egnlp data list'")
        sentences = load_sentences(name, split.value)
        write_output(format_conll(sentences), out)
    except USER_ERRORS as exc:
        fail(str(exc))
    note(f"wrote {len(sentences)} sentences to {output_name(out)}", quiet)


def _training_data(data: Optional[str], train: Optional[str], dev: Optional[str], encoding: str,
                   invalid: list[str] | None = None, fmt: str | None = None, train_on_dev: bool = False):
    """(train sentences, dev sentences or None, the data set's root constraint or None) of a parser command;
    with ``invalid`` a list, sentences whose heads do not form a tree are skipped into it; with
    ``train_on_dev`` the dev sentences are training sentences."""
    from egnlp.corpora.datasets import dataset_root
    from egnlp.inputs import training_sets

    sets = training_sets(data, train, dev, trees=True, encoding=encoding, invalid=invalid, fmt=fmt,
                         train_on_dev=train_on_dev)
    return sets.train, sets.dev, dataset_root(sets.dataset) if sets.dataset is not None else None


def trainer_settings(**options) -> dict:
    """The options the user gave (not None), named as the trainers' config fields."""
    return {k: v for k, v in options.items() if v is not None}


@parser_app.command("train")
def parser_train(
    out: ModelOut,
    data: DataOption = None,
    train: TrainOption = None,
    dev: DevOption = None,
    trainer: Optional[TrainerName] = typer.Option(None, "--trainer", help="Trainer (see the README's table of "
                                                  "trainers).",
                                                  show_default=f"{PARSER_TRAINER} (with --dask: {DASK_TRAINER})"),
    C: Optional[float] = typer.Option(None, "--C", help="Regularisation constant C of sum_i loss_i + C/2 ||w||^2.",
                                      show_default=f"{PARSER_C['mm']:g} for max-margin trainers, "
                                                   f"{PARSER_C['ll']:g} for log-linear ones"),
    C_path: Optional[str] = typer.Option(None, "--C-path", help="START:FACTOR:COUNT, e.g. 1000:0.7:21: train a "
                                         "warm-started path of C values, print a table, keep the best on dev."),
    passes: Optional[int] = typer.Option(None, "--passes", help="Pass limit.",
                                         show_default=f"{PARSER_PASSES} for {PARSER_TRAINER} ({PARSER_PASSES_HIGHER} with "
                                                      f"--siblings or --grandparents), {EG_PASSES} for EG, "
                                                      "else the trainer's"),
    tol: Optional[float] = typer.Option(None, "--tol", help="Stop when the relative duality gap is below this.",
                                        show_default=f"{EG_TOL:g} for EG, else the trainer's"),
    anneal: AnnealOption = None,
    average: Optional[bool] = typer.Option(None, "--average/--no-average", help="BCFW: the model (and the "
                                           "objectives reported) is the weighted average of the iterates "
                                           "(Lacoste-Julien et al. 2013).", show_default="on for bcfw"),
    order: OrderOption = None,
    seed: SeedOption = None,
    max_seconds: MaxSecondsOption = None,
    patience: Optional[int] = typer.Option(None, "--patience", callback=at_least_zero, help="Stop when the dev "
                                           "score has not improved for this many passes at the final C (EG's "
                                           "annealed passes do not count); the model is the best dev pass's (as "
                                           "with --max-seconds and a dev set); 0: no early stop.",
                                           show_default=f"{PARSER_PATIENCE} with a held-out dev set, for the online "
                                                        "trainers (bcfw, eg-mm, eg-ll, sgd)"),
    root: Optional[Root] = typer.Option(None, "--root", help="Tree space: one root child or any number.",
                                        show_default="the data set's, or single if every training tree has one"),
    tree: Tree = typer.Option(Tree.projective, "--tree", help="Tree space: projective (Eisner), non-projective "
                              "(Chu-Liu-Edmonds, matrix-tree theorem), or auto: non-projective when more than 1% "
                              "of the training trees are."),
    siblings: bool = typer.Option(False, "--siblings/--no-siblings", help="Second-order model: sibling parts "
                                  "beside the arcs (McDonald and Pereira 2006); projective trees only (--tree auto "
                                  "picks them); about 2x the training time and 1.25x the memory."),
    grandparents: bool = typer.Option(False, "--grandparents/--no-grandparents", help="Third-order model: "
                                      "grandparent parts beside the sibling parts and the arcs (Koo and Collins "
                                      "2010; implies --siblings); projective trees only."),
    final_punct: Optional[bool] = typer.Option(None, "--final-punct/--no-final-punct", help="Decode a sentence's "
                                               "final punctuation as a leaf of the root's one child (first-order, "
                                               "single-root parsers).", show_default="when at least 90% of the "
                                               "training trees that end in punctuation do"),
    cache_mb: Optional[float] = typer.Option(None, "--cache-mb", metavar="<MB>", callback=at_least_zero,
                                             help="Keep up to this many MiB "
                                             "of compiled training and dev sentences for later passes instead of "
                                             "compiling them again at every pass: less time, more memory, the "
                                             "same model (es: about 300 MiB keeps them all, about 1 GiB with "
                                             "--siblings); 0 keeps none.",
                                             show_default="1024 for egr, else 64: the dev sentences, or "
                                                          "without a dev set the training sentences"),
    pos: Optional[TagColumns] = typer.Option(None, "--pos", help="Tag columns the features read: both, upos "
                                             "(CPOSTAG) or xpos (POSTAG).", show_default="both where both are filled"),
    labels: bool = typer.Option(True, "--labels/--no-labels", help="Train the arc labeler when the training data "
                                "have DEPREL labels."),
    train_on_dev: Optional[bool] = typer.Option(None, "--train-on-dev/--hold-out-dev", help="Train on the dev "
                                                "sentences too, up to the pass limit, or hold them out: scored "
                                                "after every pass, the best pass kept (--patience, --C-path).",
                                                show_default="train on a data set's dev split; hold out a --dev "
                                                "file, and any dev set with --patience or --C-path"),
    skip_invalid: bool = typer.Option(False, "--skip-invalid", help="Skip training and dev sentences whose heads "
                                      "do not form a tree (and say how many) instead of stopping at the first."),
    features: FeatureMode = typer.Option(FeatureMode.alphabet, "--features", help="Feature ids: gold-arc alphabet or hashing."),
    hash_bits: int = typer.Option(22, "--hash-bits", help="With --features hash: 2^bits feature ids."),
    fmt: TreeFormat = typer.Option(TreeFormat.auto, "--format", help=f"{FORMAT_HELP} of the training and dev files."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", metavar="<int>", callback=at_least_one,
                                       help="Processes that decode the "
                                       "dev set after each pass and compute the trainer's evaluation passes "
                                       "(primal, dual, gaps); the model is the same for any number.",
                                       show_default="all cores"),
    dask: DaskOption = None,
    workers: Optional[int] = typer.Option(None, "--workers", metavar="<int>", help="With --dask: shards of "
                                          "the training sentences, one EG state each, trained by CoCoA+ rounds "
                                          "(--passes counts rounds).",
                                          show_default="the cluster's workers"),
    encoding: EncodingOption = "utf-8",
    save_on_interrupt: SaveOnInterruptOption = False,
    quiet: QuietOption = False,
    as_json: JsonOption = False,
) -> None:
    """Train a dependency parser (first-order, second-order with --siblings, third-order with --grandparents) and
    its arc labeler, and save it."""
    from egnlp.parser_training import default_patience, parser_settings, train_parser, train_parser_path
    from egnlp.corpora import guess_root, is_dataset
    from egnlp.parser.trees import check_final_on_root
    from egnlp.training.path import parse_c_path
    from egnlp.training.records import BestPass
    from egnlp.training.registry import get_trainer, make_config

    try:
        model_file(out)
        flag = "--grandparents" if grandparents else "--siblings"
        siblings = siblings or grandparents
        settings = trainer_settings(max_passes=passes, anneal=anneal, order=order.value if order else None,
                                    seed=seed, max_seconds=max_seconds, average=average)
        if C_path is not None and C is not None:
            raise ValueError("give --C or --C-path, not both")
        trainer_name = trainer.value if trainer is not None else DASK_TRAINER if dask is not None else PARSER_TRAINER
        if C_path is not None and patience:
            raise ValueError("--patience stops one run; it does not go with --C-path")
        if patience and dev is None and data is None:
            raise ValueError("--patience needs a dev set: give --dev, or --data with a dev split")
        if train_on_dev and (patience or C_path is not None):
            raise ValueError(f"{'--patience' if patience else '--C-path'} scores a held-out dev set: it does not "
                             "go with --train-on-dev")
        if train_on_dev is None:  # a data set's dev split is trained on unless a choice needs it held out
            train_on_dev = dev is None and not patience and C_path is None
        if C_path is not None and save_on_interrupt:
            raise ValueError("--save-on-interrupt keeps the best pass of one run; it does not go with --C-path")
        if dask is None and workers is not None:
            raise ValueError("--workers goes with --dask")
        if workers is not None and workers < 1:
            raise ValueError(f"--workers must be at least 1, not {workers}")
        if dask is not None and siblings:
            raise ValueError(f"--dask trains first-order parsers; {flag} trains on one machine")
        if dask is not None and jobs is not None:
            raise ValueError("--jobs goes with training on one machine; with --dask, --workers shards the data")
        if dask is not None and cache_mb is not None:
            raise ValueError("--cache-mb goes with training on one machine, not with --dask")
        if siblings and tree.value == "non-projective":
            raise ValueError(f"{flag} predicts projective trees only, not --tree non-projective")
        if dask is not None and (C_path is not None or patience or save_on_interrupt):
            raise ValueError("--dask trains one run: it does not go with --C-path, --patience or --save-on-interrupt")
        Cs = parse_c_path(C_path) if C_path is not None else None
        # Check the settings against the trainer before reading any data.
        spec = get_trainer(trainer_name)
        if Cs is None and dask is None:
            settings = parser_settings(trainer_name, settings, first_order=not siblings)
        default_c = PARSER_C[spec.objective]
        config = make_config(spec, **{**settings, **trainer_settings(C=Cs[0] if Cs else C or default_c,
                                                                     tol=tol)})
        invalid: list[str] | None = [] if skip_invalid else None
        train_sents, dev_sents, data_root = _training_data(data, train, dev, encoding, invalid, _format(fmt),
                                                           train_on_dev)
        if patience is None and Cs is None and dask is None and dev_sents:
            patience = default_patience(trainer_name)
        patience = patience or None  # 0: no early stop
        if invalid:
            note(f"skipped {len(invalid)} sentences whose heads do not form a tree (first: {invalid[0]})", quiet)
        chosen_root = root.value if root is not None else data_root
        if final_punct:  # checked before training starts
            check_final_on_root(chosen_root or guess_root(train_sents), 2 if siblings or grandparents else 1)
        model_settings = dict(root=chosen_root, tree=tree.value, tags=pos.value if pos is not None else None,
                              labels=labels, feature_mode=features.value, hash_bits=hash_bits,
                              **({"siblings": True} if siblings else {}),
                              **({"grandparents": True} if grandparents else {}),
                              **({"final_on_root": final_punct} if final_punct is not None else {}))
        start = time.perf_counter()
        joined = train_on_dev and (dev is not None or (data is not None and is_dataset(data)))
        note(f"training on {len(train_sents)} sentences" + (" (with the dev sentences)" if joined else "")
             + (f", dev {len(dev_sents)}" if dev_sents else ""), quiet)
        if Cs is not None:
            note(f"{'C':>10} {'eff.it':>8} {'total':>8} {'dev':>7}", quiet)

            def show_point(p) -> None:
                note(f"{p.C:10.4g} {p.eff_iters:8.2f} {p.total_eff_iters:8.2f} {p.dev_uas:7.2f}"
                     + ("" if p.converged else "  (not converged)"), quiet)

            model, points = train_parser_path(train_sents, dev_sents, Cs, trainer=trainer_name, **model_settings,
                                              tol=tol if tol is not None else 1e-3, on_point=show_point,
                                              cache_mb=cache_mb, jobs=jobs, **settings)
            result = next(p.result for p in points if p.C == model.info["config"]["C"])
            note(f"best C on dev: {model.info['config']['C']:.4g}", quiet)
        else:
            settings.update(trainer_settings(C=C, tol=tol))
            label = f"trainer {trainer_name}" + (f", C={C:g}" if C is not None else "")
            progress = TrainingProgress(label, has_dual=spec.has_dual, max_passes=getattr(config, "max_passes", None),
                                        quiet=quiet)
            callbacks = [*([BestPass()] if save_on_interrupt else []), progress]  # kept before it is shown
            with progress:
                if dask is not None:
                    from egnlp.distributed import dask_client, train_parser_dask

                    with dask_client(dask, workers) as client:
                        model, result = train_parser_dask(client, train_sents, dev_sents, workers=workers,
                                                          trainer=trainer_name, **model_settings,
                                                          callbacks=callbacks, data=data, **settings)
                else:
                    model, result = train_parser(train_sents, dev_sents, trainer=trainer_name, **model_settings,
                                                 callbacks=callbacks, patience=patience, cache_mb=cache_mb,
                                                 jobs=jobs, **settings)
        model.save(out)
    except KeyboardInterrupt as stop:
        interrupted(stop, out, save_on_interrupt)
    except USER_ERRORS as exc:
        fail(str(exc))
    seconds = time.perf_counter() - start
    if as_json:
        print_json({"model": str(out), "trainer": trainer_name, "converged": result.converged, "tree": model.tree,
                    "root": model.root, "final_on_root": model.final_on_root, "labeled": model.labeler is not None,
                    "train_sentences": len(train_sents),
                    "dev_sentences": len(dev_sents or ()), "seconds": seconds, "final": result.final.as_dict(),
                    **({"best_pass": model.info["best_pass"]} if "best_pass" in model.info else {})})
    status = ("converged" if result.converged else "stopped early (--patience)" if model.info.get("early_stop")
              else "stopped at the pass limit")
    kept = f"; kept pass {model.info['best_pass']['passes']} (best dev score)" if "best_pass" in model.info else ""
    note(f"{status} after {result.final.eff_iters:.1f} effective iterations{kept}; {model.tree} trees, "
         f"{'labeled' if model.labeler is not None else 'unlabeled'}; "
         f"{'final punctuation decoded on the root child; ' if model.final_on_root else ''}"
         f"{seconds:.1f} s in all; model written to {out}", quiet)


@parser_app.command("parse")
def parser_parse(
    model: Path = typer.Argument(..., metavar="MODEL", help="Model file written by 'egnlp parser train'."),
    input: str = typer.Argument("-", metavar="INPUT", help="CoNLL-U, CoNLL-X or Malt-TAB file to parse (HEAD may "
                                "be '_'), or - for stdin."),
    out: TextOut = "-",
    fmt: TreeFormat = typer.Option(TreeFormat.auto, "--format", help=f"{FORMAT_HELP}."),
    jobs: JobsOption = None,
    prune: PruneOption = True,
    dask: DaskOption = None,
    encoding: EncodingOption = "utf-8",
    quiet: QuietOption = False,
) -> None:
    """Parse a corpus file: predicted HEAD and (with a labeled model) DEPREL; DEPS cleared, empty nodes dropped.

    The output has the input's columns (CoNLL-X for Malt-TAB input).
    """
    with start_up():  # the imports and the model, out of the garbage collector's way
        from egnlp.corpora import format_conll
        from egnlp.inputs import read_sentences, text_pieces
        from egnlp.parser.parser_model import Parser

        try:
            parser = Parser.load(model_file(model, "MODEL"), prune=prune)
        except USER_ERRORS as exc:
            fail(str(exc))
    count = 0
    try:
        start = time.perf_counter()
        if dask is not None:
            from egnlp.distributed import dask_client, parse_on_cluster

            _, sentences = read_sentences(input, _format(fmt), command="egnlp parser parse", encoding=encoding,
                                          require_heads=False)
            with dask_client(dask, jobs) as client:
                start = time.perf_counter()  # the time to decode, not to start a cluster
                parsed = parse_on_cluster(client, parser, sentences)
            count = len(parsed)
            write_output(format_conll(parsed), out)
        else:  # the input read, parsed and written a piece at a time: memory does not grow with the file
            from egnlp.streams import parse_piece, run_pieces

            chosen, name, pieces = text_pieces(input, _format(fmt), command="egnlp parser parse", encoding=encoding)

            def parsed_pieces():
                nonlocal count
                with DecodingProgress("parsing", input, out, quiet=quiet) as progress:
                    for done in run_pieces(parse_piece, (parser, name, chosen), pieces, jobs):
                        count += done.sentences
                        progress.advance(done.nbytes, done.sentences)
                        yield done.text

            write_output_pieces(parsed_pieces(), out)
        seconds = time.perf_counter() - start
    except USER_ERRORS as exc:
        fail(str(exc))
    note(f"parsed {count} sentences in {seconds:.2f} s ({count / max(seconds, 1e-9):.0f} sentences/s); "
         f"wrote {output_name(out)}", quiet)


def _print_scores(scores: dict, as_json: bool) -> None:
    if as_json:
        print_json(scores)
        return

    def pct(v):
        return "   n/a" if v is None else f"{v:6.2f}"

    typer.echo(f"tokens {scores['tokens']} ({scores['tokens_nopunct']} without punctuation)")
    typer.echo(f"UAS {pct(scores['uas'])}   LAS {pct(scores['las'])}")
    typer.echo(f"UAS {pct(scores['uas_nopunct'])}   LAS {pct(scores['las_nopunct'])}   (without punctuation)")
    typer.echo(f"LAS {pct(scores['las_universal'])} on universal relations (subtypes stripped; CoNLL 2018)")
    for row in scores.get("by_length", []):
        typer.echo(f"  length {row['bucket']:>6}: {row['sentences']:5d} sentences, UAS {pct(row['uas'])}")


@parser_app.command("evaluate")
def parser_evaluate(
    gold: str = typer.Argument(..., metavar="GOLD", help="Gold corpus file (CoNLL-U, CoNLL-X or Malt-TAB), or - "
                               "for stdin."),
    pred: str = typer.Argument(..., metavar="PRED", help="Predicted corpus file (same tokens), or - for stdin."),
    as_json: JsonOption = False,
    fmt: TreeFormat = typer.Option(TreeFormat.auto, "--format", help=f"{FORMAT_HELP} of both files."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of both files."),
) -> None:
    """Attachment scores (UAS, LAS; with and without punctuation)."""
    from egnlp.inputs import read_sentences
    from egnlp.parser.attachment_scores import attachment_scores

    try:
        if gold == pred == "-":
            raise ValueError("only one of GOLD and PRED can be stdin ('-')")
        gold_sents, pred_sents = (read_sentences(path, _format(fmt), command="egnlp parser evaluate",
                                                 encoding=encoding)[1] for path in (gold, pred))
        scores = attachment_scores(gold_sents, pred_sents)
    except USER_ERRORS as exc:
        fail(str(exc))
    _print_scores(scores, as_json)


@parser_app.command("show")
def parser_show(
    file: Path = typer.Argument(..., help="CoNLL file to draw ('-': stdin; the gold trees when PRED is given)."),
    pred: Optional[Path] = typer.Argument(None, help="Predicted CoNLL file of the same sentences: drawn below "
                                          "FILE, arcs whose head or label differ from FILE's in red."),
    gold: Optional[Path] = typer.Option(None, "--gold", help="Gold CoNLL file; FILE is then the prediction."),
    sentence: int = typer.Option(1, "--sentence", "-n", help="Number of the sentence to draw, from 1."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="SVG file to write [default: stdout]."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of the CoNLL files."),
) -> None:
    """Draw one sentence as an SVG picture: arcs over the words with their labels; given gold and predicted
    trees, gold above and the prediction below with its wrong arcs in red."""
    from egnlp.show import show_command

    try:
        svg, note = show_command(file, pred, gold=gold, sentence=sentence, out=out, encoding=encoding)
    except USER_ERRORS as exc:
        fail(str(exc))
    if svg is not None:
        typer.echo(svg, nl=False)
    typer.echo(note, err=True)


@app.command("demo")
def demo(data: str = typer.Option("wsj", "--data", help="Dependency data set for the parser.",
                                  autocompletion=dataset_names),
         tagger_data: str = typer.Option("ptb-pos", "--tagger-data", help="POS data set for the tagger.",
                                         autocompletion=dataset_names),
         out: Path = typer.Option(Path("runs"), "--out", help="Folder for the two models."),
         limit: Optional[int] = typer.Option(None, "--limit", help="Train on the first N sentences only (a quick "
                                             "check).", show_default="all"),
         passes: Optional[int] = typer.Option(None, "--passes", help="Pass limit of both trainers.",
                                              show_default="the trainers'")) -> None:
    """Train a parser and a POS tagger with the defaults, tag and parse the test split, print the scores.

    When the tagger's test sentences are the parser's (wsj and ptb-pos), the
    parser also runs on the predicted tags.
    """
    from egnlp.parser_training import train_parser
    from egnlp.corpora import CorpusError, dataset_root, dataset_task, is_dataset, load_sentences
    from egnlp.inputs import training_sets
    from egnlp.parser.attachment_scores import attachment_scores
    from egnlp.tagger.tag_scores import tag_scores
    from egnlp.tagger_training import label_columns, train_crf_tagger

    try:
        for name, task in ((data, "parse"), (tagger_data, "pos")):
            if not is_dataset(name):
                raise CorpusError(f"unknown data set '{name}'; see 'egnlp data list'")
            if dataset_task(name) != task:
                raise CorpusError(f"data set '{name}' is for the task '{dataset_task(name)}', not '{task}'")
        out.mkdir(parents=True, exist_ok=True)
        if limit is not None and limit < 1:
            raise ValueError("--limit must be at least 1")
        settings = trainer_settings(max_passes=passes)
        # the parser trains on the dev split too, as parser train does by default (--train-on-dev)
        train_sents = training_sets(data, None, None, trees=True, train_on_dev=True).train[:limit]
        test_sents = load_sentences(data, "test")
        typer.echo(f"parser data {data}: train and dev {len(train_sents)}, test {len(test_sents)} sentences",
                   err=True)
        parser, _ = train_parser(train_sents, None, root=dataset_root(data),
                                 callbacks=[progress_printer(f"parser: {PARSER_TRAINER} (averaged), max-margin")], **settings)
        parser.save(out / "demo-parser.npz")
        t_train, t_dev, t_test = (load_sentences(tagger_data, s) for s in ("train", "dev", "test"))
        t_train = t_train[:limit]
        typer.echo(f"\ntagger data {tagger_data}: train {len(t_train)}, dev {len(t_dev)}, test {len(t_test)} "
                   "sentences", err=True)
        tagger, _ = train_crf_tagger(*label_columns(t_train)[:2], dev=label_columns(t_dev)[:2],
                                     callbacks=[progress_printer("tagger: CRF, online EG, log-linear")], **settings)
        tagger.save(out / "demo-tagger.npz")
        tagged = tagger.tag_corpus(t_test)
        tags = tag_scores(t_test, tagged, column="pos", train_vocab=tagger.vocabulary)
        gold_tags = attachment_scores(test_sents, parser.parse(test_sents))
        rows = [("parser", f"{data} test, gold POS", f"UAS {gold_tags['uas']:.2f}  "
                 f"(no punct. {gold_tags['uas_nopunct']:.2f})")]
        rows.append(("tagger", f"{tagger_data} test", f"accuracy {tags['accuracy']:.2f}  "
                     f"(unknown words {tags['unknown_accuracy']:.2f})"))
        if [s.forms for s in t_test] == [s.forms for s in test_sents]:
            predicted_input = tagger.tag_corpus(test_sents)
            auto = attachment_scores(test_sents, parser.parse(predicted_input))
            rows.append(("tagger + parser", f"{data} test, predicted POS", f"UAS {auto['uas']:.2f}  "
                         f"(no punct. {auto['uas_nopunct']:.2f})"))
    except USER_ERRORS as exc:
        fail(str(exc))
    typer.echo(f"\nmodels saved to {out / 'demo-parser.npz'} and {out / 'demo-tagger.npz'}")
    for what, where, score in rows:
        typer.echo(f"{what:<16} {where:<28} {score}")


class Objective(str, Enum):
    ll = "ll"
    mm = "mm"


def _bench_problem(data: str, limit: Optional[int], root: Optional[Root]):
    """The parsing problem of a data set's train split (or its first ``limit`` sentences) and a dev UAS scorer."""
    from egnlp.parser_training import DEV_CACHE_BYTES, FEATURE_CACHE_BYTES, build_parsing_problem, uas_scorer
    from egnlp.features.arc_parts import CacheBudget
    from egnlp.corpora import CorpusError, is_dataset

    if not is_dataset(data):
        raise CorpusError(f"unknown data set '{data}'; see 'egnlp data list'")
    train_sents, dev_sents, data_root = _training_data(data, None, None, "utf-8")
    if limit is not None:
        if limit < 1:
            raise ValueError("--limit must be at least 1")
        train_sents = train_sents[:limit]
    chosen = root.value if root is not None else data_root
    # the benches visit every sentence many times: compiled sentences are kept
    featurizer, problem, seconds = build_parsing_problem(train_sents, chosen, cache_bytes=FEATURE_CACHE_BYTES)
    typer.echo(f"{data}: {len(train_sents)} training sentences, {problem.features.n_features} features "
               f"({seconds:.1f} s); dev {len(dev_sents)} sentences", err=True)
    # and the dev set is decoded at every record, as in parser train
    return problem, uas_scorer(featurizer, dev_sents, chosen, budget=CacheBudget(DEV_CACHE_BYTES))


# options shared by the bench commands
RunSecondsOption = Annotated[Optional[float], typer.Option("--max-seconds", help="Time budget of each run.",
                                                           show_default="no limit")]
RunPassesOption = Annotated[Optional[int], typer.Option("--passes", help="Pass (iteration) limit of each run.",
                                                        show_default="the trainers'")]
RunSeedOption = Annotated[int, typer.Option("--seed", help="Seed of the runs' random choices.")]
LimitOption = Annotated[Optional[int], typer.Option("--limit", help="Use only the first N training sentences.",
                                                    show_default="all")]
BenchRootOption = Annotated[Optional[Root], typer.Option("--root", help="Tree space (of a parsing set).",
                                                         show_default="the data set's")]


@bench_app.command("optimizers")
def bench_optimizers(
    out: Path = typer.Option(..., "--out", "-o", help="Folder for curves.csv, summary.json, summary.md, *.png."),
    data: str = typer.Option("es", "--data", help="Named data set: train split to optimise, dev split to score.",
                             autocompletion=dataset_names),
    objective: Objective = typer.Option(Objective.ll, "--objective", help="ll (log-linear) or mm (max-margin)."),
    C: float = typer.Option(10.0, "--C", help="Regularisation constant."),
    trainers: Optional[str] = typer.Option(None, "--trainers", help="Comma-separated runs; a suffix /cyclic, "
                                           "/random or /gap sets the order.",
                                           show_default="eg-ll,lbfgs,sgd,eg-ll-batch for ll; eg-mm,cutting-plane,bcfw "
                                                        "for mm"),
    max_seconds: RunSecondsOption = None,
    passes: RunPassesOption = None,
    seed: RunSeedOption = 0,
    limit: LimitOption = None,
    root: BenchRootOption = None,
) -> None:
    """Run several trainers on one objective and C; write curves, plots and a summary."""
    from egnlp.comparisons import DEFAULT_TRAINERS, compare_optimizers, run_spec, write_optimizer_report
    from egnlp.training.registry import get_trainer

    try:
        specs = [t.strip() for t in trainers.split(",") if t.strip()] if trainers else list(DEFAULT_TRAINERS[objective.value])
        for spec in specs:
            name, _ = run_spec(spec)
            if get_trainer(name).objective != objective.value:
                raise ValueError(f"trainer '{name}' does not optimise the {objective.value} objective")
        problem, dev_score = _bench_problem(data, limit, root)

        def progress(spec: str, r) -> None:
            gap = f"{r.rel_gap:9.2e}" if r.rel_gap is not None else " " * 9
            dev = f"{r.dev:6.2f}" if r.dev is not None else "     -"
            typer.echo(f"{spec:>16} {r.passes:4d} {r.eff_iters:8.2f} {r.seconds:8.1f} {r.primal:14.4f} {gap} {dev}",
                       err=True)

        typer.echo(f"{'run':>16} {'pass':>4} {'eff.it':>8} {'sec':>8} {'primal':>14} {'rel.gap':>9} {'dev':>6}", err=True)
        runs = compare_optimizers(problem, specs, C, dev=dev_score, max_seconds=max_seconds, max_passes=passes,
                                  seed=seed, progress=progress)
        title = f"{data}, {objective.value} objective, C={C:g}"
        write_optimizer_report(runs, out, title)
    except USER_ERRORS as exc:
        fail(str(exc))
    typer.echo((out / "summary.md").read_text(encoding="utf-8"))


@bench_app.command("path")
def bench_path(
    out: Path = typer.Option(..., "--out", "-o", help="Folder for path.csv, summary.json, summary.md, path.png."),
    data: str = typer.Option("es", "--data", help="Named data set: train split to optimise, dev split to score.",
                             autocompletion=dataset_names),
    objective: Objective = typer.Option(Objective.ll, "--objective", help="ll (eg-ll) or mm (eg-mm)."),
    trainer: Optional[TrainerName] = typer.Option(None, "--trainer", help="Trainer.",
                                                  show_default="eg-ll for ll, eg-mm for mm"),
    C_path: str = typer.Option("1000:0.7:21", "--C-path", help="START:FACTOR:COUNT."),
    tol: float = typer.Option(1e-3, "--tol", help="Relative duality gap at which each C stops."),
    passes: Optional[int] = typer.Option(None, "--passes", help="Pass limit for each C.",
                                         show_default="the trainer's"),
    limit: LimitOption = None,
    root: BenchRootOption = None,
) -> None:
    """A warm-started path of C values (each from the last solution): the paper's Table 3."""
    from egnlp.comparisons import run_path, write_path_report
    from egnlp.training.path import parse_c_path
    from egnlp.training.registry import get_trainer

    try:
        name = trainer.value if trainer else ("eg-ll" if objective == Objective.ll else "eg-mm")
        if get_trainer(name).objective != objective.value:
            raise ValueError(f"trainer '{name}' does not optimise the {objective.value} objective")
        Cs = parse_c_path(C_path)
        problem, dev_score = _bench_problem(data, limit, root)
        typer.echo(f"{'C':>10} {'eff.it':>8} {'total':>8} {'dev':>7}", err=True)

        def show(p) -> None:
            typer.echo(f"{p.C:10.4g} {p.eff_iters:8.2f} {p.total_eff_iters:8.2f} {p.dev_uas:7.2f}"
                       + ("" if p.converged else "  (not converged)"), err=True)

        points = run_path(problem, name, Cs, dev=dev_score, tol=tol, max_passes=passes, on_point=show)
        write_path_report(points, out, f"{data}, {name}, C path {C_path}")
    except USER_ERRORS as exc:
        fail(str(exc))
    typer.echo((out / "summary.md").read_text(encoding="utf-8"))


@bench_app.command("rates")
def bench_rates(
    out: Path = typer.Option(..., "--out", "-o", help="Folder for curves.csv, summary.json, summary.md, gap.png."),
    data: str = typer.Option("es", "--data", help="Named data set (dependency trees or tags): its train split.",
                             autocompletion=dataset_names),
    C: float = typer.Option(100.0, "--C", help="Regularisation constant, the same for every run."),
    trainers: Optional[str] = typer.Option(None, "--trainers", help="Comma-separated max-margin runs; suffixes "
                                           "/gap, /random, /cyclic (order), /fixed (no annealing), /paper "
                                           "(egr's a-priori step).",
                                           show_default="egr, egr/paper, eg-mm-batch/fixed, eg-mm, eg-mm/gap, bcfw, "
                                                        "bcfw/gap, cutting-plane"),
    max_seconds: RunSecondsOption = None,
    passes: RunPassesOption = None,
    seed: RunSeedOption = 0,
    limit: LimitOption = None,
    root: BenchRootOption = None,
) -> None:
    """Duality gap against iterations on the max-margin objective: iterations and seconds to relative
    gaps 1e-1 to 1e-4 and the slope of log(gap) against log(iterations) over the last decade
    (Zhang et al. 2011: about -2 for egr, -1 for batch EG)."""
    from egnlp.comparisons import RATE_TRAINERS, compare_optimizers, run_spec, tagging_problem, write_rate_report
    from egnlp.corpora import CorpusError, dataset_task, is_dataset
    from egnlp.training.registry import get_trainer

    try:
        specs = [t.strip() for t in trainers.split(",") if t.strip()] if trainers else list(RATE_TRAINERS)
        for spec in specs:
            name, _ = run_spec(spec)
            if get_trainer(name).objective != "mm":
                raise ValueError(f"trainer '{name}' does not optimise the mm objective")
        if not is_dataset(data):
            raise CorpusError(f"unknown data set '{data}'; see 'egnlp data list'")
        if dataset_task(data) == "parse":
            problem, _ = _bench_problem(data, limit, root)
        else:
            if limit is not None and limit < 1:
                raise ValueError("--limit must be at least 1")
            problem = tagging_problem(data, limit)
            typer.echo(f"{data}: {problem.features.n_examples} training sentences, "
                       f"{problem.features.n_features} features", err=True)

        def progress(spec: str, r) -> None:
            gap = f"{r.rel_gap:9.2e}" if r.rel_gap is not None else " " * 9
            typer.echo(f"{spec:>16} {r.passes:5d} {r.eff_iters:8.2f} {r.seconds:8.1f} {r.primal:14.4f} {gap}", err=True)

        typer.echo(f"{'run':>16} {'pass':>5} {'eff.it':>8} {'sec':>8} {'primal':>14} {'rel.gap':>9}", err=True)
        runs = compare_optimizers(problem, specs, C, max_seconds=max_seconds, max_passes=passes, seed=seed,
                                  progress=progress)
        write_rate_report(runs, out, f"{data}" + (f" (first {limit})" if limit else "") + f", max-margin, C={C:g}")
    except USER_ERRORS as exc:
        fail(str(exc))
    typer.echo((out / "summary.md").read_text(encoding="utf-8"))


model_app = new_app("Inspect model files.")
app.add_typer(model_app, name="model")


@model_app.command("info")
def model_info_command(
    model: Path = typer.Argument(..., metavar="MODEL", help="Model file (.npz) written by 'egnlp parser train' or "
                                 "'egnlp tagger train'."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
) -> None:
    """Print what a model file holds.

    Kind, format version, tree space and labels or tag set, features, training data, settings, final primal/dual/gap.
    """
    import json

    from egnlp.model_info import format_info, model_info

    try:
        info = model_info(model_file(model, "MODEL"))
    except USER_ERRORS as exc:
        fail(str(exc))
    typer.echo(json.dumps(info, indent=2) if as_json else format_info(info), nl=as_json)


def main() -> None:
    """The ``egnlp`` program: the commands, then the end of the process."""
    own_process()  # see egnlp.console.start_up
    try:
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


if __name__ == "__main__":
    main()
    sys.exit(0)
