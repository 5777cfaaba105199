"""``egnlp pipeline train / run`` (one model file from a treebank; raw text or CoNLL-U to trees) and
``egnlp parse-text`` (the same from a tagger and a parser file)."""

from __future__ import annotations

import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from egnlp.cli.common import DevOption, EncodingOption, JobsOption, JsonOption, ModelOut, PruneOption, QuietOption, \
    TextOut, counted, model_file, new_app, note, print_json, report_rate, write_output
from egnlp.cli.progress import StageProgress
from egnlp.cli.tagger import LanguageOption
from egnlp.settings import JACKKNIFE_FOLDS, PIPELINE_STAGES as STAGES
from egnlp.startup import kernels_note, start_up

STAGE_NAMES = {"upos": "UPOS tagger", "pos": "XPOS tagger", "feats": "FEATS tagger",
               "morph": "joint UPOS/XPOS/FEATS tagger", "multiword": "multiword tokens", "jackknife": "jackknifing"}
pipeline_app = new_app("Train and run a whole pipeline (raw text to UD trees) kept in one model file.")


class ParserOrder(str, Enum):
    """The order of a pipeline's parser (egnlp.pipeline_training.parser_of_order)."""

    first = "1"
    second = "2"
    third = "3"


class InputMode(str, Enum):
    """What 'pipeline run' reads (egnlp.pipeline.INPUTS)."""

    text = "text"
    lines = "lines"
    tokens = "tokens"
    conllu = "conllu"


StagesOption = Annotated[str, typer.Option(
    "--stages", help=f"The stages to train, comma-separated, among {', '.join(STAGES)} (multiword tokens where the "
    "treebank has ranges, a lemmatizer where it has lemmas). Without a tokenizer, NLTK's Punkt splits the text; "
    "without a parser the pipeline tags only.")]
FoldsOption = Annotated[int, typer.Option(
    "--folds", help="Jackknifing: the parser trains on tags, features and lemmas predicted for each of this many "
    "parts of the training file by stages trained on the others; 0 trains it on the gold columns.")]
ConfidenceOption = Annotated[bool, typer.Option(
    "--confidence", help="Also write each word's probabilities under the models to MISC: of its tags (UPosProb, "
    "XPosProb, by the column each tagger fills) and of its head (HeadProb), e.g. "
    "HeadProb=0.8731|SpaceAfter=No|UPosProb=0.9954.")]


@pipeline_app.command("train")
def pipeline_train(train: Annotated[str, typer.Argument(metavar="TRAIN", help="CoNLL-U treebank (- for stdin): the "
                                                        "tag columns it fills decide the taggers.")],
                   out: ModelOut, dev: DevOption = None, language: LanguageOption = "english",
                   order: Annotated[ParserOrder, typer.Option("--order", help="The parser's order: 1 (arcs), 2 "
                                                              "(siblings) or 3 (grandparents, pruned by a first-"
                                                              "order model: the most accurate).")
                                    ] = ParserOrder.third,
                   stages: StagesOption = ",".join(STAGES), folds: FoldsOption = JACKKNIFE_FOLDS,
                   encoding: EncodingOption = "utf-8", quiet: QuietOption = False, as_json: JsonOption = False
                   ) -> None:
    """Train a tokenizer and sentence splitter, a multiword-token expander (where the treebank has ranges), a
    tagger of UPOS, XPOS and FEATS, a lemmatizer and a parser trained on what they predict, and write them as
    one model file for 'egnlp pipeline run'."""
    from egnlp.inputs import training_sets
    from egnlp.pipeline_training import parser_of_order, train_pipeline
    from egnlp.tagger.text import language_name

    model_file(out)
    language_name(language)
    kernels_note()
    sets = training_sets(None, train, dev, trees=True, encoding=encoding)
    note(f"training a pipeline on {counted(len(sets.train), 'sentence')}"
         + (f", dev {len(sets.dev)}" if sets.dev else ""), quiet)
    with StageProgress(quiet) as on_stage:
        pipeline = train_pipeline(sets.train, sets.dev, language=language, data=str(train), on_stage=on_stage,
                                  parser_settings=parser_of_order(int(order.value)), folds=folds,
                                  stages=[name.strip() for name in stages.split(",") if name.strip()])
        pipeline.save(out)
    cpu = pipeline.info["train_cpu_seconds"]
    if as_json:
        print_json({"out": str(out), **pipeline.info})
    note(f"trained {len(cpu)} stages ({', '.join(STAGE_NAMES.get(name, name) for name in cpu)}) in "
         f"{sum(cpu.values()):.1f} CPU s; wrote {out}", quiet)


@pipeline_app.command("run")
def pipeline_run(model: Annotated[Path, typer.Argument(metavar="MODEL", help="Model file written by 'egnlp pipeline "
                                                       "train'.")],
                 input: Annotated[str, typer.Argument(metavar="INPUT", help="Input file, or - for stdin.")] = "-",
                 out: TextOut = "-",
                 mode: Annotated[InputMode, typer.Option("--input", help="text: raw text; lines: a sentence a "
                                                         "line; tokens: a sentence a line, tokens between spaces; "
                                                         "conllu: CoNLL-U whose words are kept, tagged and parsed "
                                                         "again.")] = InputMode.text,
                 jobs: JobsOption = None, prune: PruneOption = True, confidence: ConfidenceOption = False,
                 encoding: EncodingOption = "utf-8", quiet: QuietOption = False) -> None:
    """Raw text (or CoNLL-U) to dependency trees with a trained pipeline; CoNLL-U out."""
    with start_up():  # the imports and the model, out of the garbage collector's way
        from egnlp.inputs import read_raw_text
        from egnlp.pipeline import Pipeline, to_conllu

        pipeline = Pipeline.load(model_file(model, "MODEL"), prune=prune)
    text, not_nfc = read_raw_text(input, encoding, any_content=mode != InputMode.text,
                                  command="egnlp pipeline run", other="'--input conllu'")
    if not_nfc and mode != InputMode.conllu:
        note("note: the input was normalised to Unicode NFC (composed characters), as UD requires", quiet)
    start = time.perf_counter()
    trees = pipeline.parse(text, input=mode.value, jobs=jobs, confidence=confidence)
    seconds = time.perf_counter() - start
    write_output(to_conllu(trees), out)
    report_rate("parsed", trees, seconds, out, quiet)


class TextFormat(str, Enum):
    """What parse-text reads: raw text (auto refuses a corpus file, which 'parser parse' reads)."""

    auto = "auto"
    text = "text"


@pipeline_app.command("evaluate")
def pipeline_evaluate(gold: Annotated[str, typer.Argument(metavar="GOLD", help="Gold CoNLL-U file, or - for stdin.")],
                      pred: Annotated[str, typer.Argument(metavar="PRED", help="System CoNLL-U file (any "
                                                          "tokenization of the same text), or - for stdin.")],
                      counts: Annotated[bool, typer.Option("--counts", help="Print the counts (correct, gold, "
                                                           "system, aligned) instead of the percentages.")] = False,
                      multiple_roots: Annotated[bool, typer.Option("--multiple-roots", help="Score sentences with "
                                                                   "several root words instead of refusing them.")
                                                ] = False,
                      as_json: JsonOption = False, encoding: EncodingOption = "utf-8") -> None:
    """The CoNLL 2018 shared task metrics: Tokens, Sentences, Words, UPOS, XPOS, UFeats, AllTags, Lemmas, UAS,
    LAS, CLAS, MLAS, BLEX (precision, recall, F1, aligned accuracy), as the official scorer gives them."""
    from egnlp.corpora.ud_evaluation import conll18_scores, format_conll18_table
    from egnlp.inputs import read_pair

    gold_sents, pred_sents = read_pair(gold, pred, "conll", command="egnlp pipeline evaluate", encoding=encoding)
    scores = conll18_scores(gold_sents, pred_sents, multiple_roots=multiple_roots)
    if as_json:
        print_json({name: score.as_dict() for name, score in scores.items()})
    else:
        typer.echo(format_conll18_table(scores, counts=counts), nl=False)


def parse_text_command(
    tagger_model: Annotated[Path, typer.Argument(metavar="TAGGER", help="POS tagger model (egnlp tagger train); it "
                                                 "fills the tag column its model records (UPOS or XPOS).")],
    parser_model: Annotated[Path, typer.Argument(metavar="PARSER", help="Parser model (egnlp parser train).")],
    input: Annotated[str, typer.Argument(metavar="INPUT", help="Raw text file, or - for stdin.")] = "-",
    out: TextOut = "-",
    more_taggers: Annotated[Optional[list[Path]], typer.Option(
        "--tagger", metavar="MODEL", help="Another POS tagger model, for a parser that reads both UPOS and XPOS "
        "(one tagger per column).")] = None,
    language: LanguageOption = "english",
    fmt: Annotated[TextFormat, typer.Option("--format", help="auto: raw text, and a corpus file (CoNLL, Malt-TAB, "
                                            "CoNLL-2000) is an error ('egnlp parser parse' reads those); text: read "
                                            "any input as raw text.")] = TextFormat.auto,
    jobs: JobsOption = None, prune: PruneOption = True, confidence: ConfidenceOption = False,
    encoding: EncodingOption = "utf-8", quiet: QuietOption = False,
) -> None:
    """Raw text to dependency trees: split, tokenise, tag, parse; CoNLL-U out.

    The taggers fill exactly the tag columns the parser was trained on (UPOS,
    XPOS or both); FORM and '# text' keep the text's characters (in Unicode
    NFC, as UD requires), MISC marks SpaceAfter=No.
    """
    with start_up():  # the imports and the models, out of the garbage collector's way
        from egnlp.inputs import read_raw_text
        from egnlp.parser import Parser
        from egnlp.pipeline import parse_text, to_conllu
        from egnlp.tagger import Tagger
        from egnlp.tagger.text import language_name

        language_name(language)  # an unknown language is a mistake on the command line, before any loading
        taggers = [Tagger.load(model_file(path, "TAGGER")) for path in (tagger_model, *(more_taggers or ()))]
        parser = Parser.load(model_file(parser_model, "PARSER"), prune=prune)
    text, not_nfc = read_raw_text(input, encoding, any_content=fmt == TextFormat.text, command="egnlp parse-text")
    if not_nfc:
        note("note: the input was normalised to Unicode NFC (composed characters), as UD requires", quiet)
    start = time.perf_counter()
    trees = parse_text(text, taggers, parser, language=language, jobs=jobs, confidence=confidence)
    seconds = time.perf_counter() - start
    write_output(to_conllu(trees), out)
    report_rate("parsed", trees, seconds, out, quiet)
