"""Approximate non-projective decoding of the second- and third-order models by greedy rearrangement.

McDonald and Pereira (2006, Sec. 3.2, "Online learning of approximate dependency parsing
algorithms"): finding the best non-projective tree under sibling parts is NP-hard, so start from
the best *projective* tree of the second-order chart (:func:`~egnlp.parser.eisner_siblings.sibling_argmax`)
and, while some single change of one word's head raises the tree's score and leaves a tree,
make the change that raises it most.  The result is a local optimum: no single head change
improves it.  The same search applies to the third-order parts (sibling parts plus grandparent
parts, :mod:`egnlp.parser.eisner_grandparents`), started from the third-order chart's best tree.

Scores are those of the charts' parts: ``theta`` the sibling parts laid out by
:func:`~egnlp.parser.eisner_siblings.sibling_offsets` (each part already holds its arc's first-order
score), ``G`` (optional) the grandparent parts ``G[g, h, m]``.  A tree's score is the sum of the
sibling part of each word (:func:`~egnlp.parser.eisner_siblings.tree_parts`, which holds for any tree)
and of the grandparent part of each word whose head is a word
(:func:`~egnlp.parser.eisner_grandparents.grand_parts`).  The search keeps the root constraint (with
``"single"`` the root keeps its one child) and, with a cascade's mask ``keep``, moves a word only to
a kept head (:mod:`egnlp.parser.cascade`): the parts of the other arcs are not scored.

Each step tries every (word, new head) pair and rescores the tree, O(n) each: O(n^3) per step
without a mask, O(k n^2) with at most k kept heads per word.
"""

from __future__ import annotations

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from egnlp.features.kept_parts import KeptParts, grand_cells
from egnlp.parser.cascade import check_keep
from egnlp.parser.eisner_siblings import check_theta
from egnlp.parser.tree_checks import check_tree, float_scores, is_single_root

__all__ = ["rearrange", "tree_score"]


@numba.njit(cache=True, no_cpython_wrapper=True)
def _score(heads, theta, off, G, use_grand, last):
    """The score of the tree ``heads`` (n + 1,): its sibling parts in ``theta`` and, with ``use_grand``,
    its grandparent parts in ``G``.  ``last`` (n + 1,) int64 is work space.  Right modifiers are visited
    left to right and left ones right to left, so each meets its previous sibling last."""
    n1 = heads.shape[0]
    total = 0.0
    for h in range(n1):
        last[h] = h  # h's latest modifier on this side so far, h itself when none
    for m in range(1, n1):
        h = heads[m]
        if h < m:
            total += theta[off[h, m] + (last[h] - h)]
            last[h] = m
    for h in range(n1):
        last[h] = h
    for m in range(n1 - 1, 0, -1):
        h = heads[m]
        if h > m:
            total += theta[off[h, m] + (h - last[h])]
            last[h] = m
    if use_grand:
        for m in range(1, n1):
            h = heads[m]
            if h >= 1:
                total += G[heads[h], h, m]
    return total


@numba.njit(cache=True)
def _tree_score_kernel(heads, theta, off, G, use_grand):
    """:func:`_score` for Python."""
    return _score(heads, theta, off, G, use_grand, np.empty(heads.shape[0], dtype=np.int64))


@numba.njit(cache=True, no_cpython_wrapper=True)
def _descends(x, m, heads):
    """Whether x is m or below m in the tree ``heads`` (m an ancestor of x)."""
    while x > 0:
        if x == m:
            return True
        x = heads[x]
    return False


@numba.njit(cache=True)
def _rearrange_kernel(heads, theta, off, G, use_grand, single, keep):
    """(score, heads, steps): the greedy search from the tree ``heads`` (see the module docstring).

    heads: (n + 1,) int64, a tree in the space; theta, off: sibling parts and their layout; G: (size,
    size, size) grandparent parts, read with ``use_grand`` only; single: the root keeps one child;
    keep: (size, size) uint8, the arcs a word may move to.  Each step takes the change with the largest
    gain, the first (smallest word, then smallest head) among equal gains; a change is made only when
    it raises the score, so the search stops."""
    n1 = heads.shape[0]
    out = heads.copy()
    last = np.empty(n1, dtype=np.int64)
    best = _score(out, theta, off, G, use_grand, last)
    steps = 0
    while True:
        gain, bm, bh = 0.0, -1, -1
        for m in range(1, n1):
            old = out[m]
            if single and old == 0:
                continue  # the root's one child stays
            for h in range(n1):
                if h == m or h == old or keep[h, m] == 0:
                    continue
                if single and h == 0:
                    continue  # a second root child
                if _descends(h, m, out):
                    continue  # a cycle
                out[m] = h
                v = _score(out, theta, off, G, use_grand, last) - best
                out[m] = old
                if v > gain:
                    gain, bm, bh = v, m, h
        if bm < 0:
            return best, out, steps
        out[bm] = bh
        best = _score(out, theta, off, G, use_grand, last)
        steps += 1


def _inputs(heads: ArrayLike, theta: ArrayLike, G: ArrayLike | None, parts: KeptParts | None = None) -> tuple:
    """(heads, theta, off, G, use_grand) validated for the kernels; ``parts``: theta and G in that pruned
    layout (:mod:`egnlp.features.kept_parts`), G then spread over the (size, size, size) cells."""
    arr = check_tree(heads)
    size = arr.shape[0]
    theta_arr, off = check_theta(theta, size, parts)
    if G is None:
        return arr, theta_arr, off, np.zeros((1, 1, 1)), False
    if parts is not None:
        slots = float_scores(np.asarray(G), "G")
        if slots.shape != (parts.n_grand,):
            raise ValueError(f"G must have the layout's ({parts.n_grand},) slots, got shape {slots.shape}")
        cube = np.zeros((size, size, size))
        cube[grand_cells(parts)] = slots
        return arr, theta_arr, off, cube, True
    grand = np.asarray(G)
    if grand.shape != (size, size, size):
        raise ValueError(f"G must have shape ({size}, {size}, {size}) for a tree of {size - 1} words, "
                         f"got {grand.shape}")
    return arr, theta_arr, off, float_scores(grand, "G"), True


def tree_score(heads: ArrayLike, theta: ArrayLike, G: ArrayLike | None = None) -> float:
    """The score of any tree ``heads`` ((n + 1,), heads[0] = -1, projective or not) under sibling parts
    ``theta`` ((n_sibling_parts(n + 1),)) and, when given, grandparent parts ``G`` ((n + 1,) * 3): the sum
    of ``theta`` over :func:`~egnlp.parser.eisner_siblings.tree_parts` and of ``G`` over
    :func:`~egnlp.parser.eisner_grandparents.grand_parts` (McDonald and Pereira 2006; Koo and Collins 2010)."""
    return float(_tree_score_kernel(*_inputs(heads, theta, G)))


def rearrange(heads: ArrayLike, theta: ArrayLike, G: ArrayLike | None = None, root: str = "multi",
              keep: ArrayLike | None = None, parts: KeptParts | None = None) -> tuple[NDArray[np.int64], float, int]:
    """The non-projective approximation of McDonald and Pereira (2006, Sec. 3.2): from the tree ``heads``
    (usually the projective argmax of the same parts), greedily make the single head change that raises
    :func:`tree_score` most until none raises it.

    Args:
        heads: (n + 1,) a tree in the space (with ``root="single"``: one root child).
        theta: (n_sibling_parts(n + 1),) sibling-part scores (arc scores included).
        G: (n + 1, n + 1, n + 1) grandparent-part scores G[g, h, m], or None (second order).
        root: "multi" or "single" (the root's one child stays its one child).
        keep: (n + 1, n + 1) [head, modifier], nonzero on the arcs a word may move to (None: every arc);
            arcs of ``heads`` outside it are kept as they are.
        parts: instead of ``keep``, a pruned layout (:mod:`egnlp.features.kept_parts`): its kept arcs, theta
            and G holding their parts only (``parts.n_sib`` and ``parts.n_grand`` entries); ``heads`` must
            then use kept arcs only.

    Returns:
        (heads, score, steps): the rearranged tree ((n + 1,) int64), its score (at least that of the
        tree given) and the number of changes made.
    """
    single = is_single_root(root)
    arr, theta_arr, off, grand, use_grand = _inputs(heads, theta, G, parts)
    if single and int((arr[1:] == 0).sum()) != 1:
        raise ValueError("heads must have one root child with root='single'")
    if parts is not None:
        if keep is not None:
            raise ValueError("give the kept arcs as keep or as a layout, not both")
        if not parts.keep[arr[1:], np.arange(1, arr.shape[0])].all():
            raise ValueError("heads use an arc the layout does not keep")
        keep_arr = parts.keep
    else:
        keep_arr = check_keep(keep, arr.shape[0])[0]
    score, out, steps = _rearrange_kernel(arr, theta_arr, off, grand, use_grand, single, keep_arr)
    return out, float(score), int(steps)
