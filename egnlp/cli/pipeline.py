"""``egnlp parse-text``: raw text to dependency trees, CoNLL-U out."""

from __future__ import annotations

import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from egnlp.cli.common import EncodingOption, JobsOption, PruneOption, QuietOption, TextOut, model_file, note, \
    report_rate, write_output
from egnlp.cli.tagger import LanguageOption
from egnlp.startup import start_up


ConfidenceOption = Annotated[bool, typer.Option(
    "--confidence", help="Also write each word's probabilities under the models to MISC: of its tags (UPosProb, "
    "XPosProb, by the column each tagger fills) and of its head (HeadProb), e.g. "
    "HeadProb=0.8731|SpaceAfter=No|UPosProb=0.9954.")]


class TextFormat(str, Enum):
    """What parse-text reads: raw text (auto refuses a corpus file, which 'parser parse' reads)."""

    auto = "auto"
    text = "text"


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
