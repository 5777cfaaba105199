"""Readers for the POS-tagging and chunking corpora of NLTK's data packages.

Each reader turns one file into :class:`Sentence` objects in CoNLL-X shape:
ID, FORM, LEMMA ``_``, CPOSTAG and POSTAG both the tag, FEATS, HEAD, DEPREL,
PHEAD and PDEPREL ``_`` (no trees, so ``Sentence.heads`` is None), plus an
11th column with the chunk tag for CoNLL-2000. Writing them with
:func:`~egnlp.corpora.conll.write_conll` gives files that
``read_conll(path, require_heads=False)`` reads back.

Every malformed line raises :class:`~egnlp.corpora.errors.CorpusError` naming the
file and the 1-based line.
"""

from __future__ import annotations

import re

from .errors import CorpusError
from .sentence import BLANK, Sentence

# Brown tag modifiers dropped by strip_brown_tag: foreign word, title, headline, cited word.
BROWN_PREFIX = "FW-"
BROWN_MODIFIERS = ("-TL", "-HL", "-NC", "-FW")
# The tag NLTK's treebank gives to traces and other empty elements.
TRACE_TAG = "-NONE-"
CONLL2000_COLUMNS = 3  # word, POS, chunk (IOB)

_BRACKET_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def strip_brown_tag(tag: str) -> str:
    """Return a Brown tag without a leading ``FW-`` and without any ``-TL``, ``-HL``, ``-NC``, ``-FW``.

    This is the usual reduction of Brown's ~472 tags to 190 (e.g. ``NN-TL`` ->
    ``NN``, ``FW-IN+AT`` -> ``IN+AT``); the modifiers mark titles, headlines,
    citations and foreign words rather than word classes.
    """
    tag = tag.removeprefix(BROWN_PREFIX)
    for modifier in BROWN_MODIFIERS:
        tag = tag.replace(modifier, "")
    return tag


def tagged_row(index: int, form: str, tag: str, *extra: str) -> tuple[str, ...]:
    """One CoNLL-X row for token ``index`` (1-based) with the tag in CPOSTAG and POSTAG."""
    return (str(index), form, BLANK, tag, tag, BLANK, BLANK, BLANK, BLANK, BLANK, *extra)


def parse_brown(text: str, source: str) -> list[Sentence]:
    """Parse one Brown corpus file: a sentence per line of ``word/tag`` tokens.

    Tags are upper-cased (as NLTK gives them) and reduced by
    :func:`strip_brown_tag`. The tag is what follows the last ``/``, so forms
    such as ``1/2`` keep their slash.
    """
    sentences = []
    for number, line in enumerate(text.split("\n"), start=1):
        tokens = line.split()
        if not tokens:
            continue
        rows = []
        for token in tokens:
            form, slash, tag = token.rpartition("/")
            if not slash or not form or not tag:
                raise CorpusError(f"{source}:{number}: token '{token}' is not word/tag")
            rows.append(tagged_row(len(rows) + 1, form, strip_brown_tag(tag.upper())))
        sentences.append(Sentence(rows=tuple(rows), source=source, line=number))
    if not sentences:
        raise CorpusError(f"{source}: no sentences found")
    return sentences


def parse_conll2000(text: str, source: str) -> list[Sentence]:
    """Parse CoNLL-2000 text: ``word POS chunk`` lines, a blank line after each sentence.

    The chunk tag (IOB2, e.g. ``B-NP``, ``I-NP``, ``O``) becomes the 11th column.
    """
    sentences = []
    rows: list[tuple[str, ...]] = []
    first = 0
    for number, line in enumerate(text.split("\n"), start=1):
        columns = line.split()
        if not columns:
            if rows:
                sentences.append(Sentence(rows=tuple(rows), source=source, line=first))
                rows = []
            continue
        if len(columns) != CONLL2000_COLUMNS:
            raise CorpusError(
                f"{source}:{number}: expected {CONLL2000_COLUMNS} space-separated columns "
                f"(word, POS, chunk), found {len(columns)}"
            )
        if not rows:
            first = number
        form, tag, chunk = columns
        rows.append(tagged_row(len(rows) + 1, form, tag, chunk))
    if rows:
        sentences.append(Sentence(rows=tuple(rows), source=source, line=first))
    if not sentences:
        raise CorpusError(f"{source}: no sentences found")
    return sentences


def parse_treebank_tags(text: str, source: str) -> list[Sentence]:
    """Parse Penn Treebank bracketed trees (``.mrg``) into their tagged words.

    A leaf is ``(TAG word)``; each top-level bracket is one sentence. Trace
    tokens (tag ``-NONE-``) are dropped, which leaves exactly the tokens of the
    matching Malt-TAB dependency files.
    """
    sentences = []
    rows: list[tuple[str, ...]] = []
    depth = 0
    first = 0
    tokens = [(match.group(), match.start()) for match in _BRACKET_TOKEN.finditer(text)]
    i = 0
    while i < len(tokens):
        token, offset = tokens[i]
        if depth == 0:
            if token != "(":
                raise CorpusError(f"{source}:{_line_of(text, offset)}: expected '(' to start a tree, found '{token}'")
            first = _line_of(text, offset)
        window = [value for value, _ in tokens[i : i + 4]]
        if _is_leaf(window):
            tag, form = window[1], window[2]
            if tag != TRACE_TAG:
                rows.append(tagged_row(len(rows) + 1, form, tag))
            i += 4
        else:
            depth += 1 if token == "(" else -1 if token == ")" else 0
            if depth < 0:
                raise CorpusError(f"{source}:{_line_of(text, offset)}: unbalanced ')'")
            i += 1
        if depth == 0:  # a tree ended (possibly a lone leaf)
            if not rows:
                raise CorpusError(f"{source}:{first}: tree has no words besides traces")
            sentences.append(Sentence(rows=tuple(rows), source=source, line=first))
            rows = []
    if depth != 0:
        raise CorpusError(f"{source}:{first}: tree is not closed")
    if not sentences:
        raise CorpusError(f"{source}: no sentences found")
    return sentences


def _is_leaf(window: list[str]) -> bool:
    """Whether four bracket tokens are a leaf ``( TAG word )``."""
    return len(window) == 4 and window[0] == "(" and window[3] == ")" and not set(window[1:3]) & {"(", ")"}


def _line_of(text: str, offset: int) -> int:
    """The 1-based line number of a character offset."""
    return text.count("\n", 0, offset) + 1
