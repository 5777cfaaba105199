"""Raw text -> sentences -> tokens, without downloaded data.

Tokens follow the Penn Treebank conventions of the training corpora
(conll2000 and the WSJ are Treebank-tokenised): NLTK's
``TreebankWordTokenizer`` is a set of regular expressions and needs no data
package (unlike ``nltk.word_tokenize``, which loads the punkt model).  Its
quote handling turns ``"`` into ``` `` ``` and ``''``, as in the corpora.

Sentences are split by a small rule: after ``.``, ``!`` or ``?`` (possibly
followed by closing quotes or brackets) when whitespace and then an
upper-case letter, a digit, an opening quote or bracket follow, except
after common abbreviations (Mr., Dr., U.S., e.g., ...) and single-letter
initials (J. Smith).  Line breaks with a blank line between them always end
a sentence.

A sentence of more than :data:`~egnlp.corpora.sentence.MAX_WORDS` tokens is
cut at whitespace (at a character, in a run without any) into pieces of at
most that many, since parsing takes memory in the square of the length.
Text holding a lone surrogate (a ``str`` that is not Unicode text, e.g.
bytes decoded with ``surrogateescape``) raises ValueError.
"""

from __future__ import annotations

import re

from nltk.tokenize.treebank import TreebankWordTokenizer

from egnlp.corpora.sentence import MAX_WORDS

__all__ = ["split_sentences", "tokenize", "sentences_and_tokens"]

_TOKENIZER = TreebankWordTokenizer()

# Lower-cased, without the final period.  Multi-period forms (u.s, e.g) are
# matched on the whole word before the period.
ABBREVIATIONS = frozenset("""
mr mrs ms dr prof sr jr st mt ft gen col lt sgt capt cmdr adm gov sen rep rev hon pres supt
co corp inc ltd bros dept univ assn
jan feb mar apr jun jul aug sep sept oct nov dec
mon tue tues wed thu thurs fri sat sun
no vol pp fig figs ch sec art ed eds est approx vs etc cf al
u.s u.k u.n u.s.a e.g i.e a.m p.m n.y d.c l.a ph.d b.a m.a
""".split())

# Candidate boundary: sentence-final punctuation, optional closing quotes /
# brackets, whitespace, then what may start a sentence.
_BOUNDARY = re.compile(r"""([.!?]+)(["'\u201d\u2019)\]]*)(\s+)(?=["'\u201c\u2018(\[`]*[A-Z0-9"'\u201c\u2018`(\[])""")
_PARAGRAPH = re.compile(r"\n\s*\n")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_WORD = re.compile(r"\S+")


def _is_abbreviation(text: str, end: int) -> bool:
    """True if the period at text[end] closes an abbreviation or an initial."""
    start = end
    while start > 0 and not text[start - 1].isspace() and text[start - 1] not in "\"'(\u201c[":
        start -= 1
    word = text[start:end]
    if len(word) == 1 and word.isalpha() and word.isupper():
        return True  # an initial: J. Smith
    return word.lower() in ABBREVIATIONS


def _bounded(piece: str) -> list[str]:
    """``piece`` cut into pieces of at most MAX_WORDS tokens: at whitespace, first into runs of MAX_WORDS / 2
    words (a word gives at least one token), then into halves while a piece still has too many tokens."""
    if len(piece) <= MAX_WORDS:  # a token has at least one character
        return [piece]
    words = [match.span() for match in _WORD.finditer(piece)]
    if len(words) > MAX_WORDS:
        step = MAX_WORDS // 2
        return [part for k in range(0, len(words), step)
                for part in _bounded(piece[words[k][0]:words[min(k + step, len(words)) - 1][1]])]
    if len(tokenize(piece)) <= MAX_WORDS:
        return [piece]
    middle = words[len(words) // 2][0] if len(words) > 1 else len(piece) // 2
    return [part for half in (piece[:middle].strip(), piece[middle:].strip()) if half for part in _bounded(half)]


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order, stripped; empty pieces are dropped, long ones cut (module docstring).

    Raises:
        ValueError: ``text`` holds a lone surrogate.
    """
    bad = _SURROGATE.search(text)
    if bad is not None:
        raise ValueError(f"text holds a lone surrogate U+{ord(bad.group()):04X} (character {bad.start() + 1}), "
                         "which is not Unicode text")
    out: list[str] = []
    for para in _PARAGRAPH.split(text):
        begin = 0
        for m in _BOUNDARY.finditer(para):
            punct = m.group(1)
            if punct == "." and _is_abbreviation(para, m.start(1)):
                continue
            cut = m.end(2)
            piece = para[begin:cut].strip()
            if piece:
                out.extend(_bounded(piece))
            begin = m.end(3)
        piece = para[begin:].strip()
        if piece:
            out.extend(_bounded(piece))
    return out


def tokenize(sentence: str) -> list[str]:
    """Penn Treebank tokens of one sentence."""
    return _TOKENIZER.tokenize(sentence)


def sentences_and_tokens(text: str) -> list[list[str]]:
    """Split ``text`` into sentences and each sentence into tokens (empty sentences dropped)."""
    return [toks for toks in (tokenize(s) for s in split_sentences(text)) if toks]
