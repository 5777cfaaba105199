"""The text under a CoNLL-U file: its paragraphs rebuilt from the tokens, with every token's offsets.

A CoNLL-U file keeps the original text in its tokens: the FORM of each
surface token and, in MISC, ``SpaceAfter=No`` (nothing follows the token)
or ``SpacesAfter=...`` (the whitespace that follows it, escaped as UD
says: ``\\s`` space, ``\\t`` tab, ``\\n`` line feed, ``\\r`` carriage
return, ``\\p`` ``|``, ``\\\\`` backslash, ``\\uXXXX`` any character); a
token without either is followed by one space. A surface token is a word
line outside every multiword range, or a multiword line (``1-2``) itself:
its FORM and MISC stand for the words below it, which are not tokens
(:class:`egnlp.corpora.sentence.Sentence` keeps the ranges aside, with the
number of words before them).

A sentence's text is its tokens' FORMs joined by the whitespace after each
but the last; where the sentence has a ``# text`` comment, the two must be
equal. A paragraph is the sentences from one ``# newpar`` or ``# newdoc``
comment to the next (the whole file when it has none), joined by the
whitespace after each sentence's last token. :func:`paragraphs` gives them
with the character offsets of every token, which is what a tokenizer
learns from (:mod:`egnlp.tagger.tokenizer_model`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from egnlp.base.errors import CorpusError
from egnlp.corpora.sentence import BLANK, FORM, ID, Sentence

__all__ = ["Paragraph", "SurfaceToken", "paragraphs", "sentence_text", "surface_tokens", "unescape_spaces"]

_ESCAPES = {"s": " ", "t": "\t", "n": "\n", "r": "\r", "p": "|", "\\": "\\"}
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|.?)")
_NEW_PARAGRAPH = re.compile(r"#\s*new(?:par|doc)")  # also "# newdoc_id = ..." (pt_bosque)
_TEXT = re.compile(r"#\s*text\s*=\s?(.*)$")


@dataclass(frozen=True)
class SurfaceToken:
    """One surface token of a sentence: its FORM, the whitespace after it and its line in the file."""

    form: str
    space_after: str
    line: int


@dataclass(frozen=True)
class Paragraph:
    """A paragraph's text and the offsets of its tokens and sentences.

    ``tokens``: (start, end) of every token, ``text[start:end]`` its FORM;
    ``sentences``: (first, stop) token indices of every sentence, in order,
    covering the tokens; ``source`` and ``line``: where the paragraph's first
    sentence starts.
    """

    text: str
    tokens: tuple[tuple[int, int], ...]
    sentences: tuple[tuple[int, int], ...]
    source: str
    line: int


def unescape_spaces(value: str, where: str) -> str:
    """The whitespace a ``SpacesAfter`` value stands for (UD's escapes, see the module docstring).

    Raises:
        CorpusError: an unknown escape, or a value that is not whitespace once unescaped (``where``
            names the file and line).
    """

    def one(match: re.Match) -> str:
        code = match.group(1)
        if code.startswith("u") and len(code) == 5:
            return chr(int(code[1:], 16))
        if code not in _ESCAPES:
            raise CorpusError(f"{where}: unknown escape {match.group()!r} in SpacesAfter")
        return _ESCAPES[code]

    spaces = _ESCAPE.sub(one, value)
    if not spaces or not spaces.isspace() and spaces != "|":
        raise CorpusError(f"{where}: SpacesAfter={value} is not whitespace")
    return spaces


def _space_after(misc: str, where: str) -> str:
    """The whitespace after a token with the MISC column ``misc``."""
    if misc == BLANK:
        return " "
    space = " "
    for item in misc.split("|"):
        name, _, value = item.partition("=")
        if name == "SpacesAfter":
            return unescape_spaces(value, where)
        if name == "SpaceAfter" and value == "No":
            space = ""
    return space


def surface_tokens(sentence: Sentence) -> list[SurfaceToken]:
    """The surface tokens of a sentence in order: a multiword line stands for the words it covers.

    Raises:
        CorpusError: a token whose FORM is empty or ends in whitespace, or a bad ``SpacesAfter``.
    """
    out: list[SurfaceToken] = []
    covered = 0  # the last word of the latest multiword token
    for offset, line in enumerate(sentence.lines()):
        if line.startswith("#"):
            continue
        columns = line.split("\t")
        number = sentence.line + offset
        word_id = columns[ID]
        if "." in word_id:  # an empty node: no surface text
            continue
        if "-" in word_id:
            covered = int(word_id.split("-")[1])
        elif int(word_id) <= covered:
            continue
        where = f"{sentence.source}:{number}"
        form = columns[FORM]
        if not form or form[-1].isspace():
            raise CorpusError(f"{where}: FORM {form!r} is empty or ends in whitespace; it cannot be a token "
                              "of the text")
        out.append(SurfaceToken(form, _space_after(columns[-1] if len(columns) >= 10 else BLANK, where), number))
    return out


def _comment_text(sentence: Sentence) -> str | None:
    """The sentence's ``# text`` comment, or None."""
    for position, line in sentence.aside:
        if position == 0 and line.startswith("#"):
            match = _TEXT.match(line)
            if match is not None:
                return match.group(1)
    return None


def _new_paragraph(sentence: Sentence) -> bool:
    return any(position == 0 and _NEW_PARAGRAPH.match(line) for position, line in sentence.aside)


def _joined(tokens: Sequence[SurfaceToken]) -> str:
    """The tokens' FORMs joined by the whitespace after each but the last."""
    return "".join(t.form + t.space_after for t in tokens[:-1]) + tokens[-1].form


def sentence_text(sentence: Sentence) -> str:
    """The text of a sentence rebuilt from its tokens, checked against its ``# text`` comment if any.

    Raises:
        CorpusError: the rebuilt text differs from ``# text`` (naming the file, the line and the first
            character that differs), or :func:`surface_tokens` fails.
    """
    return _joined(_checked_tokens(sentence))


def _checked_tokens(sentence: Sentence) -> list[SurfaceToken]:
    """:func:`surface_tokens` after checking that they give the sentence's ``# text`` (:func:`sentence_text`)."""
    tokens = surface_tokens(sentence)
    text = _joined(tokens)
    given = _comment_text(sentence)
    if given is not None and given != text:
        k = next((k for k, (a, b) in enumerate(zip(text, given)) if a != b), min(len(text), len(given)))
        line = next((t.line for t, start in zip(tokens, _starts(tokens)) if start + len(t.form) > k),
                    sentence.line)
        raise CorpusError(f"{sentence.source}:{line}: the tokens and their SpaceAfter give "
                          f"{text[max(0, k - 20):k + 20]!r}, '# text' has {given[max(0, k - 20):k + 20]!r} "
                          f"(character {k + 1} differs)")
    return tokens


def _starts(tokens: Sequence[SurfaceToken]) -> list[int]:
    starts, at = [], 0
    for token in tokens:
        starts.append(at)
        at += len(token.form) + len(token.space_after)
    return starts


def paragraphs(sentences: Iterable[Sentence]) -> list[Paragraph]:
    """The paragraphs of a CoNLL-U corpus (see the module docstring), every sentence checked against its
    ``# text``.

    Raises:
        CorpusError: as :func:`sentence_text`.
    """
    out: list[Paragraph] = []
    pieces: list[str] = []
    spans: list[tuple[int, int]] = []
    bounds: list[tuple[int, int]] = []
    first: Sentence | None = None
    at = 0

    def close() -> None:
        if first is not None:
            text = "".join(pieces)
            out.append(Paragraph(text.rstrip(), tuple(spans), tuple(bounds), first.source, first.line))

    for sentence in sentences:
        if first is None or _new_paragraph(sentence):
            close()
            pieces, spans, bounds, first, at = [], [], [], sentence, 0
        tokens = _checked_tokens(sentence)
        bounds.append((len(spans), len(spans) + len(tokens)))
        for token in tokens:
            spans.append((at, at + len(token.form)))
            pieces.append(token.form)
            pieces.append(token.space_after)
            at += len(token.form) + len(token.space_after)
    close()
    return out
