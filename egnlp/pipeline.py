"""From raw text to dependency trees: split and tokenise, tag, parse; CoNLL-U out.

    from egnlp.tagger import Tagger
    from egnlp.parser.parser_model import Parser
    from egnlp.pipeline import parse_text, to_conllu
    trees = parse_text("O Sr. Silva chegou às 9h30. Saiu.", Tagger.load("upos.npz"), Parser.load("pt.npz"),
                       language="pt")
    print(to_conllu(trees))

Sentences and tokens come from :mod:`egnlp.tagger.text` (NLTK's Punkt and
word tokenizer, with the offsets of every token), knowing the abbreviations
of the taggers' training vocabularies as well as the language's. Each
sentence is written with ``# sent_id = N`` and ``# text = ...`` (its original
characters, a line break as a space); FORM is the token's original
characters; MISC says ``SpaceAfter=No`` where no whitespace follows the token
and ``SpacesAfter=...`` (UD's escapes ``\\s``, ``\\t``, ``\\n``, ``\\r``,
``\\uXXXX``) where other whitespace than one space does, so that the text can
be rebuilt from the tokens.

The taggers fill exactly the tag columns the parser reads (its feature
setting ``tags``: ``upos`` for UPOS, ``xpos`` for XPOS, ``both``), one
tagger per column, each the column its model predicts (``upos`` or ``pos``,
i.e. XPOS); no column is copied into another, and the other columns are
``_``. The tagger and the parser see a token's Penn Treebank form (``` `` ```
for ``"``) instead of its characters where the tagger's training vocabulary
has the one and not the other. LEMMA and FEATS are ``_``; DEPREL is the
parser's labels (``_`` for an unlabelled parser).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Sequence

from egnlp.corpora import Sentence, format_conll
from egnlp.corpora.sentence import BLANK, FORM
from egnlp.parser.parser_model import Parser
from egnlp.corpora.tagging import slash_text
from egnlp.tagger.tagger_model import Tagger
from egnlp.tagger.text import TextSentence, segment, vocabulary_abbreviations

__all__ = ["COLUMN_NAMES", "parse_text", "parser_columns", "slash_text", "tag_text", "text_sentences",
           "to_conllu", "tokens_sentence"]

_SPACE = re.compile(r"\s+")
_LINE_BREAK = re.compile(r"[^\S ]")  # whitespace other than a space, written as a space in '# text'
# What each tagger column fills, and its name in messages. A tagger of column 'pos' predicts XPOS (POSTAG).
COLUMN_NAMES = {"upos": "UPOS", "pos": "XPOS"}
# The tagger columns a parser's features read, by its ``tags`` setting.
PARSER_COLUMNS = {"upos": ("upos",), "xpos": ("pos",), "both": ("upos", "pos")}
_SPACE_ESCAPES = {" ": "\\s", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def tokens_sentence(tokens: Sequence[str], tags: Sequence[str] | None = None,
                    comments: Sequence[str] = ()) -> Sentence:
    """A ten-column Sentence of ``tokens`` (POS tags in CPOSTAG and POSTAG, ``_`` without tags).

    ``comments`` are whole lines (starting with ``#``) put before the tokens.
    """
    if tags is not None and len(tags) != len(tokens):
        raise ValueError(f"{len(tags)} tags for {len(tokens)} tokens")
    rows = []
    for i, form in enumerate(tokens):
        if not form or any(ch.isspace() for ch in form):
            raise ValueError(f"token {i + 1} {form!r} is empty or holds whitespace")
        tag = tags[i] if tags is not None else BLANK
        rows.append((str(i + 1), form, BLANK, tag, tag, BLANK, BLANK, BLANK, BLANK, BLANK))
    aside = tuple((0, line) for line in comments)
    return Sentence(tuple(rows), aside)


def text_sentences(text: str, language: str = "english", abbreviations: Sequence[str] = ()
                   ) -> list[tuple[str, list[str]]]:
    """(sentence text with whitespace runs as one space, its Penn Treebank tokens) for each non-empty
    sentence of ``text``."""
    return [(_SPACE.sub(" ", s.text), [t.norm for t in s.tokens]) for s in segment(text, language, abbreviations)]


def parser_columns(parser: Parser) -> tuple[str, ...]:
    """The tagger columns (``upos``, ``pos``) whose tags ``parser`` reads."""
    return PARSER_COLUMNS[parser.featurizer.tags]


def _taggers_by_column(taggers: "Tagger | Sequence[Tagger]") -> dict[str, Tagger]:
    """The POS taggers given, by the column each fills; ValueError for anything else or a column twice."""
    given = [taggers] if isinstance(taggers, Tagger) else list(taggers)
    if not given:
        raise ValueError("no tagger given: the parser reads tags, give a POS tagger model")
    out: dict[str, Tagger] = {}
    for tagger in given:
        if not isinstance(tagger, Tagger):
            raise ValueError(f"a tagger must be an egnlp Tagger, not {type(tagger).__name__}")
        if tagger.column not in COLUMN_NAMES or tagger.use_pos:
            raise ValueError(f"the tagger must be a POS tagger reading words only, not a {tagger.column} model"
                             + (" reading POS tags" if tagger.use_pos else ""))
        if tagger.column in out:
            raise ValueError(f"two taggers predict {COLUMN_NAMES[tagger.column]}; give one tagger per tag column")
        out[tagger.column] = tagger
    return out


def _feature_forms(sentence: TextSentence, vocabulary: set[str] | None) -> list[str]:
    """The forms a tagger sees: the Treebank form of a token whose characters the tagger never saw in
    training while it saw the Treebank form (``` `` ``` for ``"`` in PTB data); else the characters."""
    if vocabulary is None:
        return [t.norm for t in sentence.tokens]
    return [t.norm if t.norm != t.form and t.form not in vocabulary and t.norm in vocabulary else t.form
            for t in sentence.tokens]


def _misc(space_after: str | None) -> str:
    """The MISC field of a token followed by ``space_after`` (None: the end of the text)."""
    if space_after is None or space_after == " ":
        return BLANK
    if space_after == "":
        return "SpaceAfter=No"
    return "SpacesAfter=" + "".join(_SPACE_ESCAPES.get(ch, f"\\u{ord(ch):04X}") for ch in space_after)


def tag_text(text: str, taggers: "Tagger | Sequence[Tagger]", *, comments: bool = True,
             language: str = "english") -> list[Sentence]:
    """Split and tokenise ``text`` and tag it with POS taggers (one per column: UPOS and/or XPOS), each
    filling its own column: one CoNLL-U Sentence (no heads) per sentence (see the module docstring)."""
    by_column = _taggers_by_column(taggers)
    return _tagged(text, by_column, comments, language)[0]


def _tagged(text: str, by_column: dict[str, Tagger], comments: bool, language: str, jobs: int | None = 1):
    """(tagged Sentences with original forms, the same with the forms the models see)."""
    vocabularies = {column: (set(t.vocabulary) if t.vocabulary is not None else None)
                    for column, t in by_column.items()}
    abbreviations = set().union(*(vocabulary_abbreviations(v) for v in vocabularies.values()))
    pieces = segment(text, language, sorted(abbreviations))
    tags = {}
    model_forms = None
    for column, tagger in by_column.items():
        forms = [_feature_forms(s, vocabularies[column]) for s in pieces]
        tags[column] = tagger.predict(forms, jobs=jobs)
        if model_forms is None or column == "pos":
            model_forms = forms  # the parser sees the forms of its fine-tag tagger
    shown, seen = [], []
    for k, piece in enumerate(pieces):
        rows = []
        for i, token in enumerate(piece.tokens):
            upos = tags["upos"][k][i] if "upos" in tags else BLANK
            xpos = tags["pos"][k][i] if "pos" in tags else BLANK
            rows.append((str(i + 1), token.form, BLANK, upos, xpos, BLANK, BLANK, BLANK, BLANK,
                         _misc(token.space_after)))
        lines = (f"# sent_id = {k + 1}", f"# text = {_LINE_BREAK.sub(' ', piece.text)}") if comments else ()
        sentence = Sentence(tuple(rows), tuple((0, line) for line in lines))
        shown.append(sentence)
        seen.append(_with_forms(sentence, model_forms[k]))
    return shown, seen


def _with_forms(sentence: Sentence, forms: Sequence[str]) -> Sentence:
    """A copy of ``sentence`` with other FORMs."""
    rows = tuple(row[:FORM] + (form,) + row[FORM + 1:] for row, form in zip(sentence.rows, forms))
    return dataclasses.replace(sentence, rows=rows)


def parse_text(text: str, taggers: "Tagger | Sequence[Tagger]", parser: Parser, *, comments: bool = True,
               language: str = "english", jobs: int | None = 1) -> list[Sentence]:
    """Dependency trees of raw ``text``: split, tokenise, tag, parse.

    ``taggers`` is one POS tagger or a sequence of them, one for each tag
    column the parser reads (:func:`parser_columns`); ``language`` picks
    Punkt's model and abbreviations (a Punkt language name or code, e.g.
    ``portuguese`` or ``pt``). Returns one CoNLL-U Sentence per sentence
    with the predicted tags, heads and labels, with ``# sent_id`` / ``#
    text`` comments unless ``comments`` is False (see the module
    docstring). Text without tokens gives []. ``jobs`` processes (None:
    every core) tag and parse blocks of sentences; the result is the same
    for any number.

    Raises:
        ValueError: a tagger that is not a POS tagger (a chunker, say); a tag
            column the parser reads without a tagger, or a tagger for a column
            it does not read; an unknown language; text with a lone surrogate
            or a control character.
    """
    if not isinstance(parser, Parser):
        raise ValueError(f"parser must be an egnlp Parser, not {type(parser).__name__}")
    by_column = _taggers_by_column(taggers)
    needed = parser_columns(parser)
    reads = " and ".join(COLUMN_NAMES[c] for c in needed)
    setting = f"trained with --pos {parser.featurizer.tags}"
    for column in needed:
        if column not in by_column:
            option = "upos" if column == "upos" else "xpos"
            raise ValueError(f"the parser reads {reads} tags ({setting}) but no tagger predicts "
                             f"{COLUMN_NAMES[column]}: give one trained with 'egnlp tagger train --column {option}'")
    for column, tagger in by_column.items():
        if column not in needed:
            raise ValueError(f"the parser reads {reads} tags only ({setting}); a tagger that predicts "
                             f"{COLUMN_NAMES[column]} is not used: leave it out")
    shown, seen = _tagged(text, by_column, comments, language, jobs)
    if not shown:
        return []
    parsed = parser.parse_corpus(seen, jobs=jobs)
    return [_with_forms(tree, original.forms) for tree, original in zip(parsed, shown)]


def to_conllu(sentences: Sequence[Sentence]) -> str:
    """CoNLL-U text of the sentences (their lines, a blank line after each)."""
    return format_conll(sentences)


