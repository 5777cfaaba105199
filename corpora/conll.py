"""Read and write CoNLL-X and CoNLL-U dependency files.

Both formats have ten tab-separated columns per word line and a blank line
after each sentence, so one reader accepts both. Chunking files add an 11th
column, the chunk tag; a file's word lines must all have ten columns or all
eleven (a mix is an error, since it is almost always a broken file).
Comment lines (``#...``) may precede a sentence's tokens; CoNLL-U
multiword-token lines (``1-2``) and empty nodes (``8.1``) are kept aside and
written back in place. Reading and then writing a file reproduces it byte
for byte, except that runs of blank lines become one blank line, a missing
final blank line is added, CRLF line ends become LF and a leading byte-order
mark is dropped.

Every problem in a file raises :class:`~egnlp.base.errors.CorpusError` with the
file name and the 1-based line number.

What the CoNLL-U format (https://universaldependencies.org/format.html)
forbids is refused in both formats, so that writing a sentence the reader
accepted and reading it again gives it back unchanged:

- an empty field (``_`` stands for no value);
- a control character in a field or comment: the C0 controls other than
  TAB (a CR left inside a line is one), DEL, NEL (U+0085), the line and
  paragraph separators U+2028 and U+2029, and lone surrogates. The other C1
  controls (U+0080-U+009F) are kept: decoding Windows-1252 bytes as latin-1
  gives them, as in the CoNLL 2007 Basque data;
- whitespace other than single spaces inside FORM, LEMMA and column 10
  (CoNLL-U MISC), and any field that begins or ends with whitespace. In
  CoNLL-X, LEMMA may begin or end with a space, as four lemmas of the CoNLL
  2007 Spanish data do (a file is CoNLL-U when the caller says so, or else
  when its name ends in ``.conllu``; :mod:`egnlp.corpora.formats` tells the
  two apart by content);
- multiword tokens (``1-2``) that do not come just before their first word,
  overlap or repeat an earlier range, run past the last word, hold a space
  in FORM or LEMMA, or have a HEAD, DEPREL or DEPS other than ``_``;
- empty nodes (``8.1``) that do not follow their word, are not numbered
  ``8.1, 8.2, ...`` in order, come after a multiword token line, or have a
  HEAD or DEPREL other than ``_``;
- a sentence of more than :data:`~egnlp.corpora.sentence.MAX_WORDS` words.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence

from conllu.exceptions import ParseException
from conllu.parser import parse_id_value, parse_int_value

from egnlp.base.errors import CorpusError, InvalidTreeError
from egnlp.base.files import FORBIDDEN_CHARACTERS as FORBIDDEN
from egnlp.base.files import decode, read_bytes, write_text_atomic
from .sentence import (
    BLANK,
    COL9,
    COL10,
    DEPREL,
    FORM,
    HEAD,
    ID,
    LEMMA,
    MAX_WORDS,
    N_CHUNK_COLUMNS,
    N_COLUMNS,
    Sentence,
    find_cycle,
)

# A block is one sentence's lines as (1-based line number, text) pairs.
Block = list[tuple[int, str]]

# Column names in messages (CoNLL-X / CoNLL-U where they differ), and the columns that may hold spaces.
COLUMN_NAMES = ("ID", "FORM", "LEMMA", "CPOSTAG/UPOS", "POSTAG/XPOS", "FEATS", "HEAD", "DEPREL", "PHEAD/DEPS",
                "PDEPREL/MISC", "CHUNK")
SPACED_COLUMNS = frozenset((FORM, LEMMA, COL10))

# A character that makes a line need a closer look: a forbidden one, or whitespace other than TAB
# (the characters of str.isspace(), written out so that one character class does).
_SUSPECT = re.compile(r"[\x00-\x08\x0a-\x20\x7f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
                      r"\ud800-\udfff]")
_REPEATED_SPACE = re.compile(r"\s\s")


def read_conll(
    path: str | os.PathLike[str], *, encoding: str = "utf-8", require_heads: bool = True,
    invalid: list[str] | None = None, conllu: bool | None = None,
) -> list[Sentence]:
    """Read a CoNLL-X or CoNLL-U file, or one with an 11th (chunk) column.

    Args:
        path: the file; its name, as given, is used in messages and as
            ``Sentence.source``.
        encoding: the file's text encoding.
        require_heads: when False, sentences whose HEAD column is ``_`` on
            every token are accepted (text to be parsed); when True they raise.
        invalid: when a list is given, sentences whose heads do not form a
            tree are skipped, and the message of each (``file:line: reason``)
            is appended to it; otherwise they raise.
        conllu: whether the text is held to CoNLL-U's rules where they are stricter than CoNLL-X's
            (a LEMMA that begins or ends with a space); None: when the file name ends in ``.conllu``
            (:func:`egnlp.corpora.formats.read_corpus` decides by content instead).

    Raises:
        CorpusError: the file is missing, does not decode, is malformed or
            holds no sentence; :class:`InvalidTreeError` for a sentence whose
            heads do not form a tree (unless ``invalid`` is given).
    """
    source = os.fspath(path)
    data = read_bytes(source)
    return parse_conll(decode(data, source, encoding), source, require_heads=require_heads, invalid=invalid,
                       conllu=conllu)


def parse_conll(text: str, source: str = "<string>", *, require_heads: bool = True,
                invalid: list[str] | None = None, conllu: bool | None = None, first_line: int = 1) -> list[Sentence]:
    """Parse CoNLL-X / CoNLL-U text; ``source`` names it in messages, and ``first_line`` is the
    number of the text's first line there (a piece of a file read in pieces).

    See :func:`read_conll` for ``require_heads``, ``invalid``, ``conllu`` and the errors raised.
    """
    text = text.removeprefix("\ufeff")
    width = _Width(source)
    lemma_spaces = not (source.endswith(".conllu") if conllu is None else conllu)
    sentences = []
    # Hand-written, not conllu.parse_incr (only conllu's ID and HEAD parsers are used): the library strips
    # lines, splits columns at two spaces, drops columns past the tenth and comments without a value, and
    # counts no lines, so it cannot support these checks, and it is slower: on the UD files (x3, 16.9 MB)
    # parse_incr alone took 5.57 times the CPU time of this whole reader (5.44 s against 0.98 s), and with
    # these checks on the lines rebuilt from its tokens 3.29 times (benchmarks/readers.py).
    for block in split_blocks(text, first_line):
        try:
            sentences.append(_parse_block(block, source, require_heads, width, lemma_spaces))
        except InvalidTreeError as error:
            if invalid is None:
                raise
            invalid.append(str(error))
    if not sentences:
        raise CorpusError(f"{source}: no sentences found" + (" with a valid tree" if invalid else ""))
    return sentences


def format_conll(sentences: Iterable[Sentence]) -> str:
    """Return the sentences as CoNLL text: their lines, then one blank line each."""
    # The lines as read, not conllu's TokenList.serialize: 9.7 times as fast on the UD files (0.13 s against
    # 1.28 s, benchmarks/readers.py), and it writes the chunk column and every comment as it was.
    return "".join("\n".join(sentence.lines()) + "\n\n" for sentence in sentences)


def format_parsed(sentences: Sequence[Sentence], heads: Sequence[Sequence[int]],
                  deprels: Sequence[Sequence[str]] | None = None) -> str:
    """``format_conll`` of the sentences with these heads and labels (:meth:`Sentence.with_heads`), written
    straight from their rows: on 9,376 sentences 0.11 s against 0.24 s through the copies."""
    labels = deprels if deprels is not None else [None] * len(sentences)
    return "".join("\n".join(sentence.parsed_lines(h, d)) + "\n\n" for sentence, h, d in zip(sentences, heads, labels))


def write_conll(path: str | os.PathLike[str], sentences: Iterable[Sentence], *, encoding: str = "utf-8") -> None:
    """Write sentences to ``path`` atomically (see :func:`write_text_atomic`).

    Raises:
        CorpusError: the text cannot be encoded or the file cannot be written.
    """
    write_text_atomic(path, format_conll(sentences), encoding=encoding)


def split_blocks(text: str, first_line: int = 1) -> Iterator[Block]:
    """Yield the non-blank lines of each blank-line-separated block with their line numbers (the
    text's first line is number ``first_line``).

    Lines holding only whitespace count as blank; a trailing CR is dropped.
    """
    block: Block = []
    for number, line in enumerate(text.split("\n"), start=first_line):
        line = line.removesuffix("\r")
        if line.strip():
            block.append((number, line))
        elif block:
            yield block
            block = []
    if block:
        yield block


def check_heads(
    head_column: Sequence[str], forms: Sequence[str], lines: Sequence[int], source: str, *, require_heads: bool
) -> list[int] | None:
    """Check that a sentence's HEAD column forms a tree rooted at 0; return the heads as ints (None when
    every HEAD is ``_``), as :attr:`Sentence.heads` holds them.

    Args:
        head_column: the HEAD strings of the sentence's word tokens.
        forms: the tokens' forms, to name them in messages.
        lines: the tokens' 1-based line numbers in ``source``.
        require_heads: whether a HEAD column of only ``_`` is an error.

    Raises:
        CorpusError: on mixed ``_`` heads, a non-integer or out-of-range head,
            a token that is its own head, no root token, or a cycle.
    """
    blank = [value == BLANK for value in head_column]
    if all(blank):
        if require_heads:
            raise InvalidTreeError(f"{source}:{lines[0]}: HEAD is '_' on every token, but gold heads are needed")
        return None
    if any(blank):
        first = blank.index(True)
        raise InvalidTreeError(f"{source}:{lines[first]}: HEAD is '_' while other tokens of the sentence have heads")
    n = len(head_column)
    heads = []
    for i, value in enumerate(head_column):
        head = _NUMBERS.get(value)
        if head is None:
            try:
                head = parse_int_value(value)
            except ParseException:
                raise InvalidTreeError(f"{source}:{lines[i]}: HEAD {show_value(value)} is not an integer") from None
        if not 0 <= head <= n:
            raise InvalidTreeError(f"{source}:{lines[i]}: HEAD {head} is outside 0..{n}")
        if head == i + 1:
            raise InvalidTreeError(f"{source}:{lines[i]}: token {head} is its own head")
        heads.append(head)
    if 0 not in heads:
        raise InvalidTreeError(f"{source}:{lines[0]}: no token is attached to the root (HEAD 0)")
    cycle = find_cycle(heads)
    if cycle is not None:
        names = " -> ".join(f"{token} '{forms[token - 1]}'" for token in [*cycle, cycle[0]])
        raise InvalidTreeError(f"{source}:{lines[cycle[0] - 1]}: cycle among tokens {names}")
    return heads


# The plain numbers a sentence's IDs and HEADs take, 0 .. MAX_WORDS, by their text: what conllu's ID and
# integer patterns read of a plain number without leading zeros, found without a regular expression or a
# call.  Other text ("01", "1-2", "8.1", "501") goes to conllu's parsers.
_NUMBERS = {str(number): number for number in range(MAX_WORDS + 1)}


class _Width:
    """The number of columns of a file's word lines: fixed by the first one, 10 or 11."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.columns: int | None = None
        self.line = 0

    def check(self, count: int, number: int) -> None:
        """Accept ``count`` columns on line ``number`` or raise a CorpusError naming the line."""
        where = f"{self.source}:{number}"
        if count == self.columns:
            return
        if count not in (N_COLUMNS, N_CHUNK_COLUMNS):
            expected = self.columns or N_COLUMNS
            raise CorpusError(f"{where}: expected {expected} tab-separated columns, found {count}")
        if self.columns is not None:
            raise CorpusError(
                f"{where}: found {count} tab-separated columns but line {self.line} has {self.columns}; "
                f"a file's word lines must all have {N_COLUMNS} (CoNLL-X/U) or all {N_CHUNK_COLUMNS} (chunk column)"
            )
        self.columns, self.line = count, number


def too_long(where: str, first_line: int) -> CorpusError:
    """The error for the word at ``where`` that takes its sentence past :data:`MAX_WORDS` words."""
    return CorpusError(f"{where}: sentence longer than {MAX_WORDS} words (it starts on line {first_line}); "
                       f"egnlp takes at most {MAX_WORDS} words per sentence, split it")


def show_value(value: str, limit: int = 40) -> str:
    """A field's value for a message: quoted, escaped (never more than one line) and cut after ``limit`` characters."""
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _plain_fields(line: str) -> bool:
    """Whether a quick look at a line of tab-separated fields clears it of what :func:`check_fields` refuses:
    no suspect character, no empty field."""
    return not _SUSPECT.search(line) and "\t\t" not in line and line[0] != "\t" and line[-1] != "\t"


def check_fields(line: str, columns: Sequence[str], where: str, names: Sequence[str], spaced: frozenset[int],
                 edge_spaces: frozenset[int] = frozenset()) -> None:
    """Refuse an empty field, a forbidden character, or whitespace where the format has none.

    Args:
        line: a line of tab-separated fields (a quick look at it clears most lines).
        columns: its fields.
        where: ``file:line`` for messages.
        names: the name of each column, for messages.
        spaced: the columns that may hold single spaces between other characters.
        edge_spaces: the columns that may also begin or end with whitespace.

    Raises:
        CorpusError: naming the line, the column and the value.
    """
    if _plain_fields(line):
        return
    for index, value in enumerate(columns):
        name = names[index]
        if not value:
            raise CorpusError(f"{where}: empty {name} field ('_' stands for no value)")
        bad = FORBIDDEN.search(value)
        if bad is not None:
            raise CorpusError(f"{where}: control character U+{ord(bad.group()):04X} in {name} {show_value(value)}")
        if index not in spaced:
            if any(char.isspace() for char in value):
                allowed = ", ".join(names[i] for i in sorted(spaced))
                raise CorpusError(f"{where}: whitespace in {name} {show_value(value)} (only {allowed} may hold spaces)")
            continue
        if index not in edge_spaces and (value[0].isspace() or value[-1].isspace()):
            raise CorpusError(f"{where}: {name} {show_value(value)} begins or ends with whitespace")
        if _REPEATED_SPACE.search(value):
            raise CorpusError(f"{where}: two whitespace characters in a row in {name} {show_value(value)}")


def _parse_block(block: Block, source: str, require_heads: bool, width: _Width, lemma_spaces: bool) -> Sentence:
    """Build one Sentence from a block of CoNLL lines, validating it (see the module docstring)."""
    rows: list[tuple[str, ...]] = []
    row_lines: list[int] = []
    aside: list[tuple[int, str]] = []
    ranges: list[tuple[int, int, str]] = []  # (last word, line, ID) of every multiword token
    edge_spaces = frozenset((LEMMA,)) if lemma_spaces else frozenset()
    seen_token = False
    after_range = False  # the previous token line was a multiword token
    next_empty = 1  # the number of the next empty node after the current word
    first_line = block[0][0]
    for number, line in block:
        if line.startswith("#"):
            where = f"{source}:{number}"
            if seen_token:
                raise CorpusError(f"{where}: comment inside a sentence; comments must come before its tokens")
            bad = FORBIDDEN.search(line)
            if bad is not None:
                raise CorpusError(f"{where}: control character U+{ord(bad.group()):04X} in a comment")
            aside.append((0, line))
            continue
        seen_token = True
        columns = tuple(line.split("\t"))
        if len(columns) != width.columns:
            width.check(len(columns), number)
        if _SUSPECT.search(line) or "\t\t" in line or line[0] == "\t" or line[-1] == "\t":  # _plain_fields, inline
            check_fields(line, columns, f"{source}:{number}", COLUMN_NAMES, SPACED_COLUMNS, edge_spaces)
        token_id = _NUMBERS.get(columns[ID])
        if token_id == len(rows) + 1:  # the next word, as almost every line is (a 501st word goes on to too_long)
            after_range = False
            next_empty = 1
            rows.append(columns)
            row_lines.append(number)
            continue
        where = f"{source}:{number}"
        if token_id is None:
            first, dash, last = columns[ID].partition("-")
            first, last = _NUMBERS.get(first), _NUMBERS.get(last)
            if dash and first and last and first <= last:  # a plain range, as conllu's ID parser reads it
                token_id = (first, "-", last)
            else:
                try:
                    token_id = parse_id_value(columns[ID])
                except ParseException:
                    token_id = None
        if isinstance(token_id, tuple):
            first, separator, last = token_id
            if columns[ID] != f"{first}{separator}{last}":
                raise CorpusError(f"{where}: ID {show_value(columns[ID])} is not a valid ID")
            if separator == "-":
                _check_range(columns, first, last, len(rows), ranges, where)
                ranges.append((last, number, columns[ID]))
            else:
                _check_empty_node(columns, first, last, len(rows), next_empty, after_range, where)
                next_empty += 1
            after_range = separator == "-"
            aside.append((len(rows), line))
            continue
        if token_id is None:
            raise CorpusError(f"{where}: ID {show_value(columns[ID])} is not an integer")
        if token_id != len(rows) + 1:
            raise CorpusError(f"{where}: expected ID {len(rows) + 1}, found {token_id}")
        if len(rows) == MAX_WORDS:
            raise too_long(where, first_line)
        after_range = False
        next_empty = 1
        rows.append(columns)
        row_lines.append(number)
    if not rows:
        raise CorpusError(f"{source}:{first_line}: sentence has no word tokens")
    for last, number, text in ranges:
        if last > len(rows):
            raise CorpusError(f"{source}:{number}: multiword token {text} runs past the last word, {len(rows)}")
    heads = check_heads([row[HEAD] for row in rows], [row[FORM] for row in rows], row_lines, source,
                        require_heads=require_heads)
    return Sentence.checked(tuple(rows), tuple(aside), source, first_line, heads)


def _check_range(columns: Sequence[str], first: int, last: int, words_before: int,
                 ranges: Sequence[tuple[int, int, str]], where: str) -> None:
    """Check a multiword token line: just before its first word, after the end of the previous range,
    one surface token (no spaces), and no syntax of its own."""
    text = columns[ID]
    if first != words_before + 1:
        raise CorpusError(f"{where}: multiword token {text} must come just before word {first}")
    if ranges and first <= ranges[-1][0]:
        raise CorpusError(f"{where}: multiword token {text} overlaps {ranges[-1][2]} on line {ranges[-1][1]}")
    for column in (FORM, LEMMA):
        if any(char.isspace() for char in columns[column]):
            raise CorpusError(f"{where}: space in {COLUMN_NAMES[column]} of multiword token {text} "
                              "(a multiword token is one surface token)")
    for column in (HEAD, DEPREL, COL9):
        if columns[column] != BLANK:
            raise CorpusError(f"{where}: multiword token {text} has {COLUMN_NAMES[column]} "
                              f"{show_value(columns[column])}; only its words carry syntax ('_' expected)")


def _check_empty_node(columns: Sequence[str], word: int, number: int, words_before: int, expected: int,
                      after_range: bool, where: str) -> None:
    """Check an empty node line: just after its word, numbered in order, before any multiword token line
    of the next words, and without a basic-tree HEAD or DEPREL."""
    text = columns[ID]
    if word != words_before:
        raise CorpusError(f"{where}: empty node {text} must come just after word {word}")
    if number != expected:
        raise CorpusError(f"{where}: empty node {text} out of order; expected {word}.{expected}")
    if after_range:
        raise CorpusError(f"{where}: empty node {text} must come before the multiword token line above it")
    for column in (HEAD, DEPREL):
        if columns[column] != BLANK:
            raise CorpusError(f"{where}: empty node {text} has {COLUMN_NAMES[column]} "
                              f"{show_value(columns[column])}; empty nodes belong to the enhanced graph "
                              "('_' expected)")
