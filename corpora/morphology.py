"""FEATS strings as UD writes them, and the joint morphological tag of a word.

A CoNLL-U FEATS value is ``_`` or ``Attr=Val|Attr=Val``: attribute names
match ``[A-Z][A-Za-z0-9]*`` (a layered one adds ``[layer]``), values
``[A-Z0-9][A-Za-z0-9]*``, several values of one attribute are joined by
``,``; the items are sorted by name case-insensitively, the values of an
item too, and no name or value repeats (the UD guidelines, checked by the
official validator at level 2). :func:`canonical_feats` sorts a value into
that order, :func:`feats_problem` says what is wrong with one.

The joint tag of a word (the tagger column ``morph``) is its UPOS, XPOS and
FEATS in one label, ``UPOS#XPOS#FEATS`` (UDPipe 1 and MorphoDiTa tag with such
a joint tag, Straka et al. 2016): one tagger then predicts the three columns
together, and they cannot disagree. UPOS and FEATS never hold ``#``, so an
XPOS that does still splits back (:func:`split_morph`).
"""

from __future__ import annotations

import re

MORPH_SEP = "#"
BLANK = "_"
_NAME = re.compile(r"[A-Z][A-Za-z0-9]*(\[[a-z0-9]+\])?\Z")
_VALUE = re.compile(r"[A-Z0-9][A-Za-z0-9]*\Z")


def feats_problem(feats: str) -> str | None:
    """What is wrong with a FEATS value by the UD rules (see the module docstring), None when it is valid."""
    if feats == BLANK:
        return None
    items = feats.split("|")
    names = []
    for item in items:
        name, eq, values = item.partition("=")
        if not eq or not _NAME.match(name):
            return f"feature {item!r} is not Name=Value"
        split = values.split(",")
        if not all(_VALUE.match(v) for v in split):
            return f"feature {item!r} has a value that is not letters and digits beginning with a capital or digit"
        if len(set(split)) != len(split) or [v.lower() for v in split] != sorted(v.lower() for v in split):
            return f"the values of feature {item!r} are repeated or not sorted"
        names.append(name)
    if len(set(names)) != len(names):
        return f"a feature name is repeated in {feats!r}"
    if [item.lower() for item in items] != sorted(item.lower() for item in items):
        return f"the features of {feats!r} are not sorted"
    return None


def canonical_feats(feats: str) -> str:
    """A FEATS value with its items and each item's values sorted case-insensitively (``_`` stays ``_``).

    Raises:
        ValueError: a value that is not valid once sorted (:func:`feats_problem`).
    """
    if feats == BLANK:
        return feats
    items = []
    for item in feats.split("|"):
        name, eq, values = item.partition("=")
        items.append(name + eq + ",".join(sorted(values.split(","), key=str.lower)) if eq else item)
    out = "|".join(sorted(items, key=str.lower))
    problem = feats_problem(out)
    if problem is not None:
        raise ValueError(problem)
    return out


def morph_label(upos: str, xpos: str, feats: str) -> str:
    """The joint tag of a word: ``UPOS#XPOS#FEATS``.

    Raises:
        ValueError: a UPOS or FEATS value holding the separator ``#``.
    """
    if MORPH_SEP in upos or MORPH_SEP in feats:
        raise ValueError(f"UPOS {upos!r} or FEATS {feats!r} holds {MORPH_SEP!r}, which joins the tags")
    return upos + MORPH_SEP + xpos + MORPH_SEP + feats


def split_morph(label: str) -> tuple[str, str, str]:
    """(UPOS, XPOS, FEATS) of a joint tag (:func:`morph_label`); an XPOS may hold ``#``.

    Raises:
        ValueError: a label without two separators.
    """
    upos, sep, rest = label.partition(MORPH_SEP)
    xpos, sep2, feats = rest.rpartition(MORPH_SEP)
    if not sep or not sep2:
        raise ValueError(f"{label!r} is not a joint tag UPOS{MORPH_SEP}XPOS{MORPH_SEP}FEATS")
    return upos, xpos, feats
