"""Observation predicates of a token in its sentence: the features of the CRF and maxent taggers.

The predicates follow Ratnaparkhi (1996) and the standard CRF tagging
features (as in CRFsuite's examples): the word and its lower-cased form,
prefixes and suffixes up to 4 characters, a word shape, digit / hyphen /
capital flags, and the words at offsets -2..+2.  For chunking (``use_pos``),
also the POS tags at -2..+2 and the POS bigrams around the token.  Each
predicate is a string ``"name=value"``; models conjoin them with a label
(CRF) or use them as context predicates of a local classifier (maxent).
Predicates read only the input columns (forms and, for chunking, POS), never
the label being predicted.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

BOS = "<s>"
EOS = "</s>"


def word_shape(word: str) -> str:
    """Character classes with runs collapsed: ``"McDonald's"`` -> ``"XxXx'x"``, ``"1984"`` -> ``"d"``."""
    out = []
    for ch in word:
        if ch.isupper():
            c = "X"
        elif ch.islower():
            c = "x"
        elif ch.isdigit():
            c = "d"
        else:
            c = ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


@lru_cache(maxsize=1 << 16)
def _form_predicates(form: str) -> tuple[tuple[str, ...], bool, tuple[str, ...]]:
    """The predicates of a token that read its form alone, in :func:`token_predicates`' order: those
    before the capital-letter one, whether the form starts with a capital, and those after it.
    Kept for the most recent forms: a corpus repeats its frequent words, and building these strings
    was most of the cost of tagging a file."""
    low = form.lower()
    before = ["bias", "w=" + form, "lw=" + low, "shape=" + word_shape(form)]
    for k in range(1, min(4, len(form)) + 1):
        before.append(f"p{k}=" + form[:k])
        before.append(f"s{k}=" + low[-k:])
    if any(ch.isdigit() for ch in form):
        before.append("has_digit")
    if "-" in form:
        before.append("has_hyphen")
    after = ("all_caps",) if form.isupper() and any(ch.isalpha() for ch in form) else ()
    return tuple(before), form[:1].isupper(), after


def token_predicates(forms: Sequence[str], pos: Sequence[str] | None = None,
                     use_pos: bool = False) -> list[list[str]]:
    """The predicates of every token of one sentence (a list per token, bias first)."""
    n = len(forms)
    if use_pos and (pos is None or len(pos) != n):
        raise ValueError("POS predicates need one POS tag per token")
    lower = [f.lower() for f in forms]

    def word_at(i: int) -> str:
        return lower[i] if 0 <= i < n else (BOS if i < 0 else EOS)

    def pos_at(i: int) -> str:
        return pos[i] if 0 <= i < n else (BOS if i < 0 else EOS)

    out: list[list[str]] = []
    for i, form in enumerate(forms):
        low = lower[i]
        before, capital, after = _form_predicates(form)
        preds = list(before)
        if capital:
            preds.append("init_cap" if i > 0 else "init_cap_first")
        preds.extend(after)
        for off in (-2, -1, 1, 2):
            preds.append(f"w[{off}]=" + word_at(i + off))
        preds.append("w[-1]|w[0]=" + word_at(i - 1) + "|" + low)
        preds.append("w[0]|w[1]=" + low + "|" + word_at(i + 1))
        if use_pos:
            for off in (-2, -1, 0, 1, 2):
                preds.append(f"t[{off}]=" + pos_at(i + off))
            for off in (-2, -1, 0, 1):
                preds.append(f"t[{off}]|t[{off + 1}]=" + pos_at(i + off) + "|" + pos_at(i + off + 1))
        out.append(preds)
    return out
