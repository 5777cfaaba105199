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

Every problem in a file raises :class:`~egnlp.corpora.errors.CorpusError` with the
file name and the 1-based line number.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence

from conllu.exceptions import ParseException
from conllu.parser import parse_id_value, parse_int_value

from .errors import CorpusError, InvalidTreeError
from .files import decode, read_bytes, write_text_atomic
from .sentence import BLANK, FORM, HEAD, ID, N_CHUNK_COLUMNS, N_COLUMNS, Sentence, find_cycle

# A block is one sentence's lines as (1-based line number, text) pairs.
Block = list[tuple[int, str]]


def read_conll(
    path: str | os.PathLike[str], *, encoding: str = "utf-8", require_heads: bool = True,
    invalid: list[str] | None = None,
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

    Raises:
        CorpusError: the file is missing, does not decode, is malformed or
            holds no sentence; :class:`InvalidTreeError` for a sentence whose
            heads do not form a tree (unless ``invalid`` is given).
    """
    source = os.fspath(path)
    data = read_bytes(source)
    return parse_conll(decode(data, source, encoding), source, require_heads=require_heads, invalid=invalid)


def parse_conll(text: str, source: str = "<string>", *, require_heads: bool = True,
                invalid: list[str] | None = None) -> list[Sentence]:
    """Parse CoNLL-X / CoNLL-U text; ``source`` names it in messages.

    See :func:`read_conll` for ``require_heads``, ``invalid`` and the errors raised.
    """
    text = text.removeprefix("\ufeff")
    width = _Width(source)
    sentences = []
    for block in split_blocks(text):
        try:
            sentences.append(_parse_block(block, source, require_heads, width))
        except InvalidTreeError as error:
            if invalid is None:
                raise
            invalid.append(str(error))
    if not sentences:
        raise CorpusError(f"{source}: no sentences found" + (" with a valid tree" if invalid else ""))
    return sentences


def format_conll(sentences: Iterable[Sentence]) -> str:
    """Return the sentences as CoNLL text: their lines, then one blank line each."""
    return "".join("\n".join(sentence.lines()) + "\n\n" for sentence in sentences)


def write_conll(path: str | os.PathLike[str], sentences: Iterable[Sentence], *, encoding: str = "utf-8") -> None:
    """Write sentences to ``path`` atomically (see :func:`write_text_atomic`).

    Raises:
        CorpusError: the text cannot be encoded or the file cannot be written.
    """
    write_text_atomic(path, format_conll(sentences), encoding=encoding)


def split_blocks(text: str) -> Iterator[Block]:
    """Yield the non-blank lines of each blank-line-separated block with their line numbers.

    Lines holding only whitespace count as blank; a trailing CR is dropped.
    """
    block: Block = []
    for number, line in enumerate(text.split("\n"), start=1):
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
) -> None:
    """Check that a sentence's HEAD column forms a tree rooted at 0.

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
        return
    if any(blank):
        first = blank.index(True)
        raise InvalidTreeError(f"{source}:{lines[first]}: HEAD is '_' while other tokens of the sentence have heads")
    n = len(head_column)
    heads = []
    for i, value in enumerate(head_column):
        try:
            head = parse_int_value(value)
        except ParseException:
            raise InvalidTreeError(f"{source}:{lines[i]}: HEAD '{value}' is not an integer") from None
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


def _parse_block(block: Block, source: str, require_heads: bool, width: _Width) -> Sentence:
    """Build one Sentence from a block of CoNLL lines, validating it."""
    rows: list[tuple[str, ...]] = []
    row_lines: list[int] = []
    aside: list[tuple[int, str]] = []
    seen_token = False
    for number, line in block:
        where = f"{source}:{number}"
        if line.startswith("#"):
            if seen_token:
                raise CorpusError(f"{where}: comment inside a sentence; comments must come before its tokens")
            aside.append((0, line))
            continue
        seen_token = True
        columns = tuple(line.split("\t"))
        width.check(len(columns), number)
        try:
            token_id = parse_id_value(columns[ID])
        except ParseException:
            token_id = None
        if isinstance(token_id, tuple):
            _check_aside_id(token_id, len(rows), where, columns[ID])
            aside.append((len(rows), line))
            continue
        if token_id is None:
            raise CorpusError(f"{where}: ID '{columns[ID]}' is not an integer")
        if token_id != len(rows) + 1:
            raise CorpusError(f"{where}: expected ID {len(rows) + 1}, found {token_id}")
        rows.append(columns)
        row_lines.append(number)
    first_line = block[0][0]
    if not rows:
        raise CorpusError(f"{source}:{first_line}: sentence has no word tokens")
    check_heads(
        [row[HEAD] for row in rows], [row[FORM] for row in rows], row_lines, source, require_heads=require_heads
    )
    return Sentence(rows=tuple(rows), aside=tuple(aside), source=source, line=first_line)


def _check_aside_id(token_id: tuple[int, str, int], words_before: int, where: str, text: str) -> None:
    """Check that a multiword range starts at the next word and an empty node follows its word."""
    first, separator, _ = token_id
    if separator == "-" and first != words_before + 1:
        raise CorpusError(f"{where}: multiword token {text} must come just before word {first}")
    if separator == "." and first != words_before:
        raise CorpusError(f"{where}: empty node {text} must come just after word {first}")
