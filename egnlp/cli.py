"""The ``egnlp`` command line: data sets, parser training, parsing, evaluation.

Every command is a thin layer over importable functions; errors in the
user's input (files, data set names, model files, settings) end the command
with one line on stderr and exit status 1, never a traceback.
"""

from __future__ import annotations

import json
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from corpora import CorpusError, list_datasets, load_sentences, read_conll, write_conll
from corpora.datasets import dataset_root, is_dataset
from parser.evaluate import attachment_scores
from parser.model import ModelError, Parser
from training.eg import EGConfig
from training.records import PassRecord
from training.registry import TRAINERS

app = typer.Typer(help="Dependency parsing with exponentiated-gradient training.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False)
data_app = typer.Typer(help="Named data sets.", no_args_is_help=True)
parser_app = typer.Typer(help="Train, run and evaluate dependency parsers.", no_args_is_help=True)
app.add_typer(data_app, name="data")
app.add_typer(parser_app, name="parser")

USER_ERRORS = (CorpusError, ModelError, ValueError, OSError)


class Root(str, Enum):
    single = "single"
    multi = "multi"


class FeatureMode(str, Enum):
    alphabet = "alphabet"
    hash = "hash"


def fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def progress_printer(label: str):
    """A training callback printing one line per pass to stderr."""
    typer.echo(f"{label}\n{'pass':>4} {'eff.it':>7} {'sec':>7} {'C':>8} {'primal':>12} {'dual':>12} "
               f"{'rel.gap':>9} {'dev':>6}", err=True)

    def show(r: PassRecord) -> None:
        dev = f"{r.dev:6.2f}" if r.dev is not None else "     -"
        dual = f"{r.dual:12.2f}" if r.dual is not None else " " * 12
        gap = f"{r.rel_gap:9.2e}" if r.rel_gap is not None else " " * 9
        C = f"{r.C:8.3g}" if r.C is not None else " " * 8
        typer.echo(f"{r.passes:4d} {r.eff_iters:7.2f} {r.seconds:7.1f} {C} {r.primal:12.2f} {dual} {gap} {dev}",
                   err=True)

    return show


@data_app.command("list")
def data_list() -> None:
    """List the named data sets and whether their NLTK packages are found."""
    typer.echo(f"{'name':<6} {'root':<7} {'found':<6} {'nltk package':<30} description")
    for info in list_datasets():
        typer.echo(f"{info.name:<6} {info.root:<7} {'yes' if info.found else 'no':<6} "
                   f"{info.nltk_package:<30} {info.description}")


@data_app.command("export")
def data_export(name: str = typer.Argument(..., help="Data set name (see 'egnlp data list')."),
                split: str = typer.Argument(..., help="train, dev or test."),
                out: Path = typer.Option(..., "-o", "--out", help="CoNLL file to write.")) -> None:
    """Write one split of a data set as a CoNLL file."""
    try:
        if not is_dataset(name):
            raise CorpusError(f"unknown data set '{name}'; see 'egnlp data list'")
        sentences = load_sentences(name, split)
        write_conll(out, sentences)
    except USER_ERRORS as exc:
        fail(str(exc))
    typer.echo(f"wrote {len(sentences)} sentences to {out}", err=True)


def _training_data(data: Optional[str], train: Optional[Path], dev: Optional[Path], encoding: str):
    if (data is None) == (train is None):
        raise CorpusError("give either --data NAME or --train FILE")
    if data is not None:
        if dev is not None:
            raise CorpusError("--dev goes with --train; a data set brings its own dev split")
        if not is_dataset(data):
            return load_sentences(data, encoding=encoding), None, None
        return load_sentences(data, "train"), load_sentences(data, "dev"), dataset_root(data)
    return (read_conll(train, encoding=encoding),
            read_conll(dev, encoding=encoding) if dev is not None else None, None)


@parser_app.command("train")
def parser_train(
    out: Path = typer.Option(..., "--out", "-o", help="Model file (.npz) to write."),
    data: Optional[str] = typer.Option(None, "--data", help="Named data set (its train and dev splits) or a CoNLL file."),
    train: Optional[Path] = typer.Option(None, "--train", help="Training CoNLL file."),
    dev: Optional[Path] = typer.Option(None, "--dev", help="Dev CoNLL file, scored after every pass."),
    trainer: str = typer.Option("eg-ll", "--trainer", help=f"One of: {', '.join(TRAINERS)}."),
    C: float = typer.Option(EGConfig.C, "--C", help="Regularisation constant C of sum_i loss_i + C/2 ||w||^2."),
    passes: int = typer.Option(EGConfig.max_passes, "--passes", help="Pass limit."),
    tol: float = typer.Option(EGConfig.tol, "--tol", help="Stop when the relative duality gap is below this."),
    anneal: bool = typer.Option(EGConfig.anneal, "--anneal/--no-anneal",
                                help="Start at 10 C and decay to C (converges much faster for small C)."),
    order: str = typer.Option(EGConfig.order, "--order", help="Example order: random (a fresh permutation "
                              "per pass) or cyclic."),
    seed: int = typer.Option(EGConfig.seed, "--seed", help="Seed of the example order."),
    root: Optional[Root] = typer.Option(None, "--root", help="Tree space: one root child or any number "
                                        "(default: the data set's, or 'single' if every training tree has one)."),
    features: FeatureMode = typer.Option(FeatureMode.alphabet, "--features", help="Feature ids: gold-arc alphabet or hashing."),
    hash_bits: int = typer.Option(22, "--hash-bits", help="With --features hash: 2^bits feature ids."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of the CoNLL files."),
) -> None:
    """Train a first-order projective parser and save it."""
    from egnlp.api import train_parser

    try:
        train_sents, dev_sents, data_root = _training_data(data, train, dev, encoding)
        chosen_root = root.value if root is not None else data_root
        start = time.perf_counter()
        typer.echo(f"training on {len(train_sents)} sentences"
                   + (f", dev {len(dev_sents)}" if dev_sents else ""), err=True)
        model, result = train_parser(
            train_sents, dev_sents, trainer=trainer, root=chosen_root, feature_mode=features.value,
            hash_bits=hash_bits, callbacks=[progress_printer(f"trainer {trainer}, C={C}" + (" (annealed)" if anneal else ""))],
            C=C, max_passes=passes, tol=tol, anneal=anneal, order=order, seed=seed)
        model.save(out)
    except USER_ERRORS as exc:
        fail(str(exc))
    status = "converged" if result.converged else "stopped at the pass limit"
    typer.echo(f"{status} after {result.final.eff_iters:.1f} effective iterations; "
               f"{time.perf_counter() - start:.1f} s in all; model written to {out}", err=True)


@parser_app.command("parse")
def parser_parse(
    model: Path = typer.Argument(..., help="Model file written by 'egnlp parser train'."),
    input: Path = typer.Argument(..., help="CoNLL-X or CoNLL-U file to parse (HEAD may be '_')."),
    out: Path = typer.Option(..., "-o", "--out", help="CoNLL file to write with predicted heads."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of the input file."),
) -> None:
    """Parse a CoNLL file: predicted HEAD, DEPREL '_' (no labels are predicted)."""
    try:
        parser = Parser.load(model)
        sentences = read_conll(input, encoding=encoding, require_heads=False)
        start = time.perf_counter()
        parsed = parser.parse(sentences)
        seconds = time.perf_counter() - start
        write_conll(out, parsed)
    except USER_ERRORS as exc:
        fail(str(exc))
    typer.echo(f"parsed {len(parsed)} sentences in {seconds:.2f} s "
               f"({len(parsed) / max(seconds, 1e-9):.0f} sentences/s); wrote {out}", err=True)


def _print_scores(scores: dict, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(scores))
        return

    def pct(v):
        return "   n/a" if v is None else f"{v:6.2f}"

    typer.echo(f"tokens {scores['tokens']} ({scores['tokens_nopunct']} without punctuation)")
    typer.echo(f"UAS {pct(scores['uas'])}   LAS {pct(scores['las'])}")
    typer.echo(f"UAS {pct(scores['uas_nopunct'])}   LAS {pct(scores['las_nopunct'])}   (without punctuation)")
    for row in scores.get("by_length", []):
        typer.echo(f"  length {row['bucket']:>6}: {row['sentences']:5d} sentences, UAS {pct(row['uas'])}")


@parser_app.command("evaluate")
def parser_evaluate(
    gold: Path = typer.Argument(..., help="Gold CoNLL file."),
    pred: Path = typer.Argument(..., help="Predicted CoNLL file (same tokens)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    encoding: str = typer.Option("utf-8", "--encoding", help="Encoding of both files."),
) -> None:
    """Attachment scores (UAS, LAS; with and without punctuation)."""
    try:
        scores = attachment_scores(read_conll(gold, encoding=encoding), read_conll(pred, encoding=encoding))
    except USER_ERRORS as exc:
        fail(str(exc))
    _print_scores(scores, as_json)


@app.command("demo")
def demo(data: str = typer.Option("es", "--data", help="Data set to train and test on."),
         out: Path = typer.Option(Path("runs/demo-parser.npz"), "--out", help="Where to save the model.")) -> None:
    """Train a parser on a data set's train split, parse its test split, print the scores."""
    from egnlp.api import train_parser

    try:
        if not is_dataset(data):
            raise CorpusError(f"unknown data set '{data}'; see 'egnlp data list'")
        train_sents, dev_sents, test_sents = (load_sentences(data, s) for s in ("train", "dev", "test"))
        typer.echo(f"data set {data}: train {len(train_sents)}, dev {len(dev_sents)}, test {len(test_sents)} sentences",
                   err=True)
        model, _ = train_parser(train_sents, dev_sents, root=dataset_root(data),
                                callbacks=[progress_printer("parser: online EG, log-linear")])
        model.save(out)
        scores = attachment_scores(test_sents, model.parse(test_sents))
    except USER_ERRORS as exc:
        fail(str(exc))
    typer.echo(f"\nparser saved to {out}; {data} test:")
    _print_scores(scores, as_json=False)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
    sys.exit(0)
