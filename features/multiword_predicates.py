"""Context predicates of a surface token whose expansion into words is ambiguous.

Some surface forms split into syntactic words only sometimes: Portuguese
``nos`` is ``em`` + ``os`` ("nos anos") or the pronoun ("ele nos disse"),
``da`` may be ``de`` + ``a`` or a form of ``dar``. The multiword-token
classifier (:mod:`egnlp.tagger.multiword`) decides per occurrence from these
predicates: the token's form, its casing and position, and the lower-cased
forms and suffixes of its neighbours at offsets -2..+2. Every predicate is
conjoined with the token's lower-cased form (``nos|w+1=anos``), so one
classifier serves every ambiguous form without their contexts mixing.
"""

from __future__ import annotations

from typing import Sequence

from egnlp.features.predicates import BOS, EOS

# Bumped whenever the predicates below change: a model records it and refuses another version.
TEMPLATE_VERSION = 1


def casing(form: str) -> str:
    """``upper`` (two or more letters, all capitals), ``title`` (first character a capital) or ``lower``."""
    if form.isupper() and sum(ch.isalpha() for ch in form) > 1:
        return "upper"
    return "title" if form[:1].isupper() else "lower"


def context_predicates(forms: Sequence[str], i: int) -> list[str]:
    """The predicates of token ``i`` of the surface tokens ``forms`` (one sentence), each conjoined
    with the token's lower-cased form."""
    low = forms[i].lower()
    out = ["bias", "case=" + casing(forms[i])]
    if i == 0:
        out.append("first")
    for offset in (-2, -1, 1, 2):
        j = i + offset
        if j < 0:
            word = BOS
        elif j >= len(forms):
            word = EOS
        else:
            word = forms[j].lower()
        out.append(f"w{offset:+d}={word}")
        if abs(offset) == 1 and word not in (BOS, EOS):
            out.append(f"s{offset:+d}={word[-2:]}")
            out.append(f"S{offset:+d}={word[-3:]}")
            out.append(f"c{offset:+d}={casing(forms[j])}")
    return [f"{low}|{p}" for p in out]
