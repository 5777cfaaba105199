"""Tree spaces: which trees a parser may predict, and the inference each needs.

A tree space is a kind of tree (``projective``: no crossing arcs, Eisner's
algorithms; ``non-projective``: any arborescence, Chu-Liu-Edmonds and the
matrix-tree theorem) with a root constraint (``single``: one child of the
root; ``multi``: any number).  Every function takes arc scores ``(n + 1, n +
1)`` indexed ``[head, modifier]``, the root at 0, as :mod:`egnlp.parser.eisner`
and :mod:`egnlp.parser.nonprojective` do; the trainers see only the problem,
so the space is a property of the problem and of the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from egnlp.base.errors import registered
from egnlp.corpora.sentence import is_projective
from egnlp.parser.eisner import eisner_argmax, inside, inside_outside
from egnlp.parser.nonprojective import cle_argmax, mtt_log_partition, mtt_marginals

PROJECTIVE = "projective"
NON_PROJECTIVE = "non-projective"
AUTO = "auto"
TREES = (PROJECTIVE, NON_PROJECTIVE)
# :func:`choose_tree`'s ``auto`` picks the non-projective space when more than this share of training trees is
# non-projective (``parser train --tree auto`` measures instead: ``egnlp.parser_training.measure_tree``).
AUTO_NON_PROJECTIVE_SHARE = 0.01


@dataclass(frozen=True)
class TreeSpace:
    """The inference of one kind of tree: ``argmax(scores, root) -> heads (n+1,)``,
    ``log_partition(scores, root) -> log Z`` and ``marginals(scores, root) -> (log Z, mu)``."""

    name: str
    argmax: Callable
    log_partition: Callable
    marginals: Callable


_SPACES = {
    PROJECTIVE: TreeSpace(PROJECTIVE, eisner_argmax, inside, inside_outside),
    NON_PROJECTIVE: TreeSpace(NON_PROJECTIVE, cle_argmax, mtt_log_partition, mtt_marginals),
}


def tree_space(name: str) -> TreeSpace:
    """The tree space ``projective`` or ``non-projective``; ValueError otherwise."""
    return registered(_SPACES, name, lambda names: ValueError(f"tree must be one of {names}, not {name!r}"))


def choose_tree(heads_list: Sequence[Sequence[int]], tree: str = AUTO) -> str:
    """``tree`` itself, or for ``auto`` the space the training trees' shapes call for: non-projective when
    more than 1% of them are not projective (a rule of thumb for the benchmarks; ``parser train --tree auto``
    decodes held-out sentences both ways instead)."""
    if tree != AUTO:
        return tree_space(tree).name
    crossing = sum(not is_projective(heads) for heads in heads_list)
    return NON_PROJECTIVE if crossing > AUTO_NON_PROJECTIVE_SHARE * max(len(heads_list), 1) else PROJECTIVE


# A single-root treebank hangs a sentence's final punctuation on the root's one child (the main
# predicate): of the training trees that end in punctuation, es 99.4%, wsj 99.9%, nl-alpino 99.8%,
# pt-bosque 94.9% do so, with the punctuation a leaf (eu, several root children: 4.5%).  A first-order
# model scores that arc without knowing which word is the root's child; decoding in the space of trees
# that keep the convention (:func:`final_on_root_argmax`) raised the dev UAS of all four and their
# evaluation files' by 0.07 to 0.26 (docs/accuracy.md).  ``parser train`` decodes so when at least this
# share of its trees that end in punctuation do.
FINAL_ON_ROOT_SHARE = 0.9


def check_final_on_root(root: str, order: int) -> None:
    """ValueError unless a parser with this root constraint and model order (1, 2, 3) can decode final
    punctuation on the root's child: first order, single root."""
    if root != "single" or order != 1:
        raise ValueError("final punctuation on the root's child needs a first-order, single-root parser "
                         "(--root single --parts arcs)")


def final_on_root_share(heads_list: Sequence[Sequence[int]], final_punct: Sequence[bool]) -> float:
    """The share of the trees of two words or more whose last word is punctuation (``final_punct``) that
    hang it, as a leaf, on the root's one child (0.0 when there are none)."""
    ending, keeping = 0, 0
    for heads, punct in zip(heads_list, final_punct):
        if len(heads) < 2 or not punct:
            continue
        ending += 1
        keeping += keeps_final_on_root(heads)
    return keeping / ending if ending else 0.0


def keeps_final_on_root(heads: Sequence[int]) -> bool:
    """Whether the tree ``heads`` (words 1..n) has one root child and its last word is a leaf child of it."""
    n = len(heads)
    children_of_root = [m for m, h in enumerate(heads, start=1) if h == 0]
    return n >= 2 and len(children_of_root) == 1 and heads[-1] == children_of_root[0] and n not in heads


def final_on_root_argmax(argmax: Callable, scores: np.ndarray, root: str = "single") -> np.ndarray:
    """The best tree (heads, as ``argmax``'s) in which the last word n is a leaf child of the root's one
    child r, for a single-root space (``argmax``: a tree space's, whose trees stay in the space).

    A tree T of words 1..n-1 with root child r becomes one of 1..n by the arc r -> n, and every tree
    with the last word so placed comes from one T: its score is T's plus scores[r, n], so adding
    scores[r, n] to each root arc scores[0, r] and decoding words 1..n-1 is exact.  The arc r -> n
    crosses no arc of a projective T (such an arc would cross 0 -> r), so the projective space stays
    projective.
    """
    if root != "single":
        raise ValueError("the last word hangs on the root's one child in a single-root space only")
    if scores.shape[0] < 3:
        return argmax(scores, root=root)
    n = scores.shape[0] - 1
    inner = np.array(scores[:n, :n], dtype=np.float64)
    inner[0, 1:] += scores[1:n, n]
    heads = argmax(inner, root=root)
    out = np.empty(n + 1, dtype=heads.dtype)
    out[:n] = heads
    out[n] = np.argmin(heads[1:]) + 1  # the root's one child: the only word with head 0, the least head
    return out


def final_on_root_marginals(marginals: Callable, scores: np.ndarray, root: str = "single") -> np.ndarray:
    """The arc marginals (n+1, n+1) [head, modifier] over the trees of :func:`final_on_root_argmax`'s
    space (the last word n a leaf child of the root's one child), ``marginals`` a tree space's.

    As there, each such tree is a tree of words 1..n-1 whose root child r carries the arc r -> n, so the
    distribution over them is the inner space's under scores with scores[r, n] added to each root arc
    scores[0, r]: the inner marginals are those of the words 1..n-1, and p(head of n = r) is the
    inner marginal of the root arc 0 -> r.
    """
    if root != "single":
        raise ValueError("the last word hangs on the root's one child in a single-root space only")
    if scores.shape[0] < 3:
        return marginals(scores, root=root)[1]
    n = scores.shape[0] - 1
    inner = np.array(scores[:n, :n], dtype=np.float64)
    inner[0, 1:] += scores[1:n, n]
    inner_mu = marginals(inner, root=root)[1]
    out = np.zeros((n + 1, n + 1))
    out[:n, :n] = inner_mu
    out[1:n, n] = inner_mu[0, 1:]
    return out
