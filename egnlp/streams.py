"""Corpus files parsed or tagged a piece at a time, on one core or several.

``parser parse`` and ``tagger tag`` (on a CoNLL or Malt-TAB file) read their
input in pieces of about 1 MB that end at a sentence's end
(:func:`egnlp.inputs.text_pieces`), and each piece is read, decoded and
written back as text by the same function, :func:`parse_piece` or
:func:`tag_piece`: in this process with ``--jobs 1``, else in a pool of forked
workers (:func:`egnlp.base.workers.map_pieces`), results in input order.
Memory holds a few pieces, whatever the file's size, and the output is the
same for any number of jobs.  An input of one piece is decoded in blocks of
sentences on the ``jobs`` processes instead (``parse_corpus(..., jobs)``).
With ``--confidence`` each word's probability goes to MISC, which only
CoNLL-U output has (:func:`check_confidence`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, NamedTuple

from egnlp.base.errors import SettingsError
from egnlp.corpora import format_conll, format_parsed
from egnlp.base.workers import map_pieces, resolve_jobs
from egnlp.corpora.formats import CONLLU, CONLLX, FORMAT_NAMES, TEXT, parse_as
from egnlp.inputs import Piece


class Done(NamedTuple):
    """What one piece gave: its sentences and tokens, the output text, and the input bytes it covered."""

    sentences: int
    tokens: int
    text: str
    nbytes: int = 0


def check_confidence(confidence: bool, fmt: str | None = None, *, target: str = "conll", chunker: bool = False,
                     dask: bool = False) -> None:
    """Nothing, unless ``--confidence`` (``confidence``) is asked of an output that has no MISC column:
    the probabilities go to CoNLL-U's MISC, and CoNLL-X's column 10 is PDEPREL.  So the output must be
    CoNLL (``target``), from CoNLL-U or raw text input (``fmt``; CoNLL-X and Malt-TAB input give CoNLL-X),
    not a chunker's (an 11th column); and not computed on Dask (``dask``).

    Raises:
        SettingsError: naming what does not go with ``--confidence``.
    """
    if not confidence:
        return
    where = "--confidence writes each word's probability to the MISC column of CoNLL-U output"
    if dask:
        raise SettingsError("--confidence is not available with --dask; use --jobs")
    if target != "conll":
        raise SettingsError(f"{where}; --to {target} has no MISC column (use --to conll)")
    if chunker:
        raise SettingsError(f"{where}; a chunker writes CoNLL-2000 or an 11th column, and no MISC")
    if fmt is not None and fmt not in (CONLLU, TEXT):
        raise SettingsError(f"{where}; {FORMAT_NAMES[fmt]} input is written as {FORMAT_NAMES[CONLLX]}, whose "
                            "column 10 is PDEPREL: convert the input to CoNLL-U")


def parse_piece(job: tuple[Any, str, str, bool, int], piece: Piece) -> Done:
    """The CoNLL text of a piece of a file parsed by ``job`` = (parser, file name, format, confidence, jobs):
    with ``confidence``, each word's head probability in MISC (:meth:`~egnlp.parser.Parser.parse_corpus`)."""
    parser, name, fmt, confidence, jobs = job
    sentences = parse_as(piece.text, name, fmt, require_heads=False, first_line=piece.first_line)
    if confidence:
        text = format_conll(parser.parse_corpus(sentences, jobs=jobs, confidence=True))
    else:
        heads, labels = parser.predict(sentences, jobs=jobs)  # written as parse_corpus's copies would be
        text = format_parsed(sentences, heads, labels)
    return Done(len(sentences), sum(len(s) for s in sentences), text, piece.nbytes)


def tag_piece(job: tuple[Any, Any, str, str, str, bool, int], piece: Piece) -> Done:
    """The text of a piece of a corpus file tagged by ``job`` = (tagger, POS tagger or None, file name,
    format, output format: ``conll``, ``conll2000`` or ``text``, confidence, jobs): with ``confidence``,
    each word's label probability in MISC (:meth:`~egnlp.tagger.Tagger.tag_corpus`)."""
    from egnlp.corpora.tagging import check_tags, format_conll2000, slash_text

    tagger, pos_model, name, fmt, target, confidence, jobs = job
    sentences = parse_as(piece.text, name, fmt, require_heads=False, first_line=piece.first_line)
    if tagger.use_pos and pos_model is None:
        column = tagger.input_column
        check_tags(sentences, column, f"this tagger reads the {'UPOS' if column == 'upos' else 'POS'} column "
                   "(or give --pos-tagger MODEL)")
    if pos_model is not None:
        sentences = pos_model.tag_corpus(sentences, jobs=jobs)
    tagged = tagger.tag_corpus(sentences, jobs=jobs, confidence=confidence)
    text = (format_conll(tagged) if target == "conll" else format_conll2000(tagged) if target == "conll2000"
            else slash_text(tagged, tagger.column))
    return Done(len(tagged), sum(len(s) for s in tagged), text, piece.nbytes)


def run_pieces(fn, job: tuple, pieces: Iterator[Piece], jobs: int | None) -> Iterator[Done]:
    """``fn(job + (inner jobs,), piece)`` of every piece in order: with several pieces, the pieces on
    ``jobs`` processes (the kernels loaded here first, on the first sentence, so that the workers
    inherit them); with one, its sentences in blocks on ``jobs`` processes."""
    head = list(itertools.islice(pieces, 2))
    if len(head) < 2:
        for piece in head:
            yield fn((*job, jobs), piece)
        return
    if resolve_jobs(jobs) == 1:
        for piece in itertools.chain(head, pieces):
            yield fn((*job, 1), piece)
        return
    first = head[0]
    end = first.text.find("\n\n")
    fn((*job, 1), Piece(first.text[:end + 2] if end >= 0 else first.text, first.first_line))  # warm-up
    yield from map_pieces(fn, (*job, 1), itertools.chain(head, pieces), jobs)
