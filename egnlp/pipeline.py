"""From raw text to dependency trees: split and tokenise, tag, parse; CoNLL-U out.

    from egnlp.tagger import Tagger
    from egnlp.parser.model import Parser
    from egnlp.pipeline import parse_text, to_conllu
    trees = parse_text("The cat sat on the mat. It purred.", Tagger.load("pos.npz"), Parser.load("wsj.npz"))
    print(to_conllu(trees))

Sentences are split and tokenised by :mod:`egnlp.tagger.text` (Penn Treebank
tokens, no downloaded data).  The tagger's POS tags go into both CPOSTAG
(CoNLL-U UPOS) and POSTAG (XPOS), as in the tagging corpora the parsers are
trained on; LEMMA and FEATS are ``_``; DEPREL is ``_`` (the parser predicts
unlabelled trees).  Each sentence carries the CoNLL-U comments
``# sent_id = N`` and ``# text = ...``.
"""

from __future__ import annotations

import re
from typing import Sequence

from egnlp.corpora import Sentence, format_conll
from egnlp.corpora.sentence import BLANK
from egnlp.parser.model import Parser
from egnlp.tagger.model import Tagger
from egnlp.tagger.text import split_sentences, tokenize

__all__ = ["parse_text", "slash_text", "tag_text", "text_sentences", "to_conllu", "tokens_sentence"]

_SPACE = re.compile(r"\s+")


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


def text_sentences(text: str) -> list[tuple[str, list[str]]]:
    """(sentence text with whitespace runs as one space, its tokens) for each non-empty sentence of ``text``."""
    out = []
    for piece in split_sentences(text):
        tokens = tokenize(piece)
        if tokens:
            out.append((_SPACE.sub(" ", piece).strip(), tokens))
    return out


def _check_pos_tagger(tagger: Tagger) -> None:
    if tagger.column != "pos" or tagger.use_pos:
        raise ValueError(f"the tagger must be a POS tagger reading words only, not a {tagger.column} model"
                         + (" reading POS tags" if tagger.use_pos else ""))


def tag_text(text: str, tagger: Tagger, *, comments: bool = True) -> list[Sentence]:
    """Split and tokenise ``text`` and tag it with a POS ``tagger``: one Sentence (no heads) per sentence."""
    _check_pos_tagger(tagger)
    pieces = text_sentences(text)
    tags = tagger.predict([tokens for _, tokens in pieces])
    out = []
    for number, ((raw, tokens), labels) in enumerate(zip(pieces, tags), start=1):
        lines = (f"# sent_id = {number}", f"# text = {raw}") if comments else ()
        out.append(tokens_sentence(tokens, labels, lines))
    return out


def parse_text(text: str, tagger: Tagger, parser: Parser, *, comments: bool = True) -> list[Sentence]:
    """Dependency trees of raw ``text``: split, tokenise, tag with ``tagger``, parse with ``parser``.

    Returns one Sentence per sentence with the predicted POS tags (CPOSTAG and
    POSTAG) and heads (DEPREL ``_``), with ``# sent_id`` / ``# text``
    comments unless ``comments`` is False.  Text without tokens gives [].

    Raises:
        ValueError: ``tagger`` is not a POS tagger (a chunker, say).
    """
    if not isinstance(parser, Parser):
        raise ValueError(f"parser must be a parser.model.Parser, not {type(parser).__name__}")
    tagged = tag_text(text, tagger, comments=comments)
    return parser.parse(tagged) if tagged else []


def to_conllu(sentences: Sequence[Sentence]) -> str:
    """CoNLL-U text of the sentences (their lines, a blank line after each)."""
    return format_conll(sentences)


def slash_text(sentences: Sequence[Sentence], column: str = "pos") -> str:
    """One line per sentence of space-separated ``word/TAG`` tokens (``word/POS/CHUNK`` for ``column`` chunk)."""
    if column == "chunk":
        lines = (" ".join(f"{w}/{p}/{c}" for w, p, c in zip(s.forms, s.pos, s.chunks)) for s in sentences)
    else:
        lines = (" ".join(f"{w}/{t}" for w, t in zip(s.forms, s.pos)) for s in sentences)
    return "".join(line + "\n" for line in lines)
