"""The in-memory sentence shared by every reader and writer, and tree helpers.

A :class:`Sentence` keeps the ten original columns of each word line as
strings, plus the lines that are not word tokens (comments, CoNLL-U multiword
token ranges such as ``1-2`` and empty nodes such as ``8.1``) together with
their positions, so that writing a sentence back gives the lines it was read
from. Chunking data carries an 11th column, the chunk tag (IOB, e.g.
``B-NP``), after the ten CoNLL-X columns; it is kept verbatim like the others.

A sentence has at most :data:`MAX_WORDS` words. Parsing a sentence of n
words takes O(n^2) memory, and training on it O(n^3) (the in-between
features of every arc): about 1.7 GB for one 500-word sentence. The
second-order parser (sibling parts) takes O(n^3) to parse too: 0.9 GB and
2.4 s for 500 words. Readers
refuse longer sentences with the file and line, raw text is cut into pieces
of at most this many tokens (:mod:`egnlp.tagger.text`), and a
:class:`Sentence` built by hand raises ValueError.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .morphology import morph_label

# Column indices of a CoNLL-X / CoNLL-U word line (both have ten columns).
ID, FORM, LEMMA, CPOS, POS, FEATS, HEAD, DEPREL = range(8)
COL9 = 8  # CoNLL-X PHEAD, CoNLL-U DEPS
COL10 = 9  # CoNLL-X PDEPREL, CoNLL-U MISC
CHUNK = 10  # the optional 11th column: chunk tag
N_COLUMNS = 10
N_CHUNK_COLUMNS = 11
BLANK = "_"
MAX_WORDS = 500  # the longest sentence egnlp reads, parses or trains on (see the module docstring)
# What a tagger predicts: POSTAG (CoNLL-U XPOS), the chunk column, CPOSTAG (CoNLL-U UPOS), FEATS, or the
# joint tag UPOS#XPOS#FEATS (``morph``: :mod:`egnlp.corpora.morphology`).
LABEL_COLUMNS = ("pos", "chunk", "upos", "feats", "morph")


def _column(index: int, doc: str) -> property:
    """A read-only property of a :class:`Sentence`: the strings of column ``index`` of its words, a list[str]."""
    return property(lambda sentence: [row[index] for row in sentence.rows], doc=doc)


@dataclass
class Sentence:
    """One sentence of word tokens.

    Attributes:
        rows: the column strings of each word line, in token order: ten, or
            eleven when the sentence carries chunk tags (the same on every row).
        aside: lines that are not word tokens, as ``(position, line)`` pairs in
            file order; ``position`` is the number of word tokens before the
            line (comments and a leading ``1-2`` range have position 0, an
            empty node ``8.1`` has position 8).
        source: the file name as given to the reader.
        line: the 1-based line number where the sentence starts in ``source``.
        heads: the HEAD column as integers (0 = root), or None when every
            HEAD of the sentence is ``_``. Derived from ``rows``.

    Treat a Sentence as immutable; :meth:`with_heads` and :meth:`with_tags`
    return modified copies.
    """

    rows: tuple[tuple[str, ...], ...]
    aside: tuple[tuple[int, str], ...] = ()
    source: str = "<string>"
    line: int = 1
    heads: list[int] | None = field(init=False)

    def __post_init__(self) -> None:
        if len(self.rows) > MAX_WORDS:
            raise ValueError(f"{self.source}:{self.line}: sentence of {len(self.rows)} words; "
                             f"egnlp takes at most {MAX_WORDS} words per sentence, split it")
        head_column = [row[HEAD] for row in self.rows]
        if all(value == BLANK for value in head_column):
            self.heads = None
        else:
            self.heads = [int(value) for value in head_column]

    @classmethod
    def checked(cls, rows: tuple[tuple[str, ...], ...], aside: tuple[tuple[int, str], ...], source: str, line: int,
                heads: list[int] | None) -> Sentence:
        """A sentence a reader has checked (at most :data:`MAX_WORDS` words, ``heads`` its HEAD column
        as ints or None, as ``corpora.conll.check_heads`` gives them): the constructor without the
        work of ``__post_init__`` a second time."""
        sentence = cls.__new__(cls)
        sentence.rows, sentence.aside, sentence.source, sentence.line, sentence.heads = rows, aside, source, line, heads
        return sentence

    def __len__(self) -> int:
        return len(self.rows)

    forms = _column(FORM, "Word forms (FORM column).")
    lemmas = _column(LEMMA, "Lemmas (LEMMA column).")
    cpos = _column(CPOS, "Coarse tags (CoNLL-X CPOSTAG, CoNLL-U UPOS).")
    pos = _column(POS, "Fine tags (CoNLL-X POSTAG, CoNLL-U XPOS).")
    feats = _column(FEATS, "Morphological features (FEATS column), unparsed.")

    @property
    def deprels(self) -> list[str] | None:
        """Dependency labels (DEPREL column), or None when ``heads`` is None."""
        if self.heads is None:
            return None
        return [row[DEPREL] for row in self.rows]

    @property
    def chunks(self) -> list[str] | None:
        """Chunk tags (the 11th column), or None when the sentence has the ten CoNLL columns only."""
        if not self.rows or len(self.rows[0]) <= CHUNK:
            return None
        return [row[CHUNK] for row in self.rows]

    def labels(self, column: str) -> list[str] | None:
        """The tags of one of :data:`LABEL_COLUMNS`: :attr:`pos`, :attr:`chunks` (None without a chunk
        column), :attr:`cpos` (``upos``), :attr:`feats`, or the joint tags ``UPOS#XPOS#FEATS`` (``morph``:
        :func:`~egnlp.corpora.morphology.morph_label`).

        Raises:
            ValueError: an unknown column; for ``morph``, a UPOS or FEATS value holding ``#``.
        """
        if column not in LABEL_COLUMNS:
            raise ValueError(f"column must be one of {', '.join(LABEL_COLUMNS)}, not {column!r}")
        if column == "upos":
            return self.cpos
        if column == "feats":
            return self.feats
        if column == "morph":
            return [morph_label(row[CPOS], row[POS], row[FEATS]) for row in self.rows]
        return self.pos if column == "pos" else self.chunks

    def lines(self) -> list[str]:
        """The sentence's lines in file order, without line terminators."""
        return _interleave(map("\t".join, self.rows), self.aside)

    def with_heads(self, heads: Sequence[int], deprels: Sequence[str] | None = None) -> Sentence:
        """Return a copy carrying predicted heads (and labels).

        DEPREL becomes ``_`` when ``deprels`` is None. Other columns with gold
        syntax are cleared to ``_`` so that no gold annotation reaches a
        prediction file: column 9 always (CoNLL-X PHEAD or CoNLL-U DEPS), and
        column 10 when column 9 held an integer, i.e. CoNLL-X PDEPREL (in
        CoNLL-U column 10 is MISC and is kept). Empty nodes (``8.1``) are
        dropped: they belong to the enhanced graph, which a basic-tree parser
        does not predict. Comments and multiword-token lines are kept.

        Args:
            heads: one head per token, 0 for the root, 1..n otherwise.
            deprels: one label per token, or None.
        """
        heads = self._checked_heads(heads, deprels)
        return dataclasses.replace(self, rows=tuple(self._parsed_rows(heads, deprels)), aside=self._basic_aside())

    def parsed_lines(self, heads: Sequence[int], deprels: Sequence[str] | None = None) -> list[str]:
        """``self.with_heads(heads, deprels).lines()``, without building the copy: what a parser writes."""
        heads = self._checked_heads(heads, deprels)
        return _interleave(map("\t".join, self._parsed_rows(heads, deprels)), self._basic_aside())

    def _checked_heads(self, heads: Sequence[int], deprels: Sequence[str] | None) -> list[int]:
        """``heads`` as ints, after checking their number and range and the number of ``deprels``."""
        n = len(self.rows)
        if len(heads) != n:
            raise ValueError(f"expected {n} heads, got {len(heads)}")
        if deprels is not None and len(deprels) != n:
            raise ValueError(f"expected {n} deprels, got {len(deprels)}")
        heads = list(map(int, heads))
        if n and not (0 <= min(heads) and max(heads) <= n):
            i = next(i for i, head in enumerate(heads) if not 0 <= head <= n)
            raise ValueError(f"head {heads[i]} of token {i + 1} is outside 0..{n}")
        return heads

    def _parsed_rows(self, heads: list[int], deprels: Sequence[str] | None) -> list[tuple[str, ...]]:
        """The rows of :meth:`with_heads`: HEAD and DEPREL set, column 9 cleared, and column 10 where
        column 9 held an integer (the heads checked, :data:`_NUMBER_TEXT` their text)."""
        labels = deprels if deprels is not None else (BLANK,) * len(heads)
        return [(*row[:HEAD], _NUMBER_TEXT[head], label, BLANK, BLANK if row[COL9].isdigit() else row[COL10],
                 *row[CHUNK:]) for row, head, label in zip(self.rows, heads, labels)]

    def _basic_aside(self) -> tuple[tuple[int, str], ...]:
        """The lines kept aside but the empty nodes, which belong to the enhanced graph."""
        return tuple(item for item in self.aside if not _is_empty_node(item[1])) if self.aside else ()

    def with_tags(self, pos: Sequence[str] | None = None, chunks: Sequence[str] | None = None, *,
                  upos: Sequence[str] | None = None, feats: Sequence[str] | None = None) -> Sentence:
        """Return a copy carrying new (e.g. predicted) POS tags, chunk tags, UPOS tags and/or FEATS.

        ``pos`` replaces POSTAG (CoNLL-U XPOS). It replaces CPOSTAG too when
        the sentence's CPOSTAG column equals its POSTAG column on every token,
        as in data made from one tag per word (Malt-TAB, tagging corpora, or
        untagged text with ``_`` in both); a real coarse tag set (CoNLL-X
        Spanish, CoNLL-U UPOS) is left alone.

        ``upos`` replaces CPOSTAG (CoNLL-U UPOS) only, ``feats`` the FEATS column (``_`` for none).

        ``chunks`` replaces the 11th column, or adds it to a ten-column
        sentence; multiword-token and empty-node lines then get ``_`` there so
        that every non-comment line keeps the same number of columns. None
        leaves the column as it is.

        Raises:
            ValueError: a sequence whose length is not the number of tokens,
                or a tag that is empty or holds whitespace (it would break the line).
        """
        n = len(self.rows)
        for name, values in (("POS tags", pos), ("chunk tags", chunks), ("UPOS tags", upos), ("FEATS values", feats)):
            if values is None:
                continue
            if len(values) != n:
                raise ValueError(f"expected {n} {name}, got {len(values)}")
            for i, value in enumerate(values):
                if not value or any(char.isspace() for char in value):
                    raise ValueError(f"{name[:-1]} {value!r} of token {i + 1} is empty or holds whitespace")
        set_cpos = pos is not None and all(row[CPOS] == row[POS] for row in self.rows)
        add_column = chunks is not None and self.chunks is None
        rows = []
        for i, row in enumerate(self.rows):
            new = list(row)
            if pos is not None:
                new[POS] = pos[i]
                if set_cpos:
                    new[CPOS] = pos[i]
            if upos is not None:
                new[CPOS] = upos[i]
            if feats is not None:
                new[FEATS] = feats[i]
            if chunks is not None:
                if add_column:
                    new.append(chunks[i])
                else:
                    new[CHUNK] = chunks[i]
            rows.append(tuple(new))
        aside = self.aside
        if add_column:
            aside = tuple((position, text if text.startswith("#") else f"{text}\t{BLANK}") for position, text in aside)
        return dataclasses.replace(self, rows=tuple(rows), aside=aside)

    def with_misc(self, key: str, values: Sequence[str]) -> Sentence:
        """Return a copy whose column 10 (CoNLL-U MISC) sets ``key`` to one value per token
        (:func:`misc_with`: other entries kept, the field's sorted order too).

        Column 10 is MISC in CoNLL-U only (CoNLL-X's is PDEPREL): callers write it to CoNLL-U.

        Raises:
            ValueError: a key that is not letters and digits beginning with a letter, a number of values
                other than the number of tokens, or a value that is empty or holds whitespace, ``|`` or ``=``.
        """
        if not (key.isascii() and key.isalnum() and key[:1].isalpha()):
            raise ValueError(f"a MISC key is letters and digits beginning with a letter, not {key!r}")
        if len(values) != len(self.rows):
            raise ValueError(f"expected {len(self.rows)} {key} values, got {len(values)}")
        for i, value in enumerate(values):
            if not value or any(char.isspace() or char in "|=" for char in value):
                raise ValueError(f"{key} value {value!r} of token {i + 1} is empty or holds whitespace, '|' or '='")
        rows = tuple((*row[:COL10], misc_with(row[COL10], key, value), *row[COL10 + 1:])
                     for row, value in zip(self.rows, values))
        return dataclasses.replace(self, rows=rows)


def misc_with(misc: str, key: str, value: str) -> str:
    """A MISC field (CoNLL-U column 10: ``_`` or ``Key=Value|Key=Value``) with ``key`` set to ``value``.

    An entry of ``key`` already there is replaced; otherwise the entry goes before the first entry whose
    key sorts after ``key`` (case-insensitively, as UD sorts its attributes), so a sorted field stays
    sorted and the order of the others is kept.  An entry without ``=`` counts as a key.
    """
    entry = f"{key}={value}"
    entries = [] if misc == BLANK else misc.split("|")
    keys = [item.split("=", 1)[0] for item in entries]
    if key in keys:
        entries[keys.index(key)] = entry
    else:
        at = next((k for k, other in enumerate(keys) if other.lower() > key.lower()), len(entries))
        entries.insert(at, entry)
    return "|".join(entries)


def probability_text(probability: float) -> str:
    """A probability as MISC values write it: four decimals, ``0.9312`` (clipped to [0, 1] first, so
    rounding in the dynamic programs never shows as ``1.0000001``)."""
    return f"{min(max(float(probability), 0.0), 1.0):.4f}"


# The text of the numbers a head takes, 0 .. MAX_WORDS: a list index instead of str() for each word.
_NUMBER_TEXT = [str(number) for number in range(MAX_WORDS + 1)]


def _interleave(row_lines: Iterable[str], aside: Sequence[tuple[int, str]]) -> list[str]:
    """The lines of a sentence in file order: the word lines ``row_lines``, and each line kept aside
    before the word that follows it (``aside``: (words before it, line))."""
    if not aside:
        return list(row_lines)
    out: list[str] = []
    pending = iter(aside)
    nxt = next(pending, None)
    for position, line in enumerate(row_lines):
        while nxt is not None and nxt[0] == position:
            out.append(nxt[1])
            nxt = next(pending, None)
        out.append(line)
    while nxt is not None:
        out.append(nxt[1])
        nxt = next(pending, None)
    return out


def _is_empty_node(line: str) -> bool:
    """Whether a line kept aside is an empty node (``8.1``), not a comment or a multiword token."""
    return not line.startswith("#") and "." in line.split("\t", 1)[0]


def find_cycle(heads: Sequence[int]) -> list[int] | None:
    """Return the tokens (1-based, in head order) of a cycle, or None.

    Args:
        heads: one head per token, each in 0..n (0 = root).
    """
    state = [0] * (len(heads) + 1)  # 0 unvisited, 1 on the current path, 2 reaches the root
    state[0] = 2
    for start in range(1, len(heads) + 1):
        path = []
        node = start
        while state[node] == 0:
            state[node] = 1
            path.append(node)
            node = heads[node - 1]
        if state[node] == 1:
            return path[path.index(node):]
        for visited in path:
            state[visited] = 2
    return None


def is_projective(heads: Sequence[int]) -> bool:
    """True when no two arcs cross, counting arcs from the root at position 0.

    This is the class of trees Eisner's algorithm can produce.

    Args:
        heads: one head per token, 0 for the root, 1..n otherwise.
    """
    arcs = [(min(head, dep), max(head, dep)) for dep, head in enumerate(heads, start=1)]
    for left, right in arcs:
        for inner_left, inner_right in arcs:
            if left < inner_left < right < inner_right:
                return False
    return True
