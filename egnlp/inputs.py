"""What the commands read: corpus files in a format given or detected, stdin for ``-``, and training sets.

Every input file of a command may be ``-``, stdin (named ``<stdin>`` in
messages). Its format is told from its content
(:func:`egnlp.corpora.formats.detect_format`) unless ``--format`` says it;
a command names the formats it reads, and a file in another one is a
one-line error naming the file.

Both the parser's and the tagger's ``train`` commands take either ``--data
NAME`` (a named data set, which brings its own dev split, or a corpus file)
or ``--train FILE [--dev FILE]``; :func:`training_sets` resolves the two
forms the same way for both.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from egnlp.base.errors import SettingsError
from egnlp.base.files import decode, open_bytes, read_bytes
from egnlp.corpora import CorpusError, Sentence, dataset_task, is_dataset, load_sentences
from egnlp.corpora.formats import CONLL2000, CONLLU, CONLLX, FORMAT_NAMES, MALT, TEXT, check_format, \
    detect_format, parse_corpus

STDIN = "-"
STDIN_NAME = "<stdin>"
TREE_FORMATS = (CONLLU, CONLLX, MALT)  # what commands reading dependency trees (or tokens to parse) take
TAGGED_FORMATS = (*TREE_FORMATS, CONLL2000)  # what commands reading tagged sentences take


@dataclass(frozen=True)
class TrainingSets:
    """Training sentences, dev sentences (None when there are none) and the data set they came from
    (None for files)."""

    train: list[Sentence]
    dev: list[Sentence] | None
    dataset: str | None


def read_text(source: str, encoding: str = "utf-8") -> tuple[str, str]:
    """(text, name for messages) of a file, or of stdin when ``source`` is ``-``."""
    if source == STDIN:
        raw = getattr(sys.stdin, "buffer", None)
        if raw is None:
            return sys.stdin.read(), STDIN_NAME
        return decode(raw.read(), STDIN_NAME, encoding), STDIN_NAME
    return decode(read_bytes(source), source, encoding), source


def read_raw_text(source: str, encoding: str = "utf-8", *, any_content: bool = False, command: str = "egnlp",
                  other: str = "'egnlp parser parse'") -> tuple[str, bool]:
    """(text, whether it is not in Unicode NFC) of a raw text file or stdin, a leading byte order mark
    dropped; unless ``any_content``, a corpus file (CoNLL, Malt-TAB, CoNLL-2000) is an error naming the
    ``other`` command that reads it."""
    import unicodedata

    text, name = read_text(source, encoding)
    text = text.removeprefix("\ufeff")
    if not any_content:
        detected = detect_format(text, name)
        if detected != TEXT:
            raise CorpusError(f"{name}: the content is {FORMAT_NAMES[detected]}, not raw text; {command} reads "
                              f"raw text, {other} reads a corpus file (or give --format text)")
    return text, not unicodedata.is_normalized("NFC", text)


def input_format(text: str, name: str, fmt: str | None, accept: tuple[str, ...], command: str) -> str:
    """The format to read ``text`` in: ``fmt`` (``conll``: the CoNLL dialect of the content) checked
    against the content, or the detected one when ``fmt`` is None.

    Raises:
        CorpusError: the content does not fit ``fmt``, or is in a format ``command`` does not read
            (blank text: no sentences).
    """
    chosen = detect_format(text, name) if fmt is None else check_format(text, name, fmt)
    if chosen in accept:
        return chosen
    if not text.strip():
        raise CorpusError(f"{name}: no sentences found")
    names = [FORMAT_NAMES[f] for f in accept]
    listed = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
    advice = " (raw text goes to 'egnlp parse-text' or 'egnlp tagger tag')" if chosen == TEXT else ""
    raise CorpusError(f"{name}: the content is {FORMAT_NAMES[chosen]}; {command} reads {listed}{advice}")


def read_sentences(source: str, fmt: str | None = None, *, accept: tuple[str, ...] = TREE_FORMATS,
                   command: str = "egnlp", encoding: str = "utf-8", require_heads: bool = True,
                   invalid: list[str] | None = None) -> tuple[str, list[Sentence]]:
    """(format, sentences) of a corpus file or stdin (``-``) in a format of ``accept``.

    Args:
        fmt: the format asked for (``--format``), or None to tell it from the content.
        accept: the formats the command reads.
        command: the command, to name in messages.
        require_heads, invalid: as for :func:`egnlp.corpora.read_conll`.

    Raises:
        CorpusError: the file cannot be read or decoded, does not fit ``fmt``, is in a format outside
            ``accept``, or does not parse.
    """
    text, name = read_text(source, encoding)
    chosen = input_format(text, name, fmt, accept, command)
    return parse_corpus(text, name, chosen, require_heads=require_heads, invalid=invalid)


def read_pair(gold: str, pred: str, fmt: str | None = None, *, accept: tuple[str, ...] = TREE_FORMATS,
              command: str = "egnlp", encoding: str = "utf-8", require_heads: bool = True
              ) -> tuple[list[Sentence], list[Sentence]]:
    """The sentences of a gold and a predicted file (one of them may be stdin), as :func:`read_sentences`."""
    if gold == pred == STDIN:
        raise SettingsError("only one of GOLD and PRED can be stdin ('-')")
    return tuple(read_sentences(path, fmt, accept=accept, command=command, encoding=encoding,  # type: ignore
                                require_heads=require_heads)[1] for path in (gold, pred))


PIECE_BYTES = 1 << 20  # a file parsed in pieces is read about this many bytes at a time
# Toward a file's end (its size known) a piece is about this share of what is left, down to 1/16 of
# PIECE_BYTES: with --jobs, the pieces still out when the last is read take about the same time, so no
# worker waits on one whole piece of another's (pt_bosque dev x 8, 15 MB on two workers, ended with 8
# pieces of 1 MB on one worker and 7 on the other).
TAIL_SHARE = 8


def piece_size(piece_bytes: int, left: int | None) -> int:
    """The bytes to read for the next piece when ``left`` bytes of the file are unread (None: unknown, as
    on a pipe)."""
    if left is None:
        return piece_bytes
    return max(piece_bytes // 16, min(piece_bytes, left // TAIL_SHARE), 1)


def _file_size(handle) -> int | None:
    try:
        info = os.fstat(handle.fileno())
    except (OSError, AttributeError, ValueError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _pieces(source: str, piece_bytes: int, encoding: str) -> Iterator[tuple[bytes, int]]:
    """A file's (or stdin's) bytes in pieces that end after an empty line (the last piece ends where
    the file does; :func:`piece_size` the size), each with the number of its first line."""
    if source == STDIN:
        handle = getattr(sys.stdin, "buffer", None)
        if handle is None:  # a text stream without bytes (a test's StringIO): read it whole
            yield sys.stdin.read().encode(encoding, "surrogateescape"), 1
            return
        close = False
    else:
        handle = open_bytes(source)
        close = True
    try:
        line = 1
        pending = b""
        size, done = _file_size(handle), 0
        while True:
            want = piece_size(piece_bytes, None if size is None else size - done)
            data = handle.read(want)
            done += len(data)
            pending += data
            if data:  # the end of the last empty line (0: none yet)
                lf, crlf = pending.rfind(b"\n\n"), pending.rfind(b"\n\r\n")
                cut = max(lf + 2 if lf >= 0 else 0, crlf + 3 if crlf >= 0 else 0)
            else:
                cut = len(pending)
            if cut > 0 and (len(pending) >= want or not data):
                yield pending[:cut], line
                line += pending.count(b"\n", 0, cut)
                pending = pending[cut:]
            if not data:
                if pending:
                    yield pending, line
                return
    except OSError as error:
        raise CorpusError(f"{source if close else STDIN_NAME}: cannot read ({error.strerror})") from None
    finally:
        if close:
            handle.close()


class Piece(NamedTuple):
    """A piece of an input file: its text (whole sentences), the number of its first line and the bytes
    of the file it was read from (for progress)."""

    text: str
    first_line: int
    nbytes: int = 0


def text_pieces(source: str, fmt: str | None = None, *, accept: tuple[str, ...] = TREE_FORMATS,
                command: str = "egnlp", encoding: str = "utf-8",
                piece_bytes: int | None = None) -> tuple[str, str, Iterator[Piece]]:
    """(format, name for messages, the file's text in pieces of about ``piece_bytes``, each ending
    at a sentence's end).  The format is told (or checked) on the first piece; decoding errors, raised
    as the pieces are read, name the file's own line.  Plain text and CoNLL-2000 come as one piece
    (their readers take the whole text); blank input comes as no piece.  ``piece_bytes``: :data:`PIECE_BYTES`
    by default."""
    name = STDIN_NAME if source == STDIN else source
    pieces = _pieces(source, PIECE_BYTES if piece_bytes is None else piece_bytes, encoding)
    first, line = next(pieces, (b"", 1))
    text = decode(first, name, encoding, line).removeprefix("\ufeff")
    if not text.strip() and next(pieces, None) is None:  # blank input holds no sentence, in any format
        return fmt if fmt in accept else accept[0], name, iter(())
    chosen = input_format(text, name, fmt, accept, command)
    nbytes = len(first)
    if chosen in (CONLL2000, TEXT):
        rest = b"".join(piece for piece, _ in pieces)
        text += decode(rest, name, encoding, line + first.count(b"\n"))
        nbytes += len(rest)

    def decoded() -> Iterator[Piece]:
        yield Piece(text, line, nbytes)
        for piece, at in pieces:
            if piece.strip():
                yield Piece(decode(piece, name, encoding, at), at, len(piece))

    return chosen, name, decoded()


def training_sets(data: str | None, train: str | os.PathLike[str] | None, dev: str | os.PathLike[str] | None, *,
                  trees: bool, encoding: str = "utf-8", invalid: list[str] | None = None,
                  fmt: str | None = None, train_on_dev: bool = False) -> TrainingSets:
    """The sentences of ``--data NAME`` (a data set's train and dev splits, or a corpus file) or of
    ``--train FILE`` and ``--dev FILE`` (either may be ``-``, stdin).

    Args:
        trees: whether the command trains on dependency trees (a parser: file
            sentences need heads, a data set must be a treebank, files are
            CoNLL or Malt-TAB) or on tags (a tagger: any data set; files need
            no heads and may also be CoNLL-2000).
        invalid: when a list is given, file sentences whose heads do not form a
            tree are skipped and their messages appended (see
            :func:`~egnlp.corpora.read_conll`).
        fmt: the files' format (None: told from each file's content).
        train_on_dev: the dev sentences join the training ones (after them), and
            there is no dev set.

    Raises:
        CorpusError: both or neither of ``data`` and ``train``; ``dev`` with a
            data set; a tagging data set for a parser; stdin for both files;
            any error reading the files.
    """
    if (data is None) == (train is None):
        raise CorpusError("give either --data NAME or --train FILE")
    if data is not None and is_dataset(data):
        if dev is not None:
            raise CorpusError("--dev goes with --train; a data set brings its own dev split")
        if trees and dataset_task(data) != "parse":
            raise CorpusError(f"data set '{data}' has no dependency trees (its task is '{dataset_task(data)}'); "
                              "see 'egnlp data list'")
        return _dev_joined(TrainingSets(load_sentences(data, "train"), load_sentences(data, "dev"), data),
                           train_on_dev)
    if data is not None:
        if data != STDIN and not os.path.isfile(data):
            load_sentences(data)  # raises: neither a data set nor a file (the message lists the data sets)
        train = data
    train, dev = (os.fspath(path) if path is not None else None for path in (train, dev))
    if train == STDIN and dev == STDIN:
        raise CorpusError("only one of the training and dev files can be stdin ('-')")
    command = f"egnlp {'parser' if trees else 'tagger'} train"
    read = dict(accept=TREE_FORMATS if trees else TAGGED_FORMATS, command=command, encoding=encoding,
                require_heads=trees, invalid=invalid)
    _, train_sentences = read_sentences(train, fmt, **read)
    dev_sentences = read_sentences(dev, fmt, **read)[1] if dev is not None else None
    return _dev_joined(TrainingSets(train_sentences, dev_sentences, None), train_on_dev)


def _dev_joined(sets: TrainingSets, train_on_dev: bool) -> TrainingSets:
    """``sets`` with the dev sentences appended to the training ones when ``train_on_dev``."""
    if not train_on_dev or not sets.dev:
        return sets
    return TrainingSets([*sets.train, *sets.dev], None, sets.dataset)
