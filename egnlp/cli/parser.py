"""``egnlp parser``: train, parse, evaluate, show.

Each command builds its settings, calls the functions of the application
layer (:mod:`egnlp.parser_training`, :mod:`egnlp.streams`,
:mod:`egnlp.inputs`) and prints; the conventions are those of
:mod:`egnlp.cli.common`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from egnlp.cli.common import (FORMAT_HELP, DaskOption, DataOption, DevOption, EncodingOption, JobsOption, JsonOption,
                              ModelOut, PruneOption, QuietOption, TextOut, TrainOption, TreeFormat, chosen_format,
                              counted, model_file, new_app, note, output_name, print_json)
from egnlp.cli.progress import TrainingProgress, saved_on_interrupt, write_decoded
from egnlp.cli.settings_options import settings_options
from egnlp.settings import ParserSettings
from egnlp.startup import kernels_note, start_up

parser_app = new_app("Train, run and evaluate dependency parsers.")

TreeFormatOption = Annotated[TreeFormat, typer.Option("--format", help=f"{FORMAT_HELP}.")]
SkipInvalidOption = Annotated[bool, typer.Option("--skip-invalid", help="Skip training and dev sentences whose "
                                                 "heads do not form a tree (and say how many) instead of stopping "
                                                 "at the first.")]
HeadConfidenceOption = Annotated[bool, typer.Option(
    "--confidence", help="Also write each word's head probability under the model, its marginal over the trees "
    "the parser decodes in, to MISC: HeadProb=0.9312 (other MISC entries kept). CoNLL-U input only.")]
ModelArgument = Annotated[Path, typer.Argument(metavar="MODEL", help="Model file written by 'egnlp parser train'.")]


@parser_app.command("train")
@settings_options(ParserSettings)
def parser_train(out: ModelOut, data: DataOption = None, train: TrainOption = None, dev: DevOption = None,
                 fmt: TreeFormatOption = TreeFormat.auto, encoding: EncodingOption = "utf-8",
                 skip_invalid: SkipInvalidOption = False, dask: DaskOption = None, quiet: QuietOption = False,
                 as_json: JsonOption = False, *, options: dict[str, Any]) -> None:
    """Train a dependency parser (first order by default; --parts siblings or grandparents: second or third order,
    pruned by a first-order model) and its arc labeler, and save it."""
    from egnlp.inputs import training_sets
    from egnlp.parser_training import train_parser

    settings = ParserSettings(**options, dask=dask is not None)
    model_file(out)
    kernels_note()
    invalid: list[str] | None = [] if skip_invalid else None
    joined = settings.joins_dev(dev_is_a_file=dev is not None)
    sets = training_sets(data, train, dev, trees=True, encoding=encoding, invalid=invalid, fmt=chosen_format(fmt),
                         train_on_dev=joined)
    settings.check_data(bool(sets.dev))
    if invalid:
        note(f"skipped {counted(len(invalid), 'sentence')} whose heads do not form a tree (first: {invalid[0]})",
             quiet)
    note(_model_line(settings), quiet)
    note(f"training on {counted(len(sets.train), 'sentence')}" + (" (with the dev sentences)" if joined and (
        dev is not None or sets.dataset is not None) else "") + (f", dev {len(sets.dev)}" if sets.dev else ""), quiet)
    start = time.perf_counter()
    with saved_on_interrupt(out, settings.save_on_interrupt), _progress(settings, quiet) as (callbacks, on_point), \
            _cluster(dask, settings.workers) as client:
        model, result = train_parser(sets.train, sets.dev, settings, callbacks=callbacks, on_point=on_point,
                                     data=data, client=client, on_stage=lambda _, text: note(text, quiet))
        model.save(out)
    _report_training(model, result, out, sets, time.perf_counter() - start, quiet, as_json)


@parser_app.command("parse")
def parser_parse(model: ModelArgument, input: Annotated[str, typer.Argument(
                     metavar="INPUT", help="CoNLL-U, CoNLL-X or Malt-TAB file to parse (HEAD may be '_'), or - for "
                     "stdin.")] = "-", out: TextOut = "-", fmt: TreeFormatOption = TreeFormat.auto,
                 jobs: JobsOption = None, prune: PruneOption = True, dask: DaskOption = None,
                 confidence: HeadConfidenceOption = False, encoding: EncodingOption = "utf-8",
                 quiet: QuietOption = False) -> None:
    """Parse a corpus file: predicted HEAD and (with a labeled model) DEPREL; DEPS cleared, empty nodes dropped.

    The output has the input's columns (CoNLL-X for Malt-TAB input).
    """
    with start_up():  # the imports and the model, out of the garbage collector's way
        from egnlp.inputs import text_pieces
        from egnlp.parser import Parser
        from egnlp.streams import check_confidence, parse_piece

        parser = Parser.load(model_file(model, "MODEL"), prune=prune)
    check_confidence(confidence, dask=dask is not None)
    if dask is not None:
        count, seconds = _parse_on_dask(dask, jobs, parser, input, chosen_format(fmt), out, encoding)
    else:  # the input read, parsed and written a piece at a time: memory does not grow with the file
        start = time.perf_counter()
        chosen, name, pieces = text_pieces(input, chosen_format(fmt), command="egnlp parser parse", encoding=encoding)
        check_confidence(confidence, chosen)
        count, _ = write_decoded(parse_piece, (parser, name, chosen, confidence), input, pieces, out, jobs, "parsing",
                                 quiet)
        seconds = time.perf_counter() - start
    note(f"parsed {counted(count, 'sentence')} in {seconds:.2f} s ({count / max(seconds, 1e-9):.0f} sentences/s); "
         f"wrote {output_name(out)}", quiet)


@parser_app.command("evaluate")
def parser_evaluate(gold: Annotated[str, typer.Argument(metavar="GOLD", help="Gold corpus file (CoNLL-U, CoNLL-X or "
                                                        "Malt-TAB), or - for stdin.")],
                    pred: Annotated[str, typer.Argument(metavar="PRED", help="Predicted corpus file (same tokens), "
                                                        "or - for stdin.")],
                    as_json: JsonOption = False, fmt: TreeFormatOption = TreeFormat.auto,
                    encoding: Annotated[str, typer.Option("--encoding", help="Encoding of both files.")] = "utf-8"
                    ) -> None:
    """Attachment scores (UAS, LAS; with and without punctuation)."""
    from egnlp.inputs import read_pair
    from egnlp.parser import attachment_scores

    gold_sents, pred_sents = read_pair(gold, pred, chosen_format(fmt), command="egnlp parser evaluate",
                                       encoding=encoding)
    scores = attachment_scores(gold_sents, pred_sents)
    print_json(scores) if as_json else typer.echo(_scores_text(scores))


@parser_app.command("show")
def parser_show(file: Annotated[Path, typer.Argument(help="CoNLL file to draw ('-': stdin; the gold trees when PRED "
                                                     "is given).")],
                pred: Annotated[Optional[Path], typer.Argument(help="Predicted CoNLL file of the same sentences: "
                                                               "drawn below FILE, arcs whose head or label differ "
                                                               "from FILE's in red.")] = None,
                gold: Annotated[Optional[Path], typer.Option("--gold", help="Gold CoNLL file; FILE is then the "
                                                             "prediction.")] = None,
                sentence: Annotated[int, typer.Option("--sentence", "-n", help="Number of the sentence to draw, "
                                                      "from 1.")] = 1,
                out: Annotated[Optional[Path], typer.Option("-o", "--out", help="SVG file to write (missing folders "
                                                            "are created).", show_default="stdout")] = None,
                encoding: Annotated[str, typer.Option("--encoding", help="Encoding of the CoNLL files.")] = "utf-8"
                ) -> None:
    """Draw one sentence as an SVG picture: arcs over the words with their labels; given gold and predicted
    trees, gold above and the prediction below with its wrong arcs in red."""
    from egnlp.show import show_command

    svg, said = show_command(file, pred, gold=gold, sentence=sentence, out=out, encoding=encoding)
    if svg is not None:
        typer.echo(svg, nl=False)
    typer.echo(said, err=True)


# --- what the commands share -------------------------------------------------------------------------


def _cluster(address: str | None, workers: int | None):
    """A Dask client of ``--dask ADDRESS`` (``workers`` processes for ``local``), or None."""
    from contextlib import nullcontext

    if address is None:
        return nullcontext(None)
    from egnlp.distributed import dask_client

    return dask_client(address, workers)


def _parse_on_dask(address: str, jobs: int | None, parser, source: str, fmt: str | None, out: str,
                   encoding: str) -> tuple[int, float]:
    """``parser parse --dask``: the file parsed on a cluster's workers; (sentences, seconds of decoding)."""
    from egnlp.cli.common import write_output
    from egnlp.corpora import format_conll
    from egnlp.distributed import dask_client, parse_on_cluster
    from egnlp.inputs import read_sentences

    _, sentences = read_sentences(source, fmt, command="egnlp parser parse", encoding=encoding, require_heads=False)
    with dask_client(address, jobs) as client:
        start = time.perf_counter()  # the time to decode, not to start a cluster
        parsed = parse_on_cluster(client, parser, sentences)
        seconds = time.perf_counter() - start
    write_output(format_conll(parsed), out)
    return len(parsed), seconds


def _scores_text(scores: dict) -> str:
    """The lines of ``parser evaluate``."""

    def pct(v):
        return "   n/a" if v is None else f"{v:6.2f}"

    lines = [f"tokens {scores['tokens']} ({scores['tokens_nopunct']} without punctuation)",
             f"UAS {pct(scores['uas'])}   LAS {pct(scores['las'])}",
             f"UAS {pct(scores['uas_nopunct'])}   LAS {pct(scores['las_nopunct'])}   (without punctuation)",
             f"LAS {pct(scores['las_universal'])} on universal relations (subtypes stripped; CoNLL 2018)"]
    lines += [f"  length {row['bucket']:>6}: {row['sentences']:5d} sentences, UAS {pct(row['uas'])}"
              for row in scores.get("by_length", [])]
    return "\n".join(lines)


def _model_line(settings: ParserSettings) -> str:
    """What ``parser train`` trains: the model's order and parts, and its cascade."""
    order = ("first order: arcs", "second order: arcs and siblings",
             "third order: arcs, siblings and grandparents")[settings.order_of_model - 1]
    return (f"model: {order}" + (", pruned by a first-order model trained first (--no-cascade: every arc)"
                                 if settings.cascaded else ""))


def _progress(settings: ParserSettings, quiet: bool):
    """(training callbacks, the C path's row printer) in a context: a progress line or bar per pass of one
    run, a row per C of a path."""
    from contextlib import contextmanager

    @contextmanager
    def shown():
        if settings.C_path is not None:
            note(f"{'C':>10} {'eff.it':>8} {'total':>8} {'dev':>7}", quiet)

            def show_point(p) -> None:
                note(f"{p.C:10.4g} {p.eff_iters:8.2f} {p.total_eff_iters:8.2f} {p.dev_uas:7.2f}"
                     + ("" if p.converged else "  (not converged)"), quiet)

            yield [], show_point
            return
        config = settings.trainer_configs()[0]
        label = f"trainer {settings.trainer_name}" + (f", C={settings.C:g}" if settings.C is not None else "")
        with TrainingProgress(label, has_dual=settings.spec.has_dual, max_passes=getattr(config, "max_passes", None),
                              quiet=quiet) as progress:
            yield [progress], None

    return shown()


def _report_training(model, result, out: Path, sets, seconds: float, quiet: bool, as_json: bool) -> None:
    """The summary of ``parser train``: one line on stderr, and with ``--json`` one object on stdout."""
    info = model.info
    if as_json:
        print_json({"model": str(out), "trainer": info["trainer"], "converged": result.converged, "tree": model.tree,
                    "root": model.root, "final_on_root": model.final_on_root, "labeled": model.labeler is not None,
                    "train_sentences": len(sets.train), "dev_sentences": len(sets.dev or ()), "seconds": seconds,
                    "final": result.final.as_dict(),
                    **({"best_pass": info["best_pass"]} if "best_pass" in info else {})})
    if "C_path" in info:
        note(f"best C on dev: {info['config']['C']:.4g}", quiet)
    status = ("converged" if result.converged else "stopped early (--patience)" if info.get("early_stop")
              else "stopped at the pass limit")
    kept = f"; kept pass {info['best_pass']['passes']} (best dev score)" if "best_pass" in info else ""
    note(f"{status} after {result.final.eff_iters:.1f} effective iterations{kept}; {model.tree} trees, "
         f"{'labeled' if model.labeler is not None else 'unlabeled'}; "
         f"{'final punctuation decoded on the root child; ' if model.final_on_root else ''}"
         f"{seconds:.1f} s in all; model written to {out}", quiet)
