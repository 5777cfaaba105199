"""egnlp's corpus readers against the libraries: ``conllu`` for CoNLL-U, NLTK's corpus readers for the rest.

Every row turns files into the same thing, a list of egnlp ``Sentence``
objects (the ten or eleven column strings of each word line), unless it says
otherwise. The readers of one data set run in turn, ``--repeat`` rounds, in
this process; the table gives the least CPU seconds of each (CPU rather than
wall time: on a shared machine it varies less) and its ratio to the first
row of the data set. Every pair is checked to give equal sentences before it
is timed.

CoNLL-U: the files of ``$EGNLP_UD_DIR`` (``--ud-dir``) concatenated
``--copies`` times into one temporary file.

- ``egnlp read_conll``: checks everything in the docstring of
  ``egnlp.corpora.conll`` (10 or 11 columns on every word line, no empty
  field, no control character, whitespace only where the format allows it,
  IDs 1..n in order, multiword ranges and empty nodes placed and numbered as
  CoNLL-U says, the heads form a tree, at most 500 words), keeps every line
  verbatim and names the file and line of every error.
- ``conllu.parse_incr`` (library only): the library with its default field
  parsers; sentences stay conllu ``TokenList`` objects. It checks the syntax
  of ID, HEAD and DEPS only; it strips lines, splits columns at a TAB *or two
  spaces*, drops columns past the tenth and comment lines without a value,
  accepts lines with fewer than ten columns, and knows no line numbers. The
  least a library-based reader would do.
- ``conllu.parse_incr -> Sentence``: the same with the column strings kept
  raw (field parsers that return the string) and a ``Sentence`` built per
  sentence (comments rebuilt as ``# key = value``), no further check.
- ``conllu.parse_incr -> Sentence + egnlp checks``: the same, then the checks
  of ``read_conll`` on lines rebuilt from conllu's tokens (line numbers
  counted alongside). This is not egnlp's validation: the rebuilt lines are
  not the file's (conllu has stripped them, split them at two spaces, dropped
  columns past the tenth and comments without a value), so errors egnlp
  reports in the file pass unseen; no reader on ``parse_incr`` can do better.
- writing: ``egnlp format_conll`` (each sentence's verbatim lines) against
  ``conllu``'s ``TokenList.serialize``; the note says whether each gives back
  the input.

Tagging corpora, from the zip files of NLTK's data path:

- ``egnlp``: ``parse_conll2000``, ``parse_brown``, ``parse_treebank_tags``
  on the decoded files, as ``egnlp.corpora.datasets`` reads them. They find
  sentences and trees with NLTK's corpus-reader block readers
  (``read_blankline_block``, ``read_sexpr_block``) and check every token.
- ``hand-written loops``: the readers egnlp had before (kept below for this
  comparison): the same checks and line numbers, sentences and trees found by
  a loop over the lines or the bracket tokens.
- ``NLTK reader``: ``conll2000.iob_sents``, ``brown.tagged_sents`` (tags
  reduced by ``strip_brown_tag``), ``treebank.tagged_sents`` (traces
  dropped), per file, made into Sentences. These check little and name no
  file or line (ConllCorpusReader: a ValueError on a line with another number
  of columns than the first; a Brown token without ``/`` becomes a word
  tagged None).

    python benchmarks/readers.py                        # 3 copies of the UD files, 5 rounds
    python benchmarks/readers.py --copies 1 --repeat 1  # a quick check
"""

from __future__ import annotations

import argparse
import io
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import conllu
import nltk

from egnlp.corpora import CorpusError, Sentence, format_conll, read_conll
from egnlp.corpora.conll import _parse_block, _Width
from egnlp.base.files import decode
from egnlp.corpora.tagging import (CONLL2000_COLUMNS, TRACE_TAG, parse_brown, parse_conll2000, parse_treebank_tags,
                                   strip_brown_tag, tagged_row)

RAW_FIELDS = {name: (lambda line, i: line[i]) for name in conllu.parser.DEFAULT_FIELDS}


def best_times(readers: Sequence[tuple[str, Callable[[], object]]], repeat: int) -> dict[str, tuple[float, object]]:
    """{name: (least CPU seconds, result)}; the readers run in turn, ``repeat`` rounds."""
    best: dict[str, tuple[float, object]] = {}
    for _ in range(repeat):
        for name, run in readers:
            start = time.process_time()
            result = run()
            seconds = time.process_time() - start
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, result)
    return best


def rows_of(sentences: list[Sentence]) -> list[tuple]:
    return [sentence.rows for sentence in sentences]


# --- CoNLL-U ------------------------------------------------------------------------------------------


def conllu_tokenlists(path: Path) -> list[conllu.TokenList]:
    with open(path, encoding="utf-8") as handle:
        return list(conllu.parse_incr(handle))


def _comments(tokenlist: conllu.TokenList) -> list[str]:
    return [f"# {key} = {value}" if value else f"# {key}" for key, value in tokenlist.metadata.items()]


def conllu_sentences(path: Path) -> list[Sentence]:
    """conllu with raw column strings, one Sentence per sentence, no further check."""
    source = str(path)
    out = []
    with open(path, encoding="utf-8") as handle:
        for tokenlist in conllu.parse_incr(handle, field_parsers=RAW_FIELDS):
            aside = [(0, comment) for comment in _comments(tokenlist)]
            rows = []
            for token in tokenlist:
                row = tuple(token.values())
                if "-" in row[0] or "." in row[0]:
                    aside.append((len(rows), "\t".join(row)))
                else:
                    rows.append(row)
            out.append(Sentence(rows=tuple(rows), aside=tuple(aside), source=source))
    return out


class _LineCounter(io.TextIOBase):
    """A text file that remembers the line where each block of non-blank lines starts (conllu counts none)."""

    def __init__(self, handle) -> None:
        self.handle = handle
        self.starts: list[int] = []

    def __iter__(self):
        in_block = False
        for number, line in enumerate(self.handle, start=1):
            blank = not line.strip()
            if not blank and not in_block:
                self.starts.append(number)
            in_block = not blank
            yield line

    def read(self, *args):  # parse_incr only checks that there is one
        return self.handle.read(*args)


def conllu_checked(path: Path) -> list[Sentence]:
    """conllu with raw column strings, then read_conll's checks on every sentence's lines."""
    source = str(path)
    width = _Width(source)
    out = []
    with open(path, encoding="utf-8") as handle:
        counter = _LineCounter(handle)
        for index, tokenlist in enumerate(conllu.parse_incr(counter, field_parsers=RAW_FIELDS)):
            lines = _comments(tokenlist) + ["\t".join(token.values()) for token in tokenlist]
            first = counter.starts[index]
            out.append(_parse_block([(first + offset, text) for offset, text in enumerate(lines)], source, True,
                                    width, False))
    return out


def conllu_write(tokenlists: list[conllu.TokenList]) -> str:
    return "".join(tokenlist.serialize() for tokenlist in tokenlists)


# --- the hand-written tagging readers egnlp had before it read through NLTK's block readers --------------

_BRACKET_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def handwritten_brown(text: str, source: str) -> list[Sentence]:
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


def handwritten_conll2000(text: str, source: str) -> list[Sentence]:
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
            raise CorpusError(f"{source}:{number}: expected {CONLL2000_COLUMNS} space-separated columns "
                              f"(word, POS, chunk), found {len(columns)}")
        if not rows:
            first = number
        rows.append(tagged_row(len(rows) + 1, *columns))
    if rows:
        sentences.append(Sentence(rows=tuple(rows), source=source, line=first))
    if not sentences:
        raise CorpusError(f"{source}: no sentences found")
    return sentences


def handwritten_treebank(text: str, source: str) -> list[Sentence]:
    def line_of(offset: int) -> int:
        return text.count("\n", 0, offset) + 1

    sentences = []
    rows: list[tuple[str, ...]] = []
    depth = first = i = 0
    tokens = [(match.group(), match.start()) for match in _BRACKET_TOKEN.finditer(text)]
    while i < len(tokens):
        token, offset = tokens[i]
        if depth == 0:
            if token != "(":
                raise CorpusError(f"{source}:{line_of(offset)}: expected '(' to start a tree, found '{token}'")
            first = line_of(offset)
        window = [value for value, _ in tokens[i : i + 4]]
        if (len(window) == 4 and window[0] == "(" and window[3] == ")"
                and not set(window[1:3]) & {"(", ")"}):
            if window[1] != TRACE_TAG:
                rows.append(tagged_row(len(rows) + 1, window[2], window[1]))
            i += 4
        else:
            depth += 1 if token == "(" else -1 if token == ")" else 0
            i += 1
        if depth == 0:
            if not rows:
                raise CorpusError(f"{source}:{first}: tree has no words besides traces")
            sentences.append(Sentence(rows=tuple(rows), source=source, line=first))
            rows = []
    if depth != 0:
        raise CorpusError(f"{source}:{first}: tree is not closed")
    if not sentences:
        raise CorpusError(f"{source}: no sentences found")
    return sentences


# --- NLTK corpora -------------------------------------------------------------------------------------


def read_files(package: str, files: list[str], parse) -> list[Sentence]:
    """Read, decode and parse files of an NLTK package as egnlp.corpora.datasets does."""
    out = []
    for name in files:
        source = f"{package}/{name}"
        with nltk.data.find(f"corpora/{package}/{name}").open() as handle:
            out.extend(parse(decode(handle.read(), source, "ascii"), source))
    return out


def as_sentences(tagged: list[list[tuple]], source: str) -> list[Sentence]:
    return [Sentence(rows=tuple(tagged_row(i, *token) for i, token in enumerate(sentence, start=1)), source=source)
            for sentence in tagged if sentence]


def nltk_conll2000(files: list[str]) -> list[Sentence]:
    from nltk.corpus import conll2000

    return [s for name in files for s in as_sentences(conll2000.iob_sents(name), f"conll2000/{name}")]


def nltk_brown(files: list[str]) -> list[Sentence]:
    from nltk.corpus import brown

    return [s for name in files for s in as_sentences(
        [[(word, strip_brown_tag(tag)) for word, tag in sentence] for sentence in brown.tagged_sents(name)],
        f"brown/{name}")]


def nltk_treebank(files: list[str]) -> list[Sentence]:
    from nltk.corpus import treebank

    return [s for name in files for s in as_sentences(
        [[(word, tag) for word, tag in sentence if tag != TRACE_TAG]
         for sentence in treebank.tagged_sents(name.removeprefix("combined/"))],
        f"treebank/{name}")]


# --- table --------------------------------------------------------------------------------------------


def table_row(data: str, reader: str, seconds: float, sentences: int, tokens: int, megabytes: float, base: float,
              note: str = "") -> str:
    return (f"| {data} | {reader} | {sentences:,} | {tokens:,} | {seconds:.2f} | {megabytes / seconds:.1f} "
            f"| {seconds / base:.2f} | {note} |")


def conllu_rows(ud_files: list[Path], copies: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        big = Path(folder) / "all.conllu"
        big.write_text("".join(path.read_text(encoding="utf-8").rstrip("\n") + "\n\n" for path in ud_files) * copies,
                       encoding="utf-8")
        size = big.stat().st_size / 1e6
        label = f"CoNLL-U: {len(ud_files)} UD files x {copies} ({size:.1f} MB)"
        best = best_times([("egnlp", lambda: read_conll(big)), ("library", lambda: conllu_tokenlists(big)),
                           ("raw", lambda: conllu_sentences(big)), ("checked", lambda: conllu_checked(big))], repeat)
        ours = best["egnlp"][1]
        assert rows_of(best["raw"][1]) == rows_of(ours), "conllu gave other rows"
        assert rows_of(best["checked"][1]) == rows_of(ours)
        assert [s.line for s in best["checked"][1]] == [s.line for s in ours]
        n, tokens, base = len(ours), sum(len(s) for s in ours), best["egnlp"][0]
        for key, reader, note in [
            ("egnlp", "egnlp `read_conll`", "all checks, lines verbatim, file:line"),
            ("library", "`conllu.parse_incr` (library only)", "TokenLists, no Sentence; checks ID, HEAD, DEPS only"),
            ("raw", "`conllu.parse_incr` -> Sentence", "raw columns, no further check"),
            ("checked", "`conllu.parse_incr` -> Sentence + egnlp checks",
             "checks of lines rebuilt from tokens, not the file's"),
        ]:
            print(table_row(label, reader, best[key][0], n, tokens, size, base, note))

        original = big.read_text(encoding="utf-8")
        lists = best["library"][1]
        written = best_times([("egnlp", lambda: format_conll(ours)), ("conllu", lambda: conllu_write(lists))], repeat)
        for key, reader in (("egnlp", "write: egnlp `format_conll`"),
                            ("conllu", "write: conllu `TokenList.serialize`")):
            seconds, text = written[key]
            note = f"gives back the input: {'yes' if text == original else 'no'}"
            print(table_row(label, reader, seconds, n, tokens, size, written["egnlp"][0], note))


def tagging_rows(repeat: int) -> None:
    from nltk.corpus import brown

    sets = [
        ("conll2000: train.txt, test.txt", "conll2000", ["train.txt", "test.txt"], parse_conll2000,
         handwritten_conll2000, nltk_conll2000, "`ConllChunkCorpusReader.iob_sents`"),
        ("brown: 500 files", "brown", sorted(brown.fileids()), parse_brown, handwritten_brown, nltk_brown,
         "`CategorizedTaggedCorpusReader.tagged_sents`"),
        ("treebank: wsj_0001-0199.mrg", "treebank", [f"combined/wsj_{n:04d}.mrg" for n in range(1, 200)],
         parse_treebank_tags, handwritten_treebank, nltk_treebank, "`BracketParseCorpusReader.tagged_sents`"),
    ]
    for label, package, files, ours, handwritten, library, library_name in sets:
        megabytes = sum(len(nltk.data.find(f"corpora/{package}/{name}").open().read()) for name in files) / 1e6
        best = best_times([("egnlp", lambda: read_files(package, files, ours)),
                           ("handwritten", lambda: read_files(package, files, handwritten)),
                           ("nltk", lambda: library(files))], repeat)
        sentences = best["egnlp"][1]
        same = [(s.rows, s.line) for s in best["handwritten"][1]] == [(s.rows, s.line) for s in sentences]
        assert same, "the hand-written reader gave other sentences"
        n, tokens, base = len(sentences), sum(len(s) for s in sentences), best["egnlp"][0]
        nltk_same = "same sentences" if rows_of(best["nltk"][1]) == rows_of(sentences) else "OTHER SENTENCES"
        for key, reader, note in [
            ("egnlp", f"egnlp `{ours.__name__}` (NLTK block reader)", "every token checked, file:line"),
            ("handwritten", "hand-written loop (before)", "the same sentences, checks and lines"),
            ("nltk", f"NLTK {library_name} -> Sentence", f"{nltk_same}; no file or line"),
        ]:
            print(table_row(label, reader, best[key][0], n, tokens, megabytes, base, note), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ud-dir", default=os.environ.get("EGNLP_UD_DIR"), help="folder of *.conllu files")
    parser.add_argument("--copies", type=int, default=3, help="times the UD files are concatenated")
    parser.add_argument("--repeat", type=int, default=5, help="rounds; the least CPU time of each reader is reported")
    parser.add_argument("--only", choices=("conllu", "tagging"), help="one half of the table")
    args = parser.parse_args()
    print("| data | reader | sentences | tokens | CPU s | MB/s | x first row | note |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    if args.only != "tagging":
        if not args.ud_dir:
            raise SystemExit("set EGNLP_UD_DIR or pass --ud-dir")
        ud_files = sorted(Path(args.ud_dir).glob("*.conllu"))
        if not ud_files:
            raise SystemExit(f"{args.ud_dir}: no *.conllu files")
        conllu_rows(ud_files, args.copies, args.repeat)
    if args.only != "conllu":
        tagging_rows(args.repeat)


if __name__ == "__main__":
    main()
