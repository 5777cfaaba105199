"""Readers for the POS-tagging and chunking corpora of NLTK's data packages.

Each reader turns one file into :class:`Sentence` objects in CoNLL-X shape:
ID, FORM, LEMMA ``_``, CPOSTAG and POSTAG both the tag, FEATS, HEAD, DEPREL,
PHEAD and PDEPREL ``_`` (no trees, so ``Sentence.heads`` is None), plus an
11th column with the chunk tag for CoNLL-2000. Writing them with
:func:`~egnlp.corpora.conll.write_conll` gives files that
``read_conll(path, require_heads=False)`` reads back.

Every malformed line raises :class:`~egnlp.base.errors.CorpusError` naming the
file and the 1-based line.

The sentences and trees of a file are found by the block readers of NLTK's
corpus readers (``read_blankline_block`` of ``TaggedCorpusReader`` and
``ConllCorpusReader``, ``read_sexpr_block`` of ``BracketParseCorpusReader``)
and a Brown token is split by NLTK's ``str2tuple``; egnlp counts the lines
(those readers know none) and checks every token. NLTK's reader methods
themselves (``tagged_sents``, ``iob_sents``) are not used: they name no file
or line, read a Brown token without ``/`` as a word tagged None, and the
treebank reader skips text before the first tree and normalises leaves.
``python benchmarks/readers.py`` compares these readers with the hand-written
line loops they replaced and with NLTK's reader methods. NLTK is imported
when a file is read, not with this module.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator, Sequence

from egnlp.base.errors import CorpusError
from .morphology import MORPH_SEP, canonical_feats
from .sentence import BLANK, Sentence

# Brown tag modifiers dropped by strip_brown_tag: foreign word, title, headline, cited word.
BROWN_PREFIX = "FW-"
BROWN_MODIFIERS = ("-TL", "-HL", "-NC", "-FW")
# The tag NLTK's treebank gives to traces and other empty elements.
TRACE_TAG = "-NONE-"
CONLL2000_COLUMNS = 3  # word, POS, chunk (IOB)

_BRACKET_TOKEN = re.compile(r"\(|\)|[^\s()]+")
# Whitespace to str.split() and to re (egnlp's tokens) but not to the regex module of NLTK's readers.
_NOT_NLTK_SPACE = str.maketrans("\x1c\x1d\x1e\x1f", "    ")


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
    # Through the pieces of NLTK's TaggedCorpusReader (paragraphs by read_blankline_block, one sentence per
    # line, tokens by str2tuple): the hand-written loop over the lines it replaced was only 1.17 times as
    # fast on the 500 Brown files (benchmarks/readers.py, CPU seconds: 2.76 against 3.23).
    from nltk.tag.util import str2tuple

    sentences = []
    for first, lines in _line_blocks(text):
        for number, line in enumerate(lines, start=first):
            rows = []
            for token in line.split():
                form, tag = str2tuple(token)
                if not tag or not form:  # tag None: no '/'
                    raise CorpusError(f"{source}:{number}: token '{token}' is not word/tag")
                rows.append(tagged_row(len(rows) + 1, form, strip_brown_tag(tag)))
            sentences.append(Sentence(rows=tuple(rows), source=source, line=number))
    if not sentences:
        raise CorpusError(f"{source}: no sentences found")
    return sentences


def parse_conll2000(text: str, source: str) -> list[Sentence]:
    """Parse CoNLL-2000 text: ``word POS chunk`` lines, a blank line after each sentence.

    The chunk tag (IOB2, e.g. ``B-NP``, ``I-NP``, ``O``) becomes the 11th column.
    """
    # Sentences by read_blankline_block, the block reader of NLTK's ConllCorpusReader: the hand-written
    # loop over the lines it replaced was only 1.16 times as fast on train.txt and test.txt
    # (benchmarks/readers.py, CPU seconds: 0.31 against 0.36).
    sentences = []
    for first, lines in _line_blocks(text):
        rows: list[tuple[str, ...]] = []
        for number, line in enumerate(lines, start=first):
            columns = line.split()
            if len(columns) != CONLL2000_COLUMNS:
                raise CorpusError(
                    f"{source}:{number}: expected {CONLL2000_COLUMNS} space-separated columns "
                    f"(word, POS, chunk), found {len(columns)}"
                )
            form, tag, chunk = columns
            rows.append(tagged_row(len(rows) + 1, form, tag, chunk))
        sentences.append(Sentence(rows=tuple(rows), source=source, line=first))
    if not sentences:
        raise CorpusError(f"{source}: no sentences found")
    return sentences


def slash_text(sentences: Iterable[Sentence], column: str = "pos") -> str:
    """One line per sentence of space-separated ``word/TAG`` tokens (``word/POS/CHUNK`` for ``column`` chunk,
    the UPOS column for ``upos``)."""
    if column == "chunk":
        lines = (" ".join(f"{w}/{p}/{c}" for w, p, c in zip(s.forms, s.pos, s.chunks)) for s in sentences)
    else:
        lines = (" ".join(f"{w}/{t}" for w, t in zip(s.forms, s.labels(column))) for s in sentences)
    return "".join(line + "\n" for line in lines)


def format_conll2000(sentences: Iterable[Sentence]) -> str:
    """The sentences as CoNLL-2000 text: ``word POS chunk`` per token, a blank line after each sentence.

    Raises:
        CorpusError: a sentence without a chunk column, or a field holding whitespace (the format
            separates its columns by spaces).
    """
    out = []
    for number, sentence in enumerate(sentences, start=1):
        chunks = sentence.chunks
        if chunks is None:
            raise CorpusError(f"sentence {number} has no chunk tags; CoNLL-2000 is word, POS tag and chunk tag "
                              "(write CoNLL instead)")
        for form, tag, chunk in zip(sentence.forms, sentence.pos, chunks):
            if any(char.isspace() for char in form + tag + chunk):
                raise CorpusError(f"sentence {number}: token {form!r} (tags {tag!r}, {chunk!r}) holds whitespace, "
                                  "which CoNLL-2000 cannot write (write CoNLL instead)")
            out.append(f"{form} {tag} {chunk}\n")
        out.append("\n")
    return "".join(out)


def parse_treebank_tags(text: str, source: str) -> list[Sentence]:
    """Parse Penn Treebank bracketed trees (``.mrg``) into their tagged words.

    A leaf is ``(TAG word)``; each top-level bracket is one sentence. Trace
    tokens (tag ``-NONE-``) are dropped, which leaves exactly the tokens of the
    matching Malt-TAB dependency files.
    """
    # Trees by read_sexpr_block, the block reader of NLTK's BracketParseCorpusReader (detect_blocks="sexpr"):
    # the hand-written bracket counting it replaced was only 1.30 times as fast on wsj_0001-0199.mrg
    # (benchmarks/readers.py, CPU seconds: 1.19 against 1.55). Leaves are read here, not by the reader's
    # TAGWORD pattern, which needs exactly one space in "(TAG word)".
    from nltk.corpus.reader.util import read_sexpr_block

    plain = text.translate(_NOT_NLTK_SPACE)  # same length: offsets and lines stay
    stream = io.StringIO(plain)
    sentences = []
    line, counted, cursor = 1, 0, 0
    while trees := read_sexpr_block(stream):
        for tree in trees:  # a complete tree, text that is not one, or an unclosed tree at the end
            offset = plain.find(tree, cursor)
            cursor = offset + len(tree)
            line += plain.count("\n", counted, offset)
            counted = offset
            tokens = _BRACKET_TOKEN.findall(tree)
            if tokens[0] != "(":
                raise CorpusError(f"{source}:{line}: expected '(' to start a tree, found '{tokens[0]}'")
            rows: list[tuple[str, ...]] = []
            depth = 0
            i = 0
            while i < len(tokens):
                window = tokens[i : i + 4]
                if _is_leaf(window):
                    tag, form = window[1], window[2]
                    if tag != TRACE_TAG:
                        rows.append(tagged_row(len(rows) + 1, form, tag))
                    i += 4
                else:
                    depth += 1 if tokens[i] == "(" else -1 if tokens[i] == ")" else 0
                    i += 1
            if depth != 0:
                raise CorpusError(f"{source}:{line}: tree is not closed")
            if not rows:
                raise CorpusError(f"{source}:{line}: tree has no words besides traces")
            sentences.append(Sentence(rows=tuple(rows), source=source, line=line))
    if not sentences:
        raise CorpusError(f"{source}: no sentences found")
    return sentences


def _is_leaf(window: list[str]) -> bool:
    """Whether four bracket tokens are a leaf ``( TAG word )``."""
    return len(window) == 4 and window[0] == "(" and window[3] == ")" and not set(window[1:3]) & {"(", ")"}


def _line_blocks(text: str) -> Iterator[tuple[int, list[str]]]:
    """(1-based line number of the first line, lines) of every run of non-blank lines, found by NLTK's
    ``read_blankline_block``; a line of whitespace only is blank, lines end at ``\\n`` only."""
    from nltk.corpus.reader.util import read_blankline_block

    stream = io.StringIO(text)  # newline="\n": no line-end translation
    line, counted = 1, 0
    while found := read_blankline_block(stream):
        block = found[0]
        offset = text.find(block, counted)  # the block's lines as they are in the text, after the last block
        line += text.count("\n", counted, offset)
        yield line, block.removesuffix("\n").split("\n")
        line += block.count("\n")
        counted = offset + len(block)


def check_tags(sentences: Sequence[Sentence], column: str, role: str) -> None:
    """Every token of every sentence has a tag in ``column`` (``pos``, ``upos`` or ``chunk``; ``_`` is no tag).

    ``feats`` takes ``_`` (no features) but every other value must be valid FEATS once sorted
    (:func:`~egnlp.corpora.morphology.canonical_feats`); ``morph`` (the joint tag UPOS#XPOS#FEATS) needs a
    UPOS without ``#`` and valid FEATS, and takes ``_`` for XPOS (a treebank without XPOS).

    Raises:
        CorpusError: naming the sentence's file and line, and ``role`` (why the tag is needed).
    """
    for number, s in enumerate(sentences, start=1):
        where = f"{s.source}:{s.line}" if s.source and s.source != "<string>" else f"sentence {number}"
        if column in ("feats", "morph"):
            _check_morphology(s, column, where, role)
            continue
        tags = s.labels(column)
        if tags is None:
            raise CorpusError(f"{where}: no chunk column (11th column); {role}")
        for k, tag in enumerate(tags):
            if tag == BLANK:
                what = {"pos": "POS tag (POSTAG / XPOS is", "upos": "UPOS tag (CPOSTAG / UPOS is"}.get(
                    column, f"{column.upper()} tag (")
                raise CorpusError(f"{where}: token {k + 1} has no {what} '_'); {role}")


def _check_morphology(s: Sentence, column: str, where: str, role: str) -> None:
    """The FEATS (and for ``morph`` the UPOS) of one sentence's tokens, as :func:`check_tags` says."""
    for k, (upos, feats) in enumerate(zip(s.cpos, s.feats)):
        try:
            canonical_feats(feats)
        except ValueError as exc:
            raise CorpusError(f"{where}: token {k + 1}: {exc}; {role}") from None
        if column == "morph" and (upos == BLANK or MORPH_SEP in upos):
            raise CorpusError(f"{where}: token {k + 1} has UPOS {upos!r}: a joint tag needs a UPOS tag without "
                              f"{MORPH_SEP!r}; {role}")
