"""Which format a corpus file is in, told from its content, and reading it in that format.

The formats, by the names the command line's ``--format`` takes:

=========  ==================================================================
conllu     CoNLL-U: ten tab-separated columns; comments, multiword tokens
           (``1-2``) and empty nodes (``8.1``)
conllx     CoNLL-X: ten tab-separated columns (an 11th: egnlp's chunk column)
malt       Malt-TAB: word, tag, head, tab-separated (NLTK's ``dependency_treebank``)
conll2000  CoNLL-2000: word, POS tag, chunk tag, space-separated
text       plain text
=========  ==================================================================

:func:`detect_format` reads the first word line (the first non-blank line
that is not a ``#`` comment): ten or eleven tab-separated fields beginning
with an ID, or any other tab-separated line beginning with an ID (a broken
CoNLL line, left to the reader to name), is CoNLL; three tab-separated fields
ending in an integer are Malt-TAB; lines of three space-separated fields
ending in a chunk tag (``O``, ``B-NP``, ...) are CoNLL-2000; anything else is
plain text.

CoNLL-U and CoNLL-X share their ten columns, and egnlp reads both with one
reader; they differ in what they allow (a CoNLL-X LEMMA may begin or end
with a space, as four lemmas of the CoNLL 2007 Spanish data do) and in their
name. :func:`conll_dialect` tells them apart by content, the file name
counting only when the content says nothing: CoNLL-U's own lines (``#
sent_id``/``# text`` comments, multiword tokens, empty nodes, DEPS
``head:relation``) make CoNLL-U; a PHEAD number in column 9, an 11th column,
a LEMMA with an edge space or FEATS that are not ``Name=Value`` pairs make
CoNLL-X; UD features or ``Name=Value`` in MISC then make CoNLL-U. A CoNLL-X
file named ``pred.conllu`` is therefore read as CoNLL-X.

:func:`parse_corpus` reads text in a format given or detected; a format
given that the content plainly does not fit (a CoNLL-U file read as
Malt-TAB, a CoNLL-X PHEAD read as CoNLL-U DEPS) is a one-line
:class:`~egnlp.base.errors.CorpusError` naming the file and line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .conll import parse_conll, show_value
from egnlp.base.errors import CorpusError
from egnlp.base.files import decode, read_bytes
from .malt import parse_malt_tab
from .sentence import N_CHUNK_COLUMNS, Sentence

CONLLU, CONLLX, MALT, CONLL2000, TEXT = "conllu", "conllx", "malt", "conll2000", "text"
FORMATS = (CONLLU, CONLLX, MALT, CONLL2000, TEXT)
CONLL = "conll"  # CoNLL-X or CoNLL-U, whichever the content is (see conll_dialect)
FORMAT_NAMES = {CONLLU: "CoNLL-U", CONLLX: "CoNLL-X", CONLL: "CoNLL-X/CoNLL-U", MALT: "Malt-TAB",
                CONLL2000: "CoNLL-2000 (word POS chunk)", TEXT: "plain text"}
SAMPLE_LINES = 5000  # the non-blank lines detection looks at

_ID = re.compile(r"[0-9]+(?:[-.][0-9]+)?")
_HEAD = re.compile(r"[0-9]+")
_CHUNK = re.compile(r"O|[BIES]-\S+")
_DEPS = re.compile(r"[0-9]+(?:\.[0-9]+)?:\S")
_FEATURE = r"[A-Z0-9][A-Za-z0-9]*(?:\[[a-z0-9]+\])?=[A-Za-z0-9][A-Za-z0-9_]*(?:,[A-Za-z0-9][A-Za-z0-9_]*)*"
_UD_FEATS = re.compile(rf"{_FEATURE}(?:\|{_FEATURE})*")
_UD_COMMENT = re.compile(r"#\s*(?:sent_id|text|newdoc|newpar|global\.columns)\b")


@dataclass(frozen=True)
class Evidence:
    """What the sampled lines of a CoNLL file say about its dialect: the first line (1-based) of each
    kind of sign, or 0 where there is none."""

    conllu_lines: int = 0  # a CoNLL-U comment, multiword token, empty node or DEPS head:relation
    conllu_what: str = ""
    conllu_words: int = 0  # a multiword token, empty node or DEPS head:relation (no comment)
    conllu_words_what: str = ""
    conllx_lines: int = 0  # a PHEAD number, an 11th column, a LEMMA edge space
    conllx_what: str = ""
    ud_feats: int = 0  # word lines whose FEATS are Name=Value pairs, or whose MISC holds one
    other_feats: int = 0  # word lines whose FEATS are something else


def _sample(text: str, count: int = SAMPLE_LINES) -> list[tuple[int, str]]:
    """(1-based line number, line) of the first ``count`` non-blank lines, without reading the rest."""
    out: list[tuple[int, str]] = []
    start, number = 0, 0
    end_of_text = len(text)
    while len(out) < count and start < end_of_text:
        end = text.find("\n", start)
        if end < 0:
            end = end_of_text
        number += 1
        line = text[start:end].removesuffix("\r")
        if number == 1:
            line = line.removeprefix("\ufeff")
        if line.strip():
            out.append((number, line))
        start = end + 1
    return out


def conll_evidence(lines: Sequence[tuple[int, str]]) -> Evidence:
    """Signs of CoNLL-U and of CoNLL-X among numbered CoNLL lines (see the module docstring)."""
    u_line = x_line = w_line = ud = other = 0
    u_what = x_what = w_what = ""
    for number, line in lines:
        if line.startswith("#"):
            if not u_line and _UD_COMMENT.match(line):
                u_line, u_what = number, f"comment {show_value(line)}"
            continue
        fields = line.split("\t")
        if len(fields) < 10:
            continue  # a broken line: the reader names it
        ident = fields[0]
        if ("-" in ident or "." in ident) and _ID.fullmatch(ident):
            if not w_line:
                kind = "multiword token" if "-" in ident else "empty node"
                w_line, w_what = number, f"{kind} {ident}"
            continue
        if not w_line and _DEPS.match(fields[8]):
            w_line, w_what = number, f"DEPS {show_value(fields[8])}"
        if not x_line:
            if len(fields) == N_CHUNK_COLUMNS:
                x_line, x_what = number, "an 11th column"
            elif _HEAD.fullmatch(fields[8]):
                x_line, x_what = number, f"PHEAD {show_value(fields[8])} in column 9"
            elif fields[2] != fields[2].strip():
                x_line, x_what = number, f"LEMMA {show_value(fields[2])} with a space at its edge"
        if fields[5] != "_":
            if _UD_FEATS.fullmatch(fields[5]):
                ud += 1
            else:
                other += 1
        elif "=" in fields[9]:
            ud += 1
    if w_line and (not u_line or w_line < u_line):
        u_line, u_what = w_line, w_what
    return Evidence(u_line, u_what, w_line, w_what, x_line, x_what, ud, other)


def conll_dialect(lines: Sequence[tuple[int, str]], source: str = "<string>") -> str:
    """``conllu`` or ``conllx`` for numbered CoNLL lines (see the module docstring); the name ``source``
    decides only when the content has no sign of either."""
    evidence = conll_evidence(lines)
    if evidence.conllu_lines:
        return CONLLU
    if evidence.conllx_lines or evidence.other_feats > evidence.ud_feats:
        return CONLLX
    if evidence.ud_feats:
        return CONLLU
    return CONLLU if source.endswith(".conllu") else CONLLX


def detect_format(text: str, source: str = "<string>") -> str:
    """The format of ``text`` (one of :data:`FORMATS`): see the module docstring.

    Blank text is ``text``: it holds no sentence in any format.
    """
    lines = _sample(text)
    words = [line for _, line in lines if not line.startswith("#")]
    if not words:
        return CONLLU if lines else TEXT  # comments only: CoNLL-U's
    fields = words[0].split("\t")
    if len(fields) == 3 and _HEAD.fullmatch(fields[2]):
        return MALT
    if len(fields) > 1 and _ID.fullmatch(fields[0]):
        return conll_dialect(lines, source)
    if len(fields) == 1:
        columns = [line.split() for line in words[:200]]
        fit = sum(len(c) == 3 and _CHUNK.fullmatch(c[2]) is not None for c in columns)
        if fit >= 0.9 * len(columns) and len(columns[0]) == 3:
            return CONLL2000
    return TEXT


def _first_word_line(lines: Sequence[tuple[int, str]]) -> tuple[int, str]:
    return next(((n, line) for n, line in lines if not line.startswith("#")), lines[0])


def check_format(text: str, source: str, fmt: str) -> str:
    """The format to read ``text`` in when ``fmt`` is asked for: ``fmt`` itself, or the CoNLL dialect
    for ``conll``.

    Raises:
        CorpusError: the content plainly is another format (one line naming ``source``, the line
            and what was found there).
    """
    if fmt not in FORMATS and fmt != CONLL:
        raise ValueError(f"unknown format '{fmt}'; formats: {', '.join(FORMATS)}")
    lines = _sample(text)
    if fmt == TEXT or not lines:
        return CONLLX if fmt == CONLL else fmt  # blank: the reader says there is no sentence
    detected = detect_format(text, source)
    number, line = _first_word_line(lines)
    asked = FORMAT_NAMES[fmt]
    if fmt in (CONLL, CONLLU, CONLLX):
        if detected not in (CONLLU, CONLLX):
            raise _mismatch(source, number, asked, f"{_columns(line)}, a word line has 10", detected)
        if fmt == CONLL:
            return detected
        evidence = conll_evidence(lines)
        if fmt == CONLLU and evidence.conllx_lines and "PHEAD" in evidence.conllx_what:
            raise _mismatch(source, evidence.conllx_lines, asked,
                            f"{evidence.conllx_what}, where CoNLL-U has DEPS (head:relation pairs)", CONLLX)
        if fmt == CONLLX and evidence.conllu_words:
            raise _mismatch(source, evidence.conllu_words, asked, evidence.conllu_words_what, CONLLU)
        return fmt
    if detected != fmt:
        expected = "word, tag and head, tab-separated" if fmt == MALT else "word, POS tag and chunk tag"
        raise _mismatch(source, number, asked, f"{_columns(line)}, expected {expected}", detected)
    return fmt


def _columns(line: str) -> str:
    tabs = line.count("\t") + 1
    if tabs > 1:
        return f"{tabs} tab-separated columns"
    return f"{len(line.split())} space-separated columns"


def _mismatch(source: str, number: int, asked: str, found: str, detected: str) -> CorpusError:
    return CorpusError(f"{source}:{number}: not {asked}: {found}; the content looks like "
                       f"{FORMAT_NAMES[detected]} (--format {detected}, or leave --format out to detect it)")


def parse_corpus(text: str, source: str = "<string>", fmt: str | None = None, *, require_heads: bool = True,
                 invalid: list[str] | None = None, first_line: int = 1) -> tuple[str, list[Sentence]]:
    """(format, sentences) of text in format ``fmt`` (None: detected; ``conll``: CoNLL-X or CoNLL-U by
    content) other than plain text.  ``first_line``: the number of the text's first line in
    ``source`` (CoNLL and Malt-TAB text read in pieces).

    ``require_heads`` and ``invalid`` are those of :func:`~egnlp.corpora.conll.read_conll` (Malt-TAB
    always has heads, CoNLL-2000 never).

    Raises:
        CorpusError: the content does not fit ``fmt``, is plain text, or does not parse (each naming
            ``source`` and, where there is one, the line).
    """
    text = text.removeprefix("\ufeff")
    chosen = detect_format(text, source) if fmt is None else check_format(text, source, fmt)
    if chosen == TEXT:
        if not text.strip():
            raise CorpusError(f"{source}: no sentences found")
        raise CorpusError(f"{source}: plain text, not a corpus file (CoNLL-U, CoNLL-X, Malt-TAB or CoNLL-2000)")
    return chosen, parse_as(text, source, chosen, require_heads=require_heads, invalid=invalid, first_line=first_line)


def parse_as(text: str, source: str, fmt: str, *, require_heads: bool = True, invalid: list[str] | None = None,
             first_line: int = 1) -> list[Sentence]:
    """The sentences of text in ``fmt`` (CoNLL-U, CoNLL-X, Malt-TAB or CoNLL-2000, already told or
    checked: :func:`parse_corpus` without the check); arguments as for :func:`parse_corpus`."""
    if fmt == MALT:
        return parse_malt_tab(text, source, first_line)
    if fmt == CONLL2000:
        from .tagging import parse_conll2000  # loads NLTK's corpus readers: only for CoNLL-2000 files

        return parse_conll2000(text, source)
    if fmt not in (CONLLU, CONLLX):
        raise ValueError(f"parse_as reads {CONLLU}, {CONLLX}, {MALT} or {CONLL2000}, not '{fmt}'")
    return parse_conll(text, source, require_heads=require_heads, invalid=invalid, conllu=fmt == CONLLU,
                       first_line=first_line)


def read_corpus(path: str | os.PathLike[str], fmt: str | None = None, *, encoding: str = "utf-8",
                require_heads: bool = True, invalid: list[str] | None = None) -> tuple[str, list[Sentence]]:
    """(format, sentences) of a corpus file: :func:`parse_corpus` of its decoded text."""
    source = os.fspath(path)
    return parse_corpus(decode(read_bytes(source), source, encoding), source, fmt, require_heads=require_heads,
                        invalid=invalid)
