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

from egnlp.corpora.sentence import is_projective
from egnlp.parser.eisner import eisner_argmax, inside, inside_outside
from egnlp.parser.nonprojective import cle_argmax, mtt_log_partition, mtt_marginals

PROJECTIVE = "projective"
NON_PROJECTIVE = "non-projective"
AUTO = "auto"
TREES = (PROJECTIVE, NON_PROJECTIVE)
ROOTS = ("single", "multi")
# ``auto`` picks the non-projective space when more than this share of training trees is non-projective.
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
    try:
        return _SPACES[name]
    except KeyError:
        raise ValueError(f"tree must be one of {', '.join(TREES)}, not {name!r}") from None


def check_root(root: str) -> str:
    """``root`` if it is ``single`` or ``multi``; ValueError otherwise."""
    if root not in ROOTS:
        raise ValueError(f"root must be 'single' or 'multi', not {root!r}")
    return root


def choose_tree(heads_list: Sequence[Sequence[int]], tree: str = AUTO) -> str:
    """``tree`` itself, or for ``auto`` the space the training trees call for: non-projective when
    more than 1% of them are not projective."""
    if tree != AUTO:
        return tree_space(tree).name
    crossing = sum(not is_projective(heads) for heads in heads_list)
    return NON_PROJECTIVE if crossing > AUTO_NON_PROJECTIVE_SHARE * max(len(heads_list), 1) else PROJECTIVE
