"""Predicates of a word whose lemma the lemmatizer's classifier guesses (:mod:`egnlp.tagger.lemmatizer`).

A word the lemmatizer's dictionary does not hold gets its edit script from a
maximum-entropy classifier over these predicates: the suffixes (lengths 1 to
:data:`SUFFIXES`) and prefixes (1 to :data:`PREFIXES`) of the lower-cased
form, alone and conjoined with the UPOS; the UPOS, XPOS and FEATS the model
reads (FEATS whole and each ``Attr=Val``); and the form's shape (a capital
first, all capitals, digits, a hyphen, a short form). These are the
predicates of the guessers of Chrupała et al. (2008, Morfette) and of
MorphoDiTa (UDPipe 1), which also read the form's affixes and its tag.
"""

from __future__ import annotations

# Bumped whenever the predicates below change: a model records it and refuses another version.
TEMPLATE_VERSION = 1
SUFFIXES = 5
PREFIXES = 3
BLANK = "_"


def shape_predicates(form: str) -> list[str]:
    """The shape predicates of ``form``: ``cap`` (a capital first), ``allcaps`` (two or more letters, all
    capitals), ``digit`` (holds a digit), ``alldigit``, ``hyphen``, ``nonalpha`` (no letter), ``len=N``
    (N up to 3)."""
    out = []
    if form[:1].isupper():
        out.append("cap")
    if form.isupper() and sum(ch.isalpha() for ch in form) > 1:
        out.append("allcaps")
    if any(ch.isdigit() for ch in form):
        out.append("digit")
        if form.isdigit():
            out.append("alldigit")
    if "-" in form:
        out.append("hyphen")
    if not any(ch.isalpha() for ch in form):
        out.append("nonalpha")
    if len(form) <= 3:
        out.append(f"len={len(form)}")
    return out


def lemma_predicates(form: str, upos: str | None, xpos: str | None, feats: str | None) -> list[str]:
    """The predicates of one word: its form and the tag columns the model reads (None: not read; ``_``:
    read but blank)."""
    low = form.lower()
    out = ["bias", *shape_predicates(form)]
    tag = upos if upos is not None and upos != BLANK else ""
    for k in range(1, min(SUFFIXES, len(low)) + 1):
        out.append(f"s{k}={low[-k:]}")
        if tag:
            out.append(f"us{k}={tag}|{low[-k:]}")
    for k in range(1, min(PREFIXES, len(low) - 1) + 1):
        out.append(f"p{k}={low[:k]}")
    if upos is not None:
        out.append(f"u={upos}")
    if xpos is not None:
        out.append(f"x={xpos}")
    if feats is not None:
        out.append(f"f={feats}")
        if feats != BLANK:
            out.extend(f"a={pair}" for pair in feats.split("|"))
            if tag:
                out.append(f"uf={tag}|{feats}")
    return out
