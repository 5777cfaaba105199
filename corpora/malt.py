"""Read Malt-TAB files, the format of NLTK's ``dependency_treebank`` (``.dp``).

Each word line is ``word TAB tag TAB head`` and a blank line ends a sentence.
The sentences become ten-column CoNLL-X rows: LEMMA and FEATS ``_``, CPOS and
POS both the tag, DEPREL, PHEAD and PDEPREL ``_``. Writing them with
:func:`~egnlp.corpora.conll.write_conll` therefore gives CoNLL-X.

Fields are held to the rules of the CoNLL reader (:mod:`egnlp.corpora.conll`):
none empty, no control characters, single spaces only inside the word; and a
sentence has at most :data:`~egnlp.corpora.sentence.MAX_WORDS` words.
"""

from __future__ import annotations

from .conll import check_fields, check_heads, split_blocks, too_long
from egnlp.base.errors import CorpusError
from .sentence import BLANK, FORM, HEAD, MAX_WORDS, Sentence

MALT_COLUMNS = 3
MALT_NAMES = ("word", "tag", "head")


def parse_malt_tab(text: str, source: str, first_line: int = 1) -> list[Sentence]:
    """Parse Malt-TAB text; ``source`` names it in messages and in ``Sentence.source``, where the
    text's first line is number ``first_line``.

    Raises:
        CorpusError: a line without three columns, a malformed field, a
            malformed tree, a sentence over the length limit, or no sentence
            at all (each named by file and line).
    """
    sentences = []
    for block in split_blocks(text, first_line):
        rows = []
        for number, line in block:
            columns = line.split("\t")
            if len(columns) != MALT_COLUMNS:
                raise CorpusError(
                    f"{source}:{number}: expected {MALT_COLUMNS} tab-separated columns "
                    f"(word, tag, head), found {len(columns)}"
                )
            check_fields(line, columns, f"{source}:{number}", MALT_NAMES, frozenset((0,)))
            if len(rows) == MAX_WORDS:
                raise too_long(f"{source}:{number}", block[0][0])
            word, tag, head = columns
            rows.append((str(len(rows) + 1), word, BLANK, tag, tag, BLANK, head, BLANK, BLANK, BLANK))
        check_heads(
            [row[HEAD] for row in rows],
            [row[FORM] for row in rows],
            [number for number, _ in block],
            source,
            require_heads=True,
        )
        sentences.append(Sentence(rows=tuple(rows), source=source, line=block[0][0]))
    if not sentences:
        raise CorpusError(f"{source}: no sentences found")
    return sentences
